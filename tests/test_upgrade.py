"""Upgrades from every schema version and every real-world trap: nothing lost, same final schema."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hermes_state_tools import SchemaTooNewError, SessionDB
from hermes_state_tools.cli import main
from hermes_state_tools.core.schema import SCHEMA_VERSION, describe, read_version, schema_statements
from hermes_state_tools.maintenance.upgrade_file import upgrade_file
from hermes_state_tools.store.sqldump import dump_sql
from hermes_state_tools.upgrade.steps import STEPS, detect_schema_version
from tests.schema_fixtures import MANIFEST, UPGRADABLE, load_fixture, rows_by_key

EXPECTED_DETECTED = {
    **{f"v{v}": v for v in range(1, 7)},
    "trap_no_version_table": 4, "trap_empty_version": 5, "trap_duplicate_titles": 3, "trap_no_fts": 2,
    "trap_no_triggers": 6, "trap_no_indexes": 6, "trap_version_31": 6, "trap_interrupted_upgrade": 3,
}


def _fresh_schema(tmp_path: Path) -> dict[str, object]:
    SessionDB(tmp_path / "fresh.db").close()
    conn = sqlite3.connect(str(tmp_path / "fresh.db"))
    try:
        return describe(conn)
    finally:
        conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path))
    conn.row_factory = sqlite3.Row
    return conn


def _fts_in_sync(conn: sqlite3.Connection) -> None:
    # rank 1 makes FTS5 compare its index with the external content table row by row.
    conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")


def _clean_upgrade_of(name: str, folder: Path) -> Path:
    folder.mkdir()
    path = load_fixture(name, folder)
    upgrade_file(path, backup=False)
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_committed_fixtures_are_what_the_generator_makes() -> None:
    script = Path(__file__).resolve().parent.parent / "scripts" / "make_fixtures.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_detect_schema_version(name: str, tmp_path: Path) -> None:
    conn = sqlite3.connect(str(load_fixture(name, tmp_path)))
    assert detect_schema_version(conn) == EXPECTED_DETECTED[name]


@pytest.mark.parametrize("name", UPGRADABLE)
def test_upgrade_keeps_every_row_and_reaches_the_fresh_schema(name: str, tmp_path: Path) -> None:
    path = load_fixture(name, tmp_path)
    before = {table: rows_by_key(path, table) for table in ("sessions", "messages")}
    report = upgrade_file(path)

    conn = _connect(path)
    assert describe(conn) == _fresh_schema(tmp_path)
    assert read_version(conn) == SCHEMA_VERSION
    renamed = {r["session_id"]: r for r in report.renamed_titles}
    after = {table: rows_by_key(path, table) for table in ("sessions", "messages")}
    for table, rows in before.items():
        assert set(after[table]) == set(rows), f"{table} ids changed"
        for key, row in rows.items():
            for column, value in row.items():
                if table == "sessions" and column == "title" and key in renamed:
                    assert renamed[key]["old"] == value and after[table][key]["title"] == renamed[key]["new"]
                    continue
                assert after[table][key][column] == value, (table, key, column)
    _fts_in_sync(conn)
    counts = conn.execute(
        "SELECT s.id, s.message_count, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) FROM sessions s"
    ).fetchall()
    assert all(stored == real for _, stored, real in counts)
    conn.close()


@pytest.mark.parametrize("name", UPGRADABLE)
def test_search_finds_old_messages_after_upgrade(name: str, tmp_path: Path) -> None:
    path = load_fixture(name, tmp_path)
    with SessionDB(path) as db:
        assert db.search_messages("Lisbon")
        assert db.search_messages("记忆断裂")
        hits = {r["id"] for r in db.search_messages("disk usage", limit=1000)}
        with_text = {r["id"] for r in db._conn.execute("SELECT id FROM messages WHERE content LIKE '%disk usage%'")}
        assert with_text and hits == with_text


@pytest.mark.parametrize("name", UPGRADABLE)
def test_second_upgrade_changes_nothing(name: str, tmp_path: Path) -> None:
    path = load_fixture(name, tmp_path)
    upgrade_file(path, backup=False)
    first = dump_sql(sqlite3.connect(str(path)))
    report = upgrade_file(path)
    assert report.steps == () and report.renamed_titles == () and report.repairs == ()
    assert report.backup is None  # nothing pending, nothing to back up
    assert dump_sql(sqlite3.connect(str(path))) == first


def test_duplicate_titles_keep_every_title(tmp_path: Path) -> None:
    path = load_fixture("trap_duplicate_titles", tmp_path)
    report = upgrade_file(path, backup=False)
    renames = {r["session_id"]: (r["old"], r["new"]) for r in report.renamed_titles}
    assert renames == {
        "20260112_081530_5be07d11": ("Fix Docker Build", "Fix Docker Build #4"),
        "20260115_090000_deadbe": ("Fix Docker Build", "Fix Docker Build #5"),
        "20260114_140233_c0ffee12": ("周末计划 🏔️", "周末计划 🏔️ #2"),
    }
    with SessionDB(path) as db:
        # the session that started first keeps the title exactly
        assert db.get_session_by_title("Fix Docker Build")["id"] == "20260105_091500_a1b2c3"
        assert db.get_session_by_title("周末计划 🏔️")["id"] == "20260110_184211_a1c4e9b2"
        assert db.get_next_title_in_lineage("Fix Docker Build") == "Fix Docker Build #6"


def test_missing_version_row_is_detected_not_stamped(tmp_path: Path) -> None:
    path = load_fixture("trap_no_version_table", tmp_path)
    report = upgrade_file(path, backup=False)
    assert report.from_version == 4
    assert report.steps == (STEPS[5][0], STEPS[6][0])


def test_interrupted_upgrade_finishes(tmp_path: Path) -> None:
    path = load_fixture("trap_interrupted_upgrade", tmp_path)
    report = upgrade_file(path, backup=False)
    assert report.from_version == 3
    conn = _connect(path)
    assert read_version(conn) == 6 and describe(conn) == _fresh_schema(tmp_path)


def test_missing_fts_and_triggers_are_rebuilt(tmp_path: Path) -> None:
    for name in ("trap_no_fts", "trap_no_triggers"):
        path = load_fixture(name, tmp_path)
        report = upgrade_file(path, backup=False)
        assert any("messages_fts_insert" in r for r in report.repairs)
        conn = _connect(path)
        _fts_in_sync(conn)
        indexed = conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'disk'").fetchone()[0]
        stored = conn.execute("SELECT COUNT(*) FROM messages WHERE content LIKE '%disk%'").fetchone()[0]
        assert indexed == stored > 0


def test_newer_schema_is_refused_and_untouched(tmp_path: Path) -> None:
    path = load_fixture("trap_version_31", tmp_path)
    before = sorted(os.listdir(tmp_path)), _sha(path)
    with pytest.raises(SchemaTooNewError, match="schema version 31"):
        SessionDB(path)
    result = CliRunner().invoke(main, ["--db", str(path), "upgrade", "--json"])
    assert result.exit_code == 3
    assert '"ok":false' in result.stdout
    assert (sorted(os.listdir(tmp_path)), _sha(path)) == before


def test_dry_run_changes_nothing_and_reports_steps(tmp_path: Path) -> None:
    path = load_fixture("v2", tmp_path)
    before = _sha(path)
    report = upgrade_file(path, dry_run=True)
    assert report.dry_run is True and report.backup is None
    assert report.from_version == 2 and len(report.steps) == 4
    assert _sha(path) == before
    # a reader may leave SQLite's -wal/-shm beside the file, but never a backup or a copy
    assert {p for p in os.listdir(tmp_path) if not p.endswith(("-wal", "-shm"))} == {"v2.db"}


def test_backup_is_taken_and_verified(tmp_path: Path) -> None:
    path = load_fixture("v3", tmp_path)
    report = upgrade_file(path)
    backup = Path(report.backup)
    assert backup.name.startswith("v3.db.bak-") and oct(backup.stat().st_mode & 0o777) == "0o600"
    conn = sqlite3.connect(str(backup))
    assert read_version(conn) == 3  # the backup is the file as it was before upgrading
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == MANIFEST["v3"]["messages"]


@pytest.mark.parametrize("failing_step", sorted(STEPS))
def test_failure_inside_a_step_rolls_back_that_step_only(
    failing_step: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = _clean_upgrade_of("v1", tmp_path / "clean")
    path = load_fixture("v1", tmp_path)
    description, step = STEPS[failing_step]

    def broken(conn: sqlite3.Connection) -> list:
        step(conn)  # the step's own changes are made, then the process "fails" before commit
        raise RuntimeError("injected failure")

    monkeypatch.setitem(STEPS, failing_step, (description, broken))
    with pytest.raises(RuntimeError, match="injected failure"):
        SessionDB(path)
    assert read_version(sqlite3.connect(str(path))) == failing_step - 1
    monkeypatch.setitem(STEPS, failing_step, (description, step))
    SessionDB(path).close()
    assert dump_sql(sqlite3.connect(str(path))) == dump_sql(sqlite3.connect(str(clean)))


_KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from hermes_state_tools.core import schema
    from hermes_state_tools.store.session_db import SessionDB
    from hermes_state_tools.upgrade import steps as upgrade
    target, where = sys.argv[1], sys.argv[2]
    if where.startswith("step"):
        number = int(where[4:])
        description, step = upgrade.STEPS[number]
        def killed(conn):
            step(conn)
            os.kill(os.getpid(), signal.SIGKILL)
        upgrade.STEPS[number] = (description, killed)
    else:
        real = schema.create_schema
        def killed(conn, version=schema.SCHEMA_VERSION):
            conn.execute(schema.SCHEMA_VERSION_SQL)
            conn.execute(schema.create_table_sql("messages"))
            conn.execute(schema.FTS_TABLE_SQL)
            os.kill(os.getpid(), signal.SIGKILL)
        upgrade.create_schema = killed
    SessionDB(target)
""")


@pytest.mark.parametrize("where", [f"step{n}" for n in sorted(STEPS)])
def test_kill_during_upgrade_then_rerun_reaches_the_same_database(where: str, tmp_path: Path) -> None:
    clean = _clean_upgrade_of("v1", tmp_path / "clean")
    path = load_fixture("v1", tmp_path)
    killed = subprocess.run([sys.executable, "-c", _KILL_SCRIPT, str(path), where])
    assert killed.returncode == -9
    SessionDB(path).close()
    assert dump_sql(sqlite3.connect(str(path))) == dump_sql(sqlite3.connect(str(clean)))


def test_kill_while_creating_a_new_database_leaves_no_half_schema(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    killed = subprocess.run([sys.executable, "-c", _KILL_SCRIPT, str(path), "create"])
    assert killed.returncode == -9
    conn = sqlite3.connect(str(path))
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
    conn.close()
    with SessionDB(path) as db:
        db.create_session("s", "cli")
        db.append_message("s", "user", "after the crash")
        assert db.search_messages("crash")
    assert describe(sqlite3.connect(str(path))) == _fresh_schema(tmp_path)


@pytest.mark.parametrize("args", [["upgrade"], ["upgrade", "--dry-run"], ["status"]])
def test_cli_refuses_missing_and_empty_files(args: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    for path in (missing, empty, junk):
        result = CliRunner().invoke(main, ["--db", str(path), *args])
        assert result.exit_code == 2, result.output
        assert str(path) in result.stderr
        assert "Traceback" not in result.output
    assert not missing.exists() and empty.stat().st_size == 0


def test_cli_upgrade_json_report(tmp_path: Path) -> None:
    path = load_fixture("trap_duplicate_titles", tmp_path)
    result = CliRunner().invoke(main, ["--db", str(path), "upgrade", "--json"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert {"from_version", "to_version", "steps", "backup", "renamed_titles"} <= set(doc)
    assert doc["from_version"] == 3 and doc["to_version"] == 6 and Path(doc["backup"]).exists()
    assert all(set(r) == {"session_id", "old", "new"} for r in doc["renamed_titles"])


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    version=st.integers(min_value=1, max_value=5),
    sessions=st.lists(st.tuples(_TEXT, st.sampled_from(["cli", "telegram", "discord"]), st.none() | _TEXT),
                      min_size=1, max_size=5),
    messages=st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["user", "assistant", "tool"]), _TEXT),
                      max_size=20),
)
# Found by hypothesis: three empty titles. The second became " #2", and the third was numbered
# " #2" again because " #2" did not count as a number of the empty title.
@example(version=3, sessions=[("", "cli", ""), ("", "cli", ""), ("", "cli", "")], messages=[])
def test_random_old_data_upgrades_with_nothing_lost(tmp_path_factory, version, sessions, messages) -> None:
    path = tmp_path_factory.mktemp("random") / "old.db"
    conn = sqlite3.connect(str(path))
    for statement in schema_statements(version):
        conn.execute(statement)
    conn.execute("INSERT INTO schema_version VALUES (?)", (version,))
    for index, (prompt, source, title) in enumerate(sessions):
        row = {"id": f"s{index}", "source": source, "system_prompt": prompt, "started_at": 1000.0 + index}
        if version == 3:
            row["title"] = title  # duplicates are possible before v4: the upgrade must resolve them
        elif version > 3 and title is not None:
            row["title"] = f"{title} [{index}]"
        conn.execute(f"INSERT INTO sessions ({','.join(row)}) VALUES ({','.join('?' * len(row))})", list(row.values()))
    for number, (owner, role, content) in enumerate(messages):
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                     (f"s{owner % len(sessions)}", role, content, 2000.0 + number))
    conn.commit()
    conn.close()
    before = {table: rows_by_key(path, table) for table in ("sessions", "messages")}

    report = upgrade_file(path, backup=False)

    renamed = {r["session_id"]: r["old"] for r in report.renamed_titles}
    after = {table: rows_by_key(path, table) for table in ("sessions", "messages")}
    for table, rows in before.items():
        assert set(after[table]) == set(rows)
        for key, row in rows.items():
            restored = dict(after[table][key])
            if key in renamed:
                restored["title"] = renamed[key]
            assert {c: restored[c] for c in row} == row
    titles = [r["title"] for r in after["sessions"].values() if r["title"] is not None]
    assert len(titles) == len(set(titles))
    _fts_in_sync(_connect(path))


# -- the one backup-before-schema-change decision and the dry runs' scratch copy ---------------------

@pytest.mark.parametrize(("name", "backs_up"), [("v5", True), ("trap_no_indexes", True), ("v6", False)])
def test_a_backup_is_taken_only_when_opening_as_a_store_would_change_the_schema(tmp_path, name, backs_up):
    from hermes_state_tools.store.backup import backup_if_schema_changes

    path = load_fixture(name, tmp_path)
    before = _sha(path)
    made = backup_if_schema_changes(path)
    assert (made is not None) == backs_up and _sha(path) == before
    backups = sorted(p.name for p in tmp_path.iterdir() if ".bak-" in p.name)
    assert backups == ([Path(made).name] if made else [])
    if made:
        with closing(sqlite3.connect(made)) as kept, closing(sqlite3.connect(path)) as original:
            assert read_version(kept) == read_version(original)
    assert backup_if_schema_changes(tmp_path / "missing.db") is None


@pytest.mark.parametrize("as_is", [False, True])
def test_a_scratch_copy_holds_the_committed_rows_and_goes_away(tmp_path, as_is):
    from hermes_state_tools.store.backup import scratch_copy

    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("s1", source="cli")
        with SessionDB(path) as held:  # the row is still in the -wal while this connection is open
            assert held.get_session("s1") is not None
            with scratch_copy(path, as_is=as_is) as copy:
                assert copy.parent != path.parent
                with closing(sqlite3.connect(copy)) as conn:
                    assert conn.execute("SELECT id FROM sessions").fetchall() == [("s1",)]
    assert not copy.exists() and not copy.parent.exists()


@pytest.mark.parametrize("stored", [0, -1])
def test_a_version_row_of_zero_or_below_is_read_as_no_version(tmp_path, stored):
    path = load_fixture("v3", tmp_path)
    before = {table: rows_by_key(path, table) for table in ("sessions", "messages")}
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE schema_version SET version = ?", (stored,))
    result = CliRunner().invoke(main, ["--db", str(path), "upgrade", "--json", "--no-backup"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["from_version"] == 3
    with closing(sqlite3.connect(path)) as conn:
        assert read_version(conn) == SCHEMA_VERSION
    after = {table: rows_by_key(path, table) for table in before}
    for table, rows in before.items():  # every row, every value it had (the new columns beside them)
        assert {key: {c: after[table][key][c] for c in row} for key, row in rows.items()} == rows


NEWER_HERMES = textwrap.dedent("""
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ALTER TABLE messages ADD COLUMN reasoning TEXT")
    conn.execute("ALTER TABLE messages ADD COLUMN reasoning_details TEXT")
    conn.execute("ALTER TABLE messages ADD COLUMN codex_reasoning_items TEXT")
    conn.execute("ALTER TABLE sessions ADD COLUMN api_call_count INTEGER DEFAULT 0")
    conn.execute("UPDATE schema_version SET version = 30")
    print("migrating", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
""")


def test_an_upgrade_overtaken_by_a_newer_hermes_migrating_the_file_leaves_its_version_alone(tmp_path):
    """The upgrade read version 5; a newer Hermes, holding the write lock, migrated the file to 30 meanwhile.
    Writing 6 over 30 would make that Hermes run its migrations again on columns it already added."""
    path = load_fixture("v5", tmp_path)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    hermes = subprocess.Popen([sys.executable, "-c", NEWER_HERMES, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert hermes.stdout.readline().strip() == "migrating"
        upgrade = subprocess.Popen([sys.executable, "-m", "hermes_state_tools", "--db", str(path), "upgrade"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   stdin=subprocess.DEVNULL, env={**os.environ, "HERMES_HOME": "/nonexistent"})
        seen = upgrade.stderr.readline()
        assert "waiting for the database" in seen, seen
        hermes.communicate("commit\n", timeout=60)
        _out, err = upgrade.communicate(timeout=120)
    finally:
        hermes.kill()
    assert upgrade.returncode == 3, seen + err
    assert "schema version 30 is newer" in err
    with closing(sqlite3.connect(path)) as conn:
        assert read_version(conn) == 30


@pytest.mark.parametrize("command", ["upgrade", "import-jsonl", "merge"])
def test_an_upgrade_that_rebuilds_the_search_index_is_refused_while_the_big_file_is_open_elsewhere(
        tmp_path, monkeypatch, command):
    """Filling a recreated FTS index holds the write lock throughout, as rebuild-fts does: past
    LONG_LOCK_BYTES a running Hermes' appends would time out, so with the file open elsewhere the
    upgrade exits 75 before it backs anything up or writes. An import or merge, which upgrade the
    file first, too (they rebuilt it under the lock: a writer's append stalled 9.6 s at 218 MB)."""
    from hermes_state_tools.store import opening

    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "20260301_090000_3f9a2c7e.jsonl").write_text('{"role": "user", "content": "hello"}\n')
    with SessionDB(sources / "other.db") as other:
        other.create_session("o1", "cli")
        other.append_message("o1", "user", "from the other store")
    args = {"upgrade": [], "import-jsonl": [str(sources / "20260301_090000_3f9a2c7e.jsonl")],
            "merge": [str(sources / "other.db")]}[command]
    path = load_fixture("trap_no_fts", tmp_path)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(path)!r}); c.execute('SELECT COUNT(*) FROM sessions').fetchone()\n"
        "print('open', flush=True); time.sleep(60)")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        monkeypatch.setattr(opening, "LONG_LOCK_BYTES", 0)
        before = sorted(p.name for p in tmp_path.iterdir()), hashlib.sha256(path.read_bytes()).hexdigest()
        result = CliRunner().invoke(main, ["--db", str(path), command, *args])
        assert result.exit_code == 75 and "stop Hermes" in result.stderr, result.stderr
        assert (sorted(p.name for p in tmp_path.iterdir()), hashlib.sha256(path.read_bytes()).hexdigest()) == before
    finally:
        holder.kill()
        holder.wait()
    assert CliRunner().invoke(main, ["--db", str(path), command, *args]).exit_code == 0  # nobody else has it open
    with closing(sqlite3.connect(path)) as conn:
        _fts_in_sync(conn)


def test_sessions_sharing_a_title_stored_as_a_blob_are_numbered_like_text_ones(tmp_path):
    """Another program stored a title as a BLOB in two sessions: the unique-title step renames the later
    one (it crashed with a TypeError, exit 70, and the file could not be upgraded)."""
    path = load_fixture("v3", tmp_path)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("INSERT INTO sessions (id, source, started_at, title) VALUES "
                     "('b1', 'cli', 1, X'466978'), ('b2', 'cli', 2, X'466978')")
    result = CliRunner().invoke(main, ["--db", str(path), "upgrade", "--json", "--no-backup"])
    assert result.exit_code == 0, result.output
    assert {"session_id": "b2", "old": "Fix", "new": "Fix #2"} in json.loads(result.stdout)["renamed_titles"]
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT id, title FROM sessions WHERE id IN ('b1', 'b2') ORDER BY id").fetchall() == [
            ("b1", b"Fix"), ("b2", "Fix #2")]


@pytest.mark.parametrize("command", ["upgrade", "import-jsonl"])
def test_an_upgrade_the_lock_turns_away_leaves_no_backup_behind(tmp_path, monkeypatch, command):
    # exit 75 says nothing was changed, yet the verified state.db.bak-<timestamp> was left in the folder
    # (an import upgrades an older file first, after the same backup)
    from hermes_state_tools.core import connection

    monkeypatch.setattr(connection, "_BUSY_TIMEOUT_S", 0.01)
    monkeypatch.setattr(connection, "_WRITE_MAX_RETRIES", 2)
    transcript = tmp_path / "transcripts" / "20260301_090000_3f9a2c7e.jsonl"
    transcript.parent.mkdir()
    transcript.write_text('{"role": "user", "content": "hello"}\n')
    args = [str(transcript)] if command == "import-jsonl" else []
    path = load_fixture("v3", tmp_path)
    with closing(sqlite3.connect(path, isolation_level=None)) as writer:  # another process writing
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("BEGIN IMMEDIATE")
        before = sorted(p.name for p in tmp_path.iterdir()), hashlib.sha256(path.read_bytes()).hexdigest()
        result = CliRunner().invoke(main, ["--db", str(path), command, *args, "--no-progress"])
        assert result.exit_code == 75, result.output
        assert (sorted(p.name for p in tmp_path.iterdir()), hashlib.sha256(path.read_bytes()).hexdigest()) == before


def test_a_file_whose_version_row_runs_ahead_of_its_columns_is_backed_up_before_the_upgrade(tmp_path):
    # Read connections see a file through v6 views of its tables; the look for pending work asked the view
    # for the columns, found them all, and the upgrade that added them took no backup.
    path = load_fixture("v5", tmp_path)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE schema_version SET version = 6")
    result = CliRunner().invoke(main, ["--db", str(path), "upgrade", "--json"])
    assert result.exit_code == 0, result.output
    backup = json.loads(result.stdout)["backup"]
    assert backup and Path(backup).exists()
    with closing(sqlite3.connect(backup)) as conn:
        assert "reasoning" not in {row[1] for row in conn.execute("PRAGMA table_info(messages)")}


def test_an_upgrade_stopped_after_a_step_committed_keeps_its_backup(tmp_path, monkeypatch):
    # The backup was removed whenever the version row read the same after a failure; here the v6 columns
    # step committed under a version row that already said 6, and the last transaction was interrupted.
    from hermes_state_tools.upgrade import steps

    path = load_fixture("v5", tmp_path)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE schema_version SET version = 6")
        conn.execute("DROP TRIGGER messages_fts_insert")

    def interrupted(_conn):
        raise KeyboardInterrupt

    monkeypatch.setattr(steps, "restore_structure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        upgrade_file(path)
    [backup] = [p for p in tmp_path.iterdir() if ".bak-" in p.name]
    with closing(sqlite3.connect(backup)) as conn:
        assert "reasoning" not in {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
