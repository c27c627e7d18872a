"""`restore BACKUP`: verified, the current file kept aside with its -wal, atomic, asks on a terminal."""

from __future__ import annotations

import shutil
import sqlite3

from damage import build_healthy, cli, cli_json, raw
from page_damage import damage, listing, rows, sha256
from schema_fixtures import load_fixture

from hermes_state_tools.cli import maintenance as maintenance_cli

MESSAGES = "SELECT id, content FROM messages ORDER BY id"


def _two(tmp_path):
    db = build_healthy(tmp_path / "state.db")
    backup = tmp_path / "backup.db"
    assert cli("--db", db, "backup", backup).exit_code == 0
    raw(db, "DELETE FROM messages WHERE id = 1")
    return db, backup


def test_restore_puts_the_backup_in_place_and_keeps_the_current_file_with_its_wals_commits(tmp_path):
    db, backup = _two(tmp_path)
    writer = sqlite3.connect(db, isolation_level=None)  # leave committed rows in a -wal
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("UPDATE sessions SET title = 'only in the wal' WHERE id = 'alpha'")
    shutil.copyfile(f"{db}-wal", tmp_path / "saved-wal")
    writer.close()  # (a clean close checkpoints; put the WAL back as a crash would leave it)
    shutil.copyfile(tmp_path / "saved-wal", f"{db}-wal")
    current = rows(db, MESSAGES)
    code, doc = cli_json("--db", db, "restore", backup, "--yes")
    assert code == 0 and doc["previous"]
    assert rows(db, MESSAGES) == rows(backup, MESSAGES)
    kept = tmp_path / doc["previous"].rsplit("/", 1)[-1]
    # the WAL was folded into the old file before the swap: the kept copy holds its commits, alone
    assert not (tmp_path / (kept.name + "-wal")).exists() and rows(kept, MESSAGES) == current
    with sqlite3.connect(kept) as conn:
        assert conn.execute("SELECT title FROM sessions WHERE id = 'alpha'").fetchone() == ("only in the wal",)
    conn.close()
    assert not (tmp_path / "state.db-wal").exists()
    assert cli("--db", db, "check").exit_code == 0


def test_the_restored_store_is_in_wal_mode_as_hermes_keeps_it(tmp_path):
    """A backup is a file on its own (a rollback journal); in the store's place it is in WAL mode, so
    that `status` says so and `browse` reads it as a live file, not an unchanging copy."""
    db, backup = _two(tmp_path)
    assert backup.read_bytes()[18] == 1
    assert cli("--db", db, "restore", backup, "--yes").exit_code == 0
    assert db.read_bytes()[18] == 2 and not (tmp_path / "state.db-wal").exists()
    assert cli_json("--db", db, "status")[1]["journal_mode"] == "wal"


def test_restore_without_a_terminal_needs_yes(tmp_path):
    db, backup = _two(tmp_path)
    before = listing(tmp_path), sha256(db)
    result = cli("--db", db, "restore", backup)
    assert result.exit_code == 2 and "--yes" in result.stderr
    assert (listing(tmp_path), sha256(db)) == before


def test_restore_asks_on_a_terminal(tmp_path, monkeypatch):
    db, backup = _two(tmp_path)
    monkeypatch.setattr(maintenance_cli, "stdin_is_terminal", lambda: True)
    before = sha256(db)
    assert cli("--db", db, "restore", backup, input="n\n").exit_code == 1 and sha256(db) == before
    assert cli("--db", db, "restore", backup, input="y\n").exit_code == 0
    assert rows(db, MESSAGES) == rows(backup, MESSAGES)


def test_a_damaged_or_newer_backup_is_refused_and_nothing_changes(tmp_path):
    db, backup = _two(tmp_path)
    damage(backup, "messages")
    newer = load_fixture("trap_version_31", tmp_path)
    before = listing(tmp_path), sha256(db)
    assert cli("--db", db, "restore", backup, "--yes").exit_code == 65
    assert cli("--db", db, "restore", newer, "--yes").exit_code == 3
    assert (listing(tmp_path), sha256(db)) == before


def test_restore_onto_a_file_a_newer_hermes_wrote_is_exit_3_and_changes_nothing(tmp_path):
    _db, backup = _two(tmp_path)
    newer = load_fixture("trap_version_31", tmp_path)
    before = listing(tmp_path), sha256(newer)
    result = cli("--db", newer, "restore", backup, "--yes")
    assert result.exit_code == 3 and "newer" in result.output
    assert (listing(tmp_path), sha256(newer)) == before


def test_restore_onto_a_damaged_database_keeps_the_damaged_file(tmp_path):
    db, backup = _two(tmp_path)
    damage(db, "messages")
    damaged = sha256(db)
    code, doc = cli_json("--db", db, "restore", backup, "--yes")
    assert code == 0 and sha256(tmp_path / doc["previous"].rsplit("/", 1)[-1]) == damaged
    assert cli("--db", db, "check").exit_code == 0


def test_restore_keeps_a_hot_journal_with_the_file_it_belongs_to(tmp_path):
    """A rollback-journal writer died mid-transaction (an old Hermes, a sqlite3 shell): its -journal goes
    aside with the old file, never left to be rolled back onto the restored one."""
    import subprocess
    import sys

    db, backup = _two(tmp_path)
    raw(db, "PRAGMA journal_mode=DELETE")
    subprocess.run([sys.executable, "-c", (
        "import os, sqlite3\n"
        f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA cache_size=2'); c.execute('BEGIN')\n"
        "c.execute(\"UPDATE messages SET content = 'x' || content\")\n"
        "os._exit(0)")], check=True)
    assert (tmp_path / "state.db-journal").stat().st_size > 0
    code, doc = cli_json("--db", db, "restore", backup, "--yes")
    assert code == 0
    kept = tmp_path / doc["previous"].rsplit("/", 1)[-1]
    assert not (tmp_path / "state.db-journal").exists() and (tmp_path / (kept.name + "-journal")).exists()
    assert rows(db, MESSAGES) == rows(backup, MESSAGES)  # what Hermes opens next: the backup, whole
    assert cli("--db", db, "check").exit_code == 0
    assert all(not c.startswith("x") for (c,) in rows(kept, "SELECT content FROM messages"))  # rolled back


def test_restore_needs_a_database_to_replace_and_never_creates_one(tmp_path):
    # cli.md: every command but import-jsonl exits 2 on a missing, empty or foreign file and never
    # creates one; restore created the file, or replaced a foreign one, and exit 0.
    _db, backup = _two(tmp_path)
    foreign = tmp_path / "notes.db"
    raw(foreign, "CREATE TABLE notes (body TEXT)")
    (tmp_path / "empty.db").write_bytes(b"")
    (tmp_path / "text.db").write_text("not a database\n")
    for target in ("missing.db", "empty.db", "text.db", "notes.db"):
        before = listing(tmp_path), {p.name: sha256(p) for p in tmp_path.iterdir() if p.is_file()}
        result = cli("--db", tmp_path / target, "restore", backup, "--yes")
        assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, (target, result.stderr)
        assert (listing(tmp_path), {p.name: sha256(p) for p in tmp_path.iterdir() if p.is_file()}) == before
    assert "backup" in cli("--db", tmp_path / "missing.db", "restore", backup, "--yes").stderr
