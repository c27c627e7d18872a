"""Damaged files, on real files with real destroyed pages: `check` reports to the end, nothing writes
into damage (65, bytes unchanged), `repair` rebuilds around derived damage, `recover` salvages."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from damage import cli, cli_json, raw
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from page_damage import (
    CANONICAL_KINDS,
    DERIVED_KINDS,
    KINDS,
    PAGE_KINDS,
    btree_pages,
    build_db,
    damage,
    destroy_btree,
    listing,
    rows,
    sha256,
)

from hermes_state_tools.errors import DAMAGED_REFUSAL
from hermes_state_tools.maintenance import page_scan
from hermes_state_tools.maintenance.checks import check_file

LEGACY_JSONL = Path(__file__).resolve().parent.parent / "fixtures" / "legacy" / "jsonl"
ALL_MESSAGES = "SELECT id, session_id, role, content, timestamp FROM messages ORDER BY id"
ALL_SESSIONS = "SELECT id, source, started_at, title, system_prompt FROM sessions ORDER BY id"

WRITING = {
    "import-jsonl": ["import-jsonl", str(LEGACY_JSONL)],
    "upgrade": ["upgrade"],
    "vacuum": ["vacuum"],
    "prune": ["prune", "--older-than", "0", "--yes"],
    "rebuild-fts": ["rebuild-fts"],
    "maintain": ["maintain"],
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_db(tmp_path_factory.mktemp("pristine") / "state.db")


def damaged_copy(pristine: Path, tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    damage(path, kind)
    return path


def edited_copy(pristine: Path, tmp_path: Path, *statements: str, params: tuple[object, ...] = ()) -> Path:
    """A copy of the pristine store with `statements` run in one transaction and checkpointed into it."""
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    conn = sqlite3.connect(path)
    with conn:
        for statement in statements:
            conn.execute(statement, params if "?" in statement else ())
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def expected_object(kind: str) -> str:
    return "messages_fts" if kind == "dup_master" else kind


@pytest.mark.parametrize("kind", KINDS)
def test_check_names_the_damaged_object_and_runs_to_the_end(pristine, tmp_path, kind):
    path = damaged_copy(pristine, tmp_path, kind)
    before, files = sha256(path), listing(tmp_path)
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and doc["ok"] is False and doc["damaged"] is True
    integrity = [p for p in doc["problems"] if p["kind"] == "integrity"]
    assert [(p["object"], p["data"]) for p in integrity] == [
        (expected_object(kind), PAGE_KINDS.get(kind, "derived"))]
    assert expected_object(kind) in integrity[0]["detail"]
    assert all(s["reason"] for s in doc["skipped"])  # what could not run says why
    assert sha256(path) == before and listing(tmp_path) == files  # nothing written, nothing left beside


@pytest.mark.parametrize("kind", KINDS)
def test_check_human_output_lists_the_damage_and_the_advice(pristine, tmp_path, kind):
    path = damaged_copy(pristine, tmp_path, kind)
    result = cli("--db", path, "check")
    assert result.exit_code == 1 and "integrity:" in result.stdout and "recover" in result.stdout
    assert result.stderr == ""


@pytest.mark.parametrize("command", sorted(WRITING))
@pytest.mark.parametrize("kind", KINDS)
def test_every_writing_command_refuses_damage_with_65_and_writes_nothing(pristine, tmp_path, kind, command):
    path = damaged_copy(pristine, tmp_path, kind)
    before, files = sha256(path), listing(tmp_path)
    result = cli("--db", path, *WRITING[command], "--no-progress", "--json")
    assert result.exit_code == 65, result.stderr
    assert len(result.stderr.splitlines()) == 1 and DAMAGED_REFUSAL in result.stderr
    assert sha256(path) == before and listing(tmp_path) == files


@pytest.mark.parametrize("command", ["import-jsonl", "upgrade", "prune", "merge"])
def test_a_dry_run_refuses_damage_as_the_real_run_does(pristine, tmp_path, command):
    # import-jsonl --dry-run said "would create 6 sessions" (exit 1) where the real run exits 65.
    path = damaged_copy(pristine, tmp_path, "messages")
    before, files = sha256(path), listing(tmp_path)
    args = ["merge", pristine] if command == "merge" else WRITING[command]
    result = cli("--db", path, *args, "--dry-run", "--no-progress", "--json")
    assert result.exit_code == 65, result.stderr
    assert sha256(path) == before and listing(tmp_path) == files


@pytest.mark.parametrize("kind", CANONICAL_KINDS)
def test_repair_refuses_canonical_damage(pristine, tmp_path, kind):
    path = damaged_copy(pristine, tmp_path, kind)
    before, files = sha256(path), listing(tmp_path)
    for args in (["repair"], ["repair", "--dry-run"]):
        result = cli("--db", path, *args, "--json")
        assert result.exit_code == 65 and "recover" in result.stderr and kind in result.stderr
    assert sha256(path) == before and listing(tmp_path) == files


def test_maintain_json_reports_the_damage_and_exits_65(pristine, tmp_path):
    path = damaged_copy(pristine, tmp_path, "messages")
    code, doc = cli_json("--db", path, "maintain", "--no-progress")
    assert code == 65 and doc["damaged"] and not doc["ok"]
    assert "damaged" in doc["error"] and "recover" in doc["error"]  # what every --json failure holds
    assert [p["object"] for p in doc["check"]["problems"] if p["kind"] == "integrity"] == ["messages"]


@pytest.mark.parametrize("kind", DERIVED_KINDS)
def test_repair_rebuilds_derived_damage_without_touching_a_canonical_row(pristine, tmp_path, kind):
    path = damaged_copy(pristine, tmp_path, kind)
    damaged_sha = sha256(path)
    code, doc = cli_json("--db", path, "repair")
    assert code == 0 and doc["ok"] and doc["unfixed"] == []
    assert [c["action"] for c in doc["changes"]] == ["rebuilt_file"]
    assert rows(path, ALL_MESSAGES) == rows(pristine, ALL_MESSAGES)
    assert rows(path, ALL_SESSIONS) == rows(pristine, ALL_SESSIONS)
    assert check_file(path) == []
    assert cli_json("--db", path, "check")[0] == 0
    kept = Path(doc["backup"])
    assert kept.parent == tmp_path and sha256(kept) == damaged_sha  # the original, byte for byte
    hits = cli_json("--db", path, "search", "kappa", "--limit", "5")[1]["results"]
    assert len(hits) == 5


def test_repair_never_swaps_away_what_a_writer_committed_while_it_rebuilt(pristine, tmp_path, monkeypatch):
    # A short-lived writer that opened, committed and closed between repair's two looks for other
    # processes left its commit only in the .pre-repair file.
    from hermes_state_tools.maintenance import recover

    path = damaged_copy(pristine, tmp_path, "idx_messages_session")
    to_wal = recover.to_wal

    def writer_meanwhile(tmp: Path) -> None:
        to_wal(tmp)
        subprocess.run([sys.executable, "-c", "import sqlite3, sys\n"
                        "c = sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE sessions SET title = 'meanwhile' "
                        "WHERE id = (SELECT MIN(id) FROM sessions)\"); c.commit(); c.close()", str(path)], check=True)

    monkeypatch.setattr(recover, "to_wal", writer_meanwhile)
    result = cli("--db", path, "repair", "--no-progress")
    assert result.exit_code == 75 and "re-run repair" in result.stderr
    assert rows(path, "SELECT title FROM sessions WHERE title = 'meanwhile'") == [("meanwhile",)]
    assert listing(tmp_path) == ["state.db"]


@pytest.mark.parametrize("kind", KINDS)
def test_recover_salvages_into_a_clean_file_and_never_touches_the_source(pristine, tmp_path, kind):
    path = damaged_copy(pristine, tmp_path, kind)
    before, files = sha256(path), listing(tmp_path)
    dest = tmp_path / "out" / "recovered.db"
    dest.parent.mkdir()  # recover, like backup, refuses a missing folder
    code, doc = cli_json("--db", path, "recover", dest)
    assert sha256(path) == before and listing(tmp_path) == sorted([*files, "out"])
    assert listing(dest.parent) == ["recovered.db"]
    assert code == (0 if doc["complete"] else 1)
    original = {r[0]: r for r in rows(pristine, ALL_MESSAGES)}
    back = rows(dest, ALL_MESSAGES)
    assert len(back) == doc["messages_recovered"] >= 0.95 * len(original)
    assert all(original[r[0]] == r for r in back)  # every message that came back is the original
    lost = {i for a, b in doc["messages_lost_ranges"] for i in range(a, b + 1)}
    assert lost == set(original) - {r[0] for r in back}
    assert check_file(dest) == []


def test_recover_keeps_messages_of_a_lost_session_under_a_placeholder(pristine, tmp_path):
    path = damaged_copy(pristine, tmp_path, "sessions")
    dest = tmp_path / "recovered.db"
    code, doc = cli_json("--db", path, "recover", dest)
    assert code == 1 and doc["placeholder_sessions"] and doc["messages_lost"] == 0
    placeholders = rows(dest, "SELECT id, source, end_reason FROM sessions WHERE end_reason = 'recovered'")
    assert {p[0] for p in placeholders} == set(doc["placeholder_sessions"])
    real_sources = dict(rows(pristine, "SELECT id, source FROM sessions"))
    assert all(source == real_sources[sid] for sid, source, _ in placeholders)  # from the surviving index
    assert rows(dest, ALL_MESSAGES) == rows(pristine, ALL_MESSAGES)
    assert check_file(dest) == []


@pytest.mark.parametrize("kind", ["sessions", "messages"])
def test_recovered_counters_count_the_tool_calls_that_came_back(pristine, tmp_path, kind):
    """A lost page of messages takes tool calls with it, a lost sessions page the counters: DEST's
    tool_call_count is recounted with message_count (it kept the stale one, or 0 for a placeholder,
    and `check` on DEST found counter_mismatch)."""
    path = edited_copy(pristine, tmp_path,
                       """UPDATE messages SET tool_calls = '[{"id": "c", "function": {"name": "t"}}]'
                          WHERE role = 'assistant'""",
                       "UPDATE sessions SET tool_call_count = (SELECT COUNT(*) FROM messages m "
                       "WHERE m.session_id = sessions.id AND m.role = 'assistant')")
    damage(path, kind)
    dest = tmp_path / "recovered.db"
    assert cli_json("--db", path, "recover", dest)[0] in (0, 1)
    assert check_file(dest) == []


def test_rows_under_a_destroyed_interior_page_come_back_from_the_leaves(pristine, tmp_path):
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    destroy_btree(path, "messages", which="interior")
    dest = tmp_path / "recovered.db"
    code, doc = cli_json("--db", path, "recover", dest)
    assert code == 0 and doc["complete"] and doc["rows_from_page_scan"] > 0 and doc["messages_lost"] == 0
    assert rows(dest, ALL_MESSAGES) == rows(pristine, ALL_MESSAGES)


def test_recover_refuses_an_existing_destination_and_writes_nothing(pristine, tmp_path):
    path = damaged_copy(pristine, tmp_path, "messages")
    dest = tmp_path / "taken.db"
    dest.write_bytes(b"mine")
    result = cli("--db", path, "recover", dest)
    assert result.exit_code == 2 and dest.read_bytes() == b"mine"
    assert sorted(listing(tmp_path)) == ["state.db", "taken.db"]


def test_a_healthy_file_recovers_completely_with_exit_0(pristine, tmp_path):
    dest = tmp_path / "copy.db"
    code, doc = cli_json("--db", pristine, "recover", dest)
    assert code == 0 and doc["complete"] and rows(dest, ALL_MESSAGES) == rows(pristine, ALL_MESSAGES)


def test_read_commands_on_a_damaged_file_exit_65_or_read_around_it(pristine, tmp_path):
    path = damaged_copy(pristine, tmp_path, "messages")
    before, files = sha256(path), listing(tmp_path)
    for args in (["status"], ["export"], ["sessions", "list"], ["search", "kappa"]):
        result = cli("--db", path, *args)
        assert result.exit_code in (0, 65), (args, result.exit_code, result.stderr)
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) <= 1
    assert sha256(path) == before and listing(tmp_path) == files


def test_the_duplicated_schema_entry_is_read_around_by_read_commands(pristine, tmp_path):
    path = damaged_copy(pristine, tmp_path, "dup_master")
    code, doc = cli_json("--db", path, "sessions", "list")
    assert code == 0 and doc["sessions"]


def test_a_backup_of_a_damaged_file_is_65_and_leaves_nothing(pristine, tmp_path):
    path = damaged_copy(pristine, tmp_path, "messages")
    before, files = sha256(path), listing(tmp_path)
    result = cli("--db", path, "backup", tmp_path / "copy.db")
    assert result.exit_code == 65 and len(result.stderr.splitlines()) == 1
    assert sha256(path) == before and listing(tmp_path) == files


def test_repair_refuses_while_another_process_has_the_database_open(pristine, tmp_path):
    import subprocess
    import sys

    path = damaged_copy(pristine, tmp_path, "idx_messages_session")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(path)!r}); c.execute('PRAGMA journal_mode=WAL')\n"
        "c.execute('SELECT COUNT(*) FROM sessions').fetchone(); print('open', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        before = sha256(path)
        result = cli("--db", path, "repair")
        assert result.exit_code == 75 and "another process" in result.stderr
        assert sha256(path) == before and not [n for n in listing(tmp_path) if "pre-repair" in n or "tmp" in n]
    finally:
        holder.kill()
        holder.wait()


def test_recover_sees_the_rows_still_in_a_wal(pristine, tmp_path):
    import sqlite3

    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('sess-00001', 'user', 'x', 1)")
    folder = tmp_path / "copy"
    folder.mkdir()
    for suffix in ("", "-wal"):  # as a crashed writer leaves it: a WAL, no -shm
        shutil.copyfile(f"{path}{suffix}", folder / f"state.db{suffix}")
    writer.close()
    before = {n: sha256(folder / n) for n in listing(folder)}
    code, doc = cli_json("--db", folder / "state.db", "recover", tmp_path / "out.db")
    assert code == 0 and doc["used_wal_snapshot"] and doc["messages_recovered"] == len(rows(pristine, ALL_MESSAGES)) + 1
    assert {n: sha256(folder / n) for n in listing(folder)} == before


def _unreadable(pristine: Path, tmp_path: Path, how: str) -> Path:
    """Files SQLite cannot open at all: page 1 overwritten after the header, its header destroyed
    (the first 100 bytes, or the whole first page), or the file cut in half."""
    data = pristine.read_bytes()
    path = tmp_path / "state.db"
    if how == "page1":
        path.write_bytes(data[:100] + bytes(range(256)) * 15 + data[100 + 256 * 15:])
    elif how in ("header", "whole_page1"):
        garbage = bytes(random.Random(5).getrandbits(8) for _ in range(100 if how == "header" else 4096))
        path.write_bytes(garbage + data[len(garbage):])
    else:
        path.write_bytes(data[:len(data) // 2])
    return path


@pytest.mark.parametrize("how", ["page1", "header", "whole_page1", "truncated"])
def test_a_file_sqlite_cannot_open_is_checked_refused_and_recovered_from_its_pages(pristine, tmp_path, how):
    # A destroyed header was "not an SQLite database" (exit 2) to every command, recover included,
    # although every other page of the file still held its rows.
    path = _unreadable(pristine, tmp_path, how)
    before, files = sha256(path), listing(tmp_path)
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and [(p["object"], p["data"]) for p in doc["problems"]] == [("sqlite_master", "canonical")]
    for command in ("vacuum", "upgrade", "repair", "maintain", "status", "backup"):
        extra = [tmp_path / "copy.db"] if command == "backup" else []
        assert cli("--db", path, command, *extra, "--no-progress").exit_code == 65
    assert sha256(path) == before and listing(tmp_path) == files
    dest = tmp_path / "recovered.db"
    code, doc = cli_json("--db", path, "recover", dest)
    assert doc["schema_unreadable"] and sha256(path) == before
    original = {r[0]: r for r in rows(pristine, ALL_MESSAGES)}
    back = rows(dest, ALL_MESSAGES)
    assert all(original[r[0]] == r for r in back) and check_file(dest) == []
    if how != "truncated":  # only the schema page is gone: every row is still on its leaf page
        assert (code, len(back)) == (0, len(original))
    else:
        assert code == 1 and len(back) >= 0.4 * len(original)


def test_repair_keeps_the_toolkit_extra_tables_and_the_wal_mode(pristine, tmp_path):
    import sqlite3

    from hermes_state_tools.tables import extras

    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    conn = sqlite3.connect(path, isolation_level=None)
    extras.ensure_tables(conn)
    conn.execute(f"INSERT INTO {extras.SESSION_TABLE} VALUES ('sess-00001', '{{\"mirror\": true}}')")
    conn.execute(f"INSERT INTO {extras.MESSAGE_TABLE} VALUES (7, 'sess-00001', '{{\"message_id\": 9}}')")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    damage(path, "idx_messages_session")
    code, doc = cli_json("--db", path, "repair")
    assert code == 0 and check_file(path) == []
    assert rows(path, f"SELECT * FROM {extras.MESSAGE_TABLE}") == [(7, "sess-00001", '{"message_id": 9}')]
    assert rows(path, f"SELECT * FROM {extras.SESSION_TABLE}") == [("sess-00001", '{"mirror": true}')]
    assert path.read_bytes()[18:20] == b"\x02\x02"  # the header says WAL, as Hermes keeps it
    assert listing(tmp_path) == sorted(["state.db", Path(doc["backup"]).name])


def test_upgrading_a_damaged_old_file_is_refused_before_any_backup(tmp_path):
    from schema_fixtures import load_fixture

    path = load_fixture("v3", tmp_path)
    destroy_btree(path, "messages")
    before, files = sha256(path), listing(tmp_path)
    for args in (["upgrade"], ["import-jsonl", str(LEGACY_JSONL)]):
        result = cli("--db", path, *args, "--no-progress")
        assert result.exit_code == 65 and str(path) in result.stderr
    assert sha256(path) == before and listing(tmp_path) == files  # no .bak of a damaged file


EXAMPLES = int(os.environ.get("HST_DAMAGE_EXAMPLES", "0")) or examples(12)  # more for a long hunt


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_any_destroyed_pages_are_found_refused_and_recovered_around(pristine, tmp_path_factory, data):
    from page_damage import btree_pages, destroy_pages

    tmp_path = tmp_path_factory.mktemp("random")
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    pages = sorted(p for tree in btree_pages(path).values() for p, _kind in tree if p != 1)
    chosen = data.draw(st.lists(st.sampled_from(pages), min_size=1, max_size=6, unique=True))
    destroy_pages(path, chosen, seed=data.draw(st.integers(0, 1000)))
    before, files = sha256(path), listing(tmp_path)
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and doc["damaged"]
    assert cli("--db", path, "vacuum").exit_code == 65 and sha256(path) == before
    dest = tmp_path / "out" / "recovered.db"
    dest.parent.mkdir()  # recover, like backup, refuses a missing folder
    code, doc = cli_json("--db", path, "recover", dest)
    assert code in (0, 1) and sha256(path) == before and listing(tmp_path) == sorted([*files, "out"])
    original = {r[0]: r for r in rows(pristine, ALL_MESSAGES)}
    back = rows(dest, ALL_MESSAGES)
    assert all(original[r[0]] == r for r in back)  # nothing made up, nothing changed
    lost = {i for a, b in doc["messages_lost_ranges"] for i in range(a, b + 1)}
    assert set(original) - {r[0] for r in back} <= lost  # every missing message is reported lost
    assert check_file(dest) == []


def test_a_record_cut_short_by_garbage_is_skipped_by_the_page_scan(pristine, tmp_path):
    """Found by the property above: the roots of the first b-trees destroyed, and garbage whose record
    header promised an 8-byte float where fewer bytes were left."""
    from page_damage import destroy_pages

    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    destroy_pages(path, [2, 3, 4, 5], seed=238)
    dest = tmp_path / "recovered.db"
    code, doc = cli_json("--db", path, "recover", dest)
    assert code in (0, 1) and doc["verified"] and check_file(dest) == []
    original = {r[0]: r for r in rows(pristine, ALL_MESSAGES)}
    assert all(original[r[0]] == r for r in rows(dest, ALL_MESSAGES))


def test_recovered_and_repaired_files_are_owner_only(pristine, tmp_path):
    path = damaged_copy(pristine, tmp_path, "idx_messages_session")
    assert cli("--db", path, "recover", tmp_path / "recovered.db").exit_code == 0
    assert cli("--db", path, "repair").exit_code == 0
    assert (tmp_path / "recovered.db").stat().st_mode & 0o777 == 0o600
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("keep", [0.5, 0.9, 0.99])
def test_a_file_cut_short_is_never_called_complete(pristine, tmp_path, keep):
    # The rows in the pages past the new end cannot be counted (their ids may leave no gap), but the
    # header still counts the pages: recover says the file was cut short, and exits 1.
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    pages = path.stat().st_size // 4096
    os.truncate(path, int(pages * keep) * 4096)
    code, doc = cli_json("--db", path, "recover", tmp_path / "copy.db")
    assert code == 1 and not doc["complete"] and doc["pages_missing"] == pages - int(pages * keep)
    assert "cut short" in cli("--db", path, "recover", tmp_path / "again.db").stdout


def test_a_whole_file_has_no_missing_pages(pristine, tmp_path):
    code, doc = cli_json("--db", pristine, "recover", tmp_path / "copy.db")
    assert code == 0 and doc["pages_missing"] == 0



@pytest.mark.parametrize("covered", [True, False])
def test_a_cut_short_file_is_missing_only_the_pages_its_wal_does_not_hold(tmp_path, covered):
    # A crash mid-checkpoint: the main file is short, but its WAL still holds the pages (complete);
    # a WAL that holds only the last writes leaves the rest lost (never called complete).
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    if not covered:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (zeroblob(200000))")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("CREATE TABLE IF NOT EXISTS u (x)")
    conn.execute("INSERT INTO u VALUES ('last write')")
    shutil.copyfile(f"{path}-wal", tmp_path / "saved-wal")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    pages = path.stat().st_size // 4096
    os.truncate(path, 4096 * 2)
    shutil.copyfile(tmp_path / "saved-wal", f"{path}-wal")
    missing = page_scan.pages_missing(path)
    assert (missing == 0) if covered else (0 < missing < pages)


def _with_newer_columns(pristine: Path, tmp_path: Path, version: int) -> Path:
    """Columns (and a table) a later Hermes added, holding values; the version it recorded."""
    return edited_copy(pristine, tmp_path, "ALTER TABLE sessions ADD COLUMN workspace TEXT NOT NULL DEFAULT 'home'",
                       "ALTER TABLE messages ADD COLUMN attachments TEXT",
                       "UPDATE messages SET attachments = '[\"a.png\"]' WHERE id % 7 = 0",
                       "UPDATE schema_version SET version = ?", params=(version,))


def test_recover_of_a_newer_schema_names_the_columns_it_cannot_keep(pristine, tmp_path):
    # It said "everything came back" (exit 0) into a v6 file without the newer columns' values.
    path = _with_newer_columns(pristine, tmp_path, 30)
    before = sha256(path)
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    assert (code, doc["complete"]) == (1, False) and sha256(path) == before
    assert doc["columns_not_kept"] == ["sessions.workspace", "messages.attachments"]
    assert rows(tmp_path / "out.db", ALL_MESSAGES) == rows(path, ALL_MESSAGES)
    assert doc["schema_newer"] is True
    done = cli("--db", path, "recover", tmp_path / "again.db", "--no-progress")
    assert "attachments" in done.output and "schema version 30 is a layout this tool does not know" in done.output


def test_repair_never_rebuilds_away_columns_another_tool_added(pristine, tmp_path):
    # A v6 file with a column another tool added and a destroyed index: the rebuild swapped in a file
    # without that column (its values only in the .pre-repair copy), exit 0.
    path = _with_newer_columns(pristine, tmp_path, 6)
    destroy_btree(path, "idx_messages_session")
    before, files = sha256(path), listing(tmp_path)
    code, doc = cli_json("--db", path, "repair")
    assert code == 65 and "messages.attachments" in doc["error"]
    assert sha256(path) == before and listing(tmp_path) == files


def _misdirect(path: Path, victim: str, source: str) -> None:
    """A valid page written where another belongs: a leaf of `victim` overwritten by a copy of a
    leaf of `source` far from it (a misdirected write, a stale page put back)."""
    pages = {name: [p for p, kind in found if kind == "leaf"] for name, found in btree_pages(path).items()}
    target, copied = pages[victim][len(pages[victim]) * 3 // 4], pages[source][len(pages[source]) // 4]
    data = path.read_bytes()
    size = int.from_bytes(data[16:18], "big")
    with open(path, "r+b") as handle:
        handle.seek((target - 1) * size)
        handle.write(data[(copied - 1) * size:copied * size])


def _seekable(path: Path) -> dict[int, tuple[object, ...]]:
    """Every message `rowid = ?` still finds: what a careful salvage by SQL gets back."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    found = {}
    try:
        top = conn.execute("SELECT MAX(rowid) FROM messages INDEXED BY idx_messages_session").fetchone()[0]
        for rowid in range(1, top + 1):
            row = conn.execute(ALL_MESSAGES.replace(" ORDER BY id", " WHERE rowid = ?"), (rowid,)).fetchone()
            if row:
                found[rowid] = row
    finally:
        conn.close()
    return found


@pytest.mark.parametrize("source", ["messages", "sessions"])
def test_recover_reads_around_a_valid_page_written_in_the_wrong_place(pristine, tmp_path, source):
    # The range scan walked into the misplaced page and stopped there without an error: the rest of
    # its range was skipped unreported ("everything came back", exit 0, counters recounted to the
    # loss), or the misplaced page's rows replaced the real rows of the same rowids.
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    _misdirect(path, "messages", source)
    original, seekable = {r[0]: r for r in rows(pristine, ALL_MESSAGES)}, _seekable(path)
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    back = {r[0]: r for r in rows(tmp_path / "out.db", ALL_MESSAGES)}
    assert all(original[i] == row for i, row in back.items())
    assert {i: r for i, r in seekable.items() if r == original.get(i)}.keys() <= back.keys()
    assert (code, doc["complete"], doc["messages_lost"]) == (1, False, len(original) - len(back))


@pytest.mark.parametrize("content", ["zeros", "random", "jsonl", "python"])
def test_a_file_that_never_was_sqlite_is_still_not_a_database(tmp_path, content):
    # The pages of a file whose header is destroyed are told by their b-tree headers; other files of
    # whole pages are not taken for them.
    path = tmp_path / "state.db"
    rnd = random.Random(3)
    data = {"zeros": bytes(64 * 4096), "random": bytes(rnd.getrandbits(8) for _ in range(64 * 4096)),
            "jsonl": b'{"role": "user", "content": "hello", "timestamp": 1.0}\n' * 4096,
            "python": Path(page_scan.__file__).read_bytes() * 8}[content]
    path.write_bytes(data[:len(data) // 4096 * 4096])
    for command in ("check", "recover"):
        extra = [tmp_path / "out.db"] if command == "recover" else []
        result = cli("--db", path, command, *extra, "--no-progress")
        assert result.exit_code == 2 and "not an SQLite database" in result.output
    assert listing(tmp_path) == ["state.db"]


def test_a_file_damaged_while_prune_waits_for_its_answer_is_refused(pristine, tmp_path, monkeypatch):
    """prune proved the file sound before asking; the answer may come much later, so a confirmed
    prune proves it again before it deletes (only --yes, which asks nothing, uses the first proof)."""
    from hermes_state_tools.cli import maintenance as maintenance_cli

    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE sessions SET ended_at = started_at + 60")
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").connection.close()

    def damaged_meanwhile(*_args: object, **_kwargs: object) -> bool:
        damage(path, "messages")
        return True

    monkeypatch.setattr(maintenance_cli, "stdin_is_terminal", lambda: True)
    monkeypatch.setattr(maintenance_cli.click, "confirm", damaged_meanwhile)
    result = cli("--db", path, "prune", "--older-than", "30")
    assert result.exit_code == 65 and "recover" in result.stderr, result.stderr
    assert len(rows(path, "SELECT id FROM sessions")) == 120


def _overflow_chain(path: Path) -> tuple[list[int], int]:
    """The pages of one long message's overflow chain, in order, and the page size."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        chains: dict[str, list[tuple[str, int]]] = {}
        for page, where in conn.execute("SELECT pageno, path FROM dbstat WHERE name = 'messages' "
                                        "AND pagetype = 'overflow'"):
            chains.setdefault(where.split("+")[0], []).append((where, page))
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    return [page for _where, page in sorted(next(c for c in chains.values() if len(c) >= 3))], size


def _zero_the_last_page_of_an_overflow_chain(path: Path) -> None:
    """Zeros over the last page of one long message's overflow chain: a well-formed end of the chain
    (its next-page number 0); the row's last values (its timestamp) read 0, its text ends in zeros."""
    chain, size = _overflow_chain(path)
    with open(path, "r+b") as handle:
        handle.seek((chain[-1] - 1) * size)
        handle.write(bytes(size))


def test_a_zeroed_overflow_page_is_canonical_damage_repair_never_blesses(tmp_path):
    path = build_db(tmp_path / "state.db", sessions=6, per_session=4, size=12000)
    before = rows(path, ALL_MESSAGES)
    _zero_the_last_page_of_an_overflow_chain(path)
    conn = sqlite3.connect(path)
    # SQLite sees an index that disagrees with the row, not which of the two changed.
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("row 1 missing from index idx_messages_session",)]
    conn.close()
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and doc["damaged"]
    found = [p for p in doc["problems"] if p["kind"] == "integrity"]
    assert found and all((p["object"], p["data"]) == ("messages", "canonical") for p in found), found
    assert "row 1 of messages itself reads zeros" in found[0]["detail"]
    digest = sha256(path)
    # and vacuum and rebuild-fts, which rebuild indexes from the rows, look with integrity_check, not
    # quick_check (which does not compare rows with their index entries and passes this file)
    home = tmp_path / "home"
    home.mkdir()
    (home / "20260301_090000_3f9a2c7e.jsonl").write_text('{"role": "user", "content": "hello"}\n')
    other = build_db(tmp_path / "other.db", sessions=1, per_session=1)
    # and every other command that writes rows beside it or deletes some (they looked with quick_check)
    for args in (["repair"], ["maintain"], ["vacuum"], ["rebuild-fts"], ["prune", "--older-than", "0", "--yes"],
                 ["import-jsonl", str(home)], ["merge", str(other)]):
        assert cli_json("--db", path, *args)[0] == 65, args
    assert sha256(path) == digest
    damaged = [r for r, b in zip(rows(path, ALL_MESSAGES), before, strict=True) if r != b]
    assert len(damaged) == 1 and damaged[0][3].endswith("\0")


@pytest.mark.parametrize(("at", "seed"), [(0, 1), (0, 2), (1, 1), (1, 2)])
def test_random_bytes_over_an_overflow_page_are_reported_never_a_bug(tmp_path, at, seed):
    # SQLite ends the check's read transaction itself on some of these: the check's ROLLBACK must not fail (70).
    path = build_db(tmp_path / "state.db", sessions=6, per_session=4, size=12000)
    chain, size = _overflow_chain(path)
    with open(path, "r+b") as handle:
        handle.seek((chain[at] - 1) * size)
        handle.write(random.Random(seed).randbytes(size))
    digest = sha256(path)
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and doc["damaged"], doc
    for args in (["repair"], ["maintain"]):
        assert cli_json("--db", path, *args)[0] == 65
    assert sha256(path) == digest


@pytest.mark.parametrize("query", ["a", "x", "a AND OR b"])
def test_search_that_reads_text_a_destroyed_page_made_undecodable_exits_65(tmp_path, query):
    # The literal look of a one-letter word runs a Python SQL function over each message's text; the
    # text on a destroyed last overflow page is not UTF-8, and Python's sqlite3 said "user-defined
    # function raised exception" (exit 70, a bug) instead of naming the damage.
    path = build_db(tmp_path / "state.db", sessions=6, per_session=4, size=12000)
    chain, size = _overflow_chain(path)
    with open(path, "r+b") as handle:
        handle.seek((chain[-1] - 1) * size)
        handle.write(random.Random(1).randbytes(size))
    digest = sha256(path)
    result = cli("--db", path, "search", query)
    assert result.exit_code == 65 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "damaged" in result.stderr and "user-defined" not in result.stderr
    assert sha256(path) == digest


def test_cjk_search_that_reads_text_a_destroyed_page_made_undecodable_exits_65(tmp_path):
    # A CJK query's Latin word is looked for glued to CJK in the messages past the side table's mark,
    # through a Python SQL function: the same "user-defined function raised exception" (70) it was.
    from hermes_state_tools.search import trigram

    path = build_db(tmp_path / "state.db", sessions=2, per_session=3, size=300)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES "
                     "('sess-00000', 'user', '東京の天気 kappa', 1.0)")
        assert trigram.refresh(conn)["last_id"] >= 0
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES "
                     "('sess-00001', 'user', ?, 2.0)", ("kappa sigma " * 2000,))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    chain, size = _overflow_chain(path)
    with open(path, "r+b") as handle:
        handle.seek((chain[-1] - 1) * size)
        handle.write(random.Random(1).randbytes(size))
    result = cli("--db", path, "search", "東京 kappa")
    assert result.exit_code == 65 and len(result.stderr.splitlines()) == 1, result.stderr
    assert "not UTF-8" in result.stderr


def test_hermes_json_content_marker_is_written_text_and_stray_zeros_are_not():
    from hermes_state_tools.maintenance.locate_damage import written_text

    assert written_text(b"\x00json:[{\"type\": \"text\", \"text\": \"hi\"}]") and written_text("caf\u00e9".encode())
    assert not written_text(b"hello\x00\x00") and not written_text(b"h\xffllo")
    assert not written_text(b"\x00json:[1]\x00")


@pytest.mark.parametrize("bytes_", ["zeros", "stray"])
def test_bytes_destroyed_inside_a_messages_text_are_canonical_damage_never_reindexed(pristine, tmp_path, bytes_):
    """A page whose structure held, with 32 bytes of one message's text destroyed: integrity_check
    passes, the search index (the last record of those words) disagrees, and that is the text's loss,
    not the index's: repair and maintain must not rebuild the index from the destroyed text."""
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    data = path.read_bytes()
    page = next(p for p, kind in btree_pages(path)["messages"] if kind == "leaf")
    at = data.index(b"kappa", (page - 1) * 4096 + 200)
    with open(path, "r+b") as handle:
        handle.seek(at)
        handle.write(bytes(32) if bytes_ == "zeros" else b"\xff\xfe" * 16)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and doc["damaged"]
    [found] = [p for p in doc["problems"] if p["kind"] == "integrity"]
    assert (found["object"], found["data"]) == ("messages", "canonical") and found["session_ids"]
    digest = sha256(path)
    for args in (["repair"], ["maintain"]):
        assert cli_json("--db", path, *args)[0] == 65
    assert sha256(path) == digest


def test_recover_names_a_row_that_came_back_with_destroyed_text_and_is_not_complete(tmp_path):
    path = build_db(tmp_path / "state.db", sessions=6, per_session=4, size=12000)
    _zero_the_last_page_of_an_overflow_chain(path)
    (tmp_path / "out").mkdir()
    code, doc = cli_json("--db", path, "recover", tmp_path / "out" / "new.db")
    assert code == 1 and not doc["complete"] and doc["rows_damaged"] == ["messages 1"]
    assert doc["messages_recovered"] == 24 and doc["messages_lost"] == 0  # kept as read: what is left of it
    assert rows(tmp_path / "out" / "new.db", "SELECT content FROM messages WHERE id = 1")[0][0].endswith("\0")


def _flip_in(path: Path, btree: str, value: bytes, bit: int) -> None:
    """Flip one bit of `value` where the b-tree `btree` stores it (its first place there)."""
    with open(path, "rb") as handle:
        size = int.from_bytes(handle.read(100)[16:18], "big")
    data = bytearray(path.read_bytes())
    for page, _kind in btree_pages(path)[btree]:
        at = data.find(value, (page - 1) * size, page * size)
        if at >= 0:
            data[at + bit // 8] ^= 1 << (7 - bit % 8)
            path.write_bytes(bytes(data))
            return
    raise AssertionError(f"{value!r} not in {btree}")


@pytest.mark.parametrize("side", ["row", "index entry"])
def test_a_row_that_differs_from_its_index_entry_is_canonical_damage_repair_never_blesses(tmp_path, side):
    """One bit of a message's timestamp flipped, in the row or in its idx_messages_session entry:
    SQLite says only that the two differ. Rebuilding the index from the row (what repair did) made a
    flipped row the truth without a word. Rows were deleted first: SQLite's 'row N' counts the scan."""
    path = build_db(tmp_path / "state.db", sessions=6, per_session=4)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DELETE FROM messages WHERE id IN (SELECT id FROM messages ORDER BY id LIMIT 5)")
    target = conn.execute("SELECT id, timestamp FROM messages ORDER BY id LIMIT 1 OFFSET 6").fetchone()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = rows(path, ALL_MESSAGES)
    stored = struct.pack(">i", int(target[1]))  # a whole REAL is stored as a 4-byte integer
    _flip_in(path, "messages" if side == "row" else "idx_messages_session", stored, 20)
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and doc["damaged"]
    found = [p for p in doc["problems"] if p["kind"] == "integrity"]
    assert found and all((p["object"], p["data"]) == ("messages", "canonical") for p in found), found
    digest = sha256(path)
    for args in (["repair"], ["maintain"], ["vacuum"], ["rebuild-fts"]):
        assert cli_json("--db", path, *args)[0] == 65, args
    assert sha256(path) == digest
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    assert rows(tmp_path / "out.db", "SELECT id FROM messages ORDER BY id") == [(r[0],) for r in before]


def test_a_page_count_in_the_header_past_all_reason_is_counted_not_enumerated(tmp_path):
    """Bytes 28-31 of the header (the page count) read 2 billion: recover listed every page it thought
    missing in a set, for minutes and gigabytes. It is a count."""
    path = build_db(tmp_path / "state.db", sessions=5, per_session=20)
    data = bytearray(path.read_bytes())
    data[28:32] = (0x7FFFFFF0).to_bytes(4, "big")
    path.write_bytes(bytes(data))
    done = subprocess.run([sys.executable, "-m", "hermes_state_tools", "--db", str(path), "recover",
                           str(tmp_path / "out.db"), "--json"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HERMES_HOME": "/nonexistent"}, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    assert len(rows(tmp_path / "out.db", "SELECT id FROM messages")) == 100


@pytest.mark.parametrize("table", ["sessions", "messages"])
def test_a_damaged_create_statement_hides_no_row_from_recover(pristine, tmp_path, table):
    """One byte of `CREATE TABLE <table>` on page 1 destroyed: SQLite no longer knows the table, every row
    of it is still on its pages. recover said the file holds no Hermes schema (exit 2) and kept nothing."""
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    data = bytearray(path.read_bytes())
    at = data.index(f"CREATE TABLE {table}".encode())
    data[at + len("CREATE TABLE ") + len(table) - 1] = 1
    path.write_bytes(bytes(data))
    dest = tmp_path / "recovered.db"
    code, doc = cli_json("--db", path, "recover", dest)
    assert code in (0, 1), doc
    assert rows(dest, ALL_MESSAGES) == rows(pristine, ALL_MESSAGES)
    assert check_file(dest) == []


@pytest.mark.parametrize(("at", "value"), [(16, b"\x12\x34"), (16, b"\x00\x00"), (21, b"\x11\x22\x33")])
def test_a_header_field_no_sqlite_writes_is_damage_and_recover_reads_the_pages(pristine, tmp_path, at, value):
    """A page size or payload fraction in the header that SQLite never writes: SQLite calls the whole
    file 'not a database' (check exit 2, recover kept nothing), while every page past the header is whole."""
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    data = bytearray(path.read_bytes())
    data[at:at + len(value)] = value
    path.write_bytes(bytes(data))
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and doc["damaged"], doc
    assert cli_json("--db", path, "vacuum")[0] == 65
    dest = tmp_path / "recovered.db"
    assert cli_json("--db", path, "recover", dest)[0] in (0, 1)
    assert rows(dest, ALL_MESSAGES) == rows(pristine, ALL_MESSAGES)


def test_a_zeroed_first_overflow_page_is_damage_of_the_rows_not_of_an_index(tmp_path):
    """The first page of a long message's overflow chain zeroed: the row cannot be read. check called it
    an index's damage (derived), as its look counted the rows without reading their overflow pages."""
    path = build_db(tmp_path / "state.db", sessions=6, per_session=4, size=12000)
    chain, size = _overflow_chain(path)
    with open(path, "r+b") as handle:
        handle.seek((chain[0] - 1) * size)
        handle.write(bytes(size))
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and doc["damaged"]
    found = [(p["object"], p["data"]) for p in doc["problems"] if p["kind"] == "integrity"]
    assert ("messages", "canonical") in found and not any(data == "derived" for _object, data in found), found


def test_a_write_version_past_two_is_a_read_only_file_not_damage(pristine, tmp_path):
    """Header byte 18 (write version) above 2 makes SQLite read a file without writing it; only the read
    version (byte 19) decides whether it can be read at all."""
    path = tmp_path / "state.db"
    shutil.copyfile(pristine, path)
    data = bytearray(path.read_bytes())
    data[18] = 3
    path.write_bytes(bytes(data))
    code, doc = cli_json("--db", path, "check")
    assert code == 0 and not doc["damaged"], doc


def test_messages_deleted_long_ago_are_not_counted_as_lost(pristine, tmp_path):
    """Ids of messages Hermes deleted (a deleted session) leave gaps that look like lost rows: recover
    counted them with the rows a destroyed page took. The session index names the ids that exist."""
    path = edited_copy(pristine, tmp_path, "DELETE FROM messages WHERE id % 7 = 0")
    there = {r[0] for r in rows(path, "SELECT id FROM messages")}
    destroy_btree(path, "messages", count=3)
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    back = {r[0] for r in rows(tmp_path / "out.db", "SELECT id FROM messages")}
    assert code == 1 and back < there
    assert doc["messages_lost"] == len(there - back)


def test_recover_and_repair_of_a_file_maintain_indexed_for_cjk_search(pristine, tmp_path):
    # maintain adds the CJK side table (an FTS5 table and its shadow tables); recover copied the shadow
    # tables after creating the table, which had made them: exit 70, on the file the nightly job keeps.
    path = edited_copy(pristine, tmp_path, "INSERT INTO messages (session_id, role, content, timestamp) "
                                           "SELECT id, 'user', '東京の天気は晴れです', 1.0 FROM sessions LIMIT 1")
    assert cli("--db", path, "maintain").exit_code == 0
    assert "hst_messages_trigram" in {r[0] for r in rows(path, "SELECT name FROM sqlite_master")}
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    assert (code, doc["complete"], doc["other_tables_lost"]) == (0, True, [])
    assert rows(tmp_path / "out.db", ALL_MESSAGES) == rows(path, ALL_MESSAGES)
    assert cli("--db", tmp_path / "out.db", "maintain").exit_code == 0  # builds the side table again
    assert cli_json("--db", tmp_path / "out.db", "search", "天気")[1]["results"]
    destroy_btree(path, "idx_messages_session")
    code, _doc = cli_json("--db", path, "repair")
    assert code == 0 and check_file(path) == []


def test_recover_keeps_a_newer_hermes_search_table_with_its_rows(pristine, tmp_path):
    path = edited_copy(pristine, tmp_path, "CREATE VIRTUAL TABLE notes_fts USING fts5(body)",
                       "INSERT INTO notes_fts (rowid, body) VALUES (7, 'the quarterly deploy checklist')",
                       "CREATE VIRTUAL TABLE tags_fts USING fts5(tag, content='')",  # contentless: shadows only
                       "INSERT INTO tags_fts (rowid, tag) VALUES (3, 'deploy')")
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    assert code == 0 and sorted(doc["other_tables"]) == ["notes_fts", "tags_fts"]
    out = tmp_path / "out.db"
    assert rows(out, "SELECT rowid, body FROM notes_fts WHERE notes_fts MATCH 'checklist'") == \
        [(7, "the quarterly deploy checklist")]
    assert rows(out, "SELECT rowid FROM tags_fts WHERE tags_fts MATCH 'deploy'") == [(3,)]
    conn = sqlite3.connect(out)
    for table in ("notes_fts", "tags_fts"):
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    conn.close()


@pytest.mark.parametrize("case", ["fts4", "rtree_beside_a_real_table", "fts5_beside_a_real_table"])
def test_recover_keeps_other_virtual_tables_and_tables_that_only_look_like_their_shadows(pristine, tmp_path, case):
    # A real table named like another module's shadow table (notes_stat beside an FTS5 notes) was taken
    # for one of notes' shadows: both were dropped from DEST.
    statements, query, expected = {
        "fts4": (["CREATE VIRTUAL TABLE n4 USING fts4(body)", "INSERT INTO n4 VALUES ('alpha beta')"],
                 "SELECT body FROM n4 WHERE n4 MATCH 'beta'", [("alpha beta",)]),
        "rtree_beside_a_real_table": (["CREATE VIRTUAL TABLE geo USING rtree(id, minx, maxx)",
                                       "INSERT INTO geo VALUES (1, 0.5, 2.5)", "CREATE TABLE geo_data (k TEXT)",
                                       "INSERT INTO geo_data VALUES ('kept')"],
                                      "SELECT (SELECT minx FROM geo), (SELECT k FROM geo_data)", [(0.5, "kept")]),
        "fts5_beside_a_real_table": (["CREATE VIRTUAL TABLE notes USING fts5(body)",
                                      "INSERT INTO notes VALUES ('hello world')",
                                      "CREATE TABLE notes_stat (day TEXT, views INTEGER)",
                                      "INSERT INTO notes_stat VALUES ('mon', 3)"],
                                     "SELECT (SELECT body FROM notes WHERE notes MATCH 'hello'), "
                                     "(SELECT views FROM notes_stat)", [("hello world", 3)]),
    }[case]
    path = edited_copy(pristine, tmp_path, *statements)
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    assert (code, doc["other_tables_lost"]) == (0, [])
    assert rows(tmp_path / "out.db", query) == expected


def test_recover_keeps_the_data_of_a_search_table_whose_tokenizer_this_sqlite_lacks(pristine, tmp_path):
    path = edited_copy(pristine, tmp_path, "CREATE VIRTUAL TABLE notes USING fts5(body)",
                       "INSERT INTO notes VALUES ('my private note')")
    raw(path, "PRAGMA writable_schema=ON", "UPDATE sqlite_master SET sql = 'CREATE VIRTUAL TABLE notes USING "
                                           "fts5(body, tokenize=''jieba'')' WHERE name = 'notes'")
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    assert code == 1 and doc["other_tables_lost"] == ["notes"] and "notes_content" in doc["other_tables"]
    assert rows(tmp_path / "out.db", "SELECT c0 FROM notes_content") == [("my private note",)]


def test_recover_carries_every_table_view_and_trigger_another_tool_made(pristine, tmp_path):
    # Generated columns and a dangling link in another tool's tables made recover exit 70 or 65; a table
    # named messages_fts_backup or sqlitebrowser_prefs was dropped without a word; views, triggers and
    # a name with quotes in it were left behind.
    path = edited_copy(pristine, tmp_path,
                       "CREATE TABLE g (a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) VIRTUAL, "
                       "c INTEGER GENERATED ALWAYS AS (a + 1) STORED)", "INSERT INTO g (a) VALUES (3)",
                       'CREATE TABLE "my ""odd"" table" (x TEXT)', """INSERT INTO "my ""odd"" table" VALUES ('q')""",
                       "CREATE TABLE messages_fts_backup (x TEXT)", "INSERT INTO messages_fts_backup VALUES ('b')",
                       "CREATE TABLE sqlitebrowser_prefs (k TEXT)", "INSERT INTO sqlitebrowser_prefs VALUES ('p')",
                       "CREATE TABLE p (id INTEGER PRIMARY KEY)", "CREATE TABLE ch (pid INTEGER REFERENCES p(id))",
                       "INSERT INTO ch VALUES (99)", "CREATE VIEW v AS SELECT a FROM g",
                       "CREATE TRIGGER tg AFTER INSERT ON g BEGIN INSERT INTO messages_fts_backup VALUES (new.a); END")
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    assert (code, doc["other_tables_lost"]) == (0, [])
    assert set(doc["other_tables"]) == {"g", 'my "odd" table', "messages_fts_backup", "sqlitebrowser_prefs",
                                        "p", "ch", "v"}
    out = tmp_path / "out.db"
    assert rows(out, "SELECT a, b, c FROM g") == [(3, 6, 4)] and rows(out, "SELECT a FROM v") == [(3,)]
    assert rows(out, 'SELECT x FROM "my ""odd"" table"') == [("q",)] and rows(out, "SELECT pid FROM ch") == [(99,)]
    assert rows(out, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'g'") == [("tg",)]


def test_recover_keeps_the_data_of_a_virtual_table_whose_module_this_sqlite_lacks(pristine, tmp_path):
    path = edited_copy(pristine, tmp_path, "CREATE VIRTUAL TABLE notes USING fts5(body)",
                       "INSERT INTO notes VALUES ('my private note')")
    raw(path, "PRAGMA writable_schema=ON",
        "UPDATE sqlite_master SET sql = 'CREATE VIRTUAL TABLE notes USING fts9(body)' WHERE name = 'notes'")
    code, doc = cli_json("--db", path, "recover", tmp_path / "out.db")
    assert code == 1 and doc["other_tables_lost"] == ["notes"] and "notes_content" in doc["other_tables"]
    assert rows(tmp_path / "out.db", "SELECT c0 FROM notes_content") == [("my private note",)]


@pytest.mark.parametrize("kind", ["messages_fts_idx", "messages_fts_config"])
def test_search_of_a_damaged_search_index_says_the_file_is_damaged_and_what_to_run(pristine, tmp_path, kind):
    # SQLite's own words for it ("vtable constructor failed: messages_fts") named neither the damage
    # nor `check`.
    path = damaged_copy(pristine, tmp_path, kind)
    result = cli("--db", path, "search", "kappa")
    assert result.exit_code == 65 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"hermes-state: {path}: {DAMAGED_REFUSAL} (")
