"""`hermes-state import-jsonl`: the report, exit codes, bad input, --dry-run, refused databases, profiles."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import file_digests, hermes_state
from import_helpers import (
    HOME_SESSIONS,
    LEGACY,
    LEGACY_HOME,
    cli,
    content,
    fts_in_sync,
    import_json,
    messages,
    query,
    sessions,
    write_corpus,
    write_jsonl,
)
from schema_fixtures import load_fixture

from hermes_state_tools import SessionDB

COUNTS = ("sessions_created", "sessions_updated", "messages_imported", "messages_skipped_duplicate", "files_read")
GOOD = LEGACY / "jsonl" / "plain_early.jsonl"  # 3 messages, imported next to every bad file


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def counts(doc: dict) -> tuple[int, ...]:
    return tuple(doc[key] for key in COUNTS)


def located(doc: dict, path: Path) -> list[tuple[int | None, str]]:
    """The (line, kind) of each problem the report gives for one file."""
    return sorted(((p["line"], p["kind"]) for p in doc["problems"] if p["file"] == str(path)),
                  key=lambda p: (p[0] or 0, p[1]))


def test_json_report_has_the_contract_keys_and_one_entry_per_problem(db_path):
    code, doc = import_json(db_path, LEGACY_HOME)
    assert code == 1  # the truncated last line could not be stored
    assert {"sessions_created", "sessions_updated", "messages_imported", "messages_skipped_duplicate", "files_read",
            "dry_run", "problems"} <= set(doc)
    assert counts(doc) == (5, 0, 26, 4, 8) and doc["dry_run"] is False
    assert all(set(p) == {"file", "line", "kind", "detail", "failure"} and p["detail"] for p in doc["problems"])
    assert [p["kind"] for p in doc["problems"] if p["failure"]] == ["truncated_line"]
    assert located(doc, HOME_SESSIONS / "20260310_184211_a1c4e9b2.jsonl") == [(8, "blank_line"),
                                                                            (11, "truncated_line")]


def test_human_report_names_the_counts_and_each_problem(db_path):
    result = cli("--db", db_path, "import-jsonl", LEGACY_HOME, "--no-progress")
    assert result.exit_code == 1
    assert ("imported 26 messages: 5 sessions created, 0 updated; 4 already present (in the database or in "
            "another copy of the same session); 8 files read") in result.stdout
    assert "1 record could not be stored (exit code 1)" in result.stdout
    assert "  FAILED truncated_line x1: " in result.stdout  # failures first, by kind, then the notices
    assert f"{HOME_SESSIONS / '20260310_184211_a1c4e9b2.jsonl'}:11: last line is cut off" in result.stdout
    assert result.stdout.index("FAILED") < result.stdout.index("notice blank_line")
    assert "run again with --json" in result.stdout


BAD_INPUTS = {
    # file: (exit code, the (line, kind) problems it reports, messages stored from it or None for no session)
    "truncated_last.jsonl": (1, [(3, "truncated_line")], 2),
    "invalid_middle.jsonl": (1, [(2, "invalid_json")], 2),
    "no_role.jsonl": (1, [(2, "missing_role"), (3, "missing_role"), (4, "missing_role")], 2),
    "not_object.jsonl": (1, [(2, "not_object"), (3, "not_object"), (4, "not_object"), (5, "not_object")], 2),
    "blank_lines.jsonl": (0, [(2, "blank_line"), (3, "blank_line"), (5, "blank_line")], 2),
    "cp1252_crlf.jsonl": (0, [(1, "decoded_cp1252")], 2),
    "wrong_types.jsonl": (0, [(1, "wrong_type"), (2, "bad_timestamp"), (2, "wrong_type"), (3, "wrong_type"),
                              (3, "wrong_type"), (3, "wrong_type")], 3),
    "duplicate_block.jsonl": (0, [(5, "duplicate_block"), (11, "duplicate_block")], 6),
    "empty.jsonl": (0, [(None, "empty_file")], None),  # no index entry: reported and skipped
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_reported_and_never_stops_the_rest(db_path, name):
    exit_code, expected, stored = BAD_INPUTS[name]
    bad = LEGACY / "jsonl" / name
    code, doc = import_json(db_path, bad, GOOD)
    assert code == exit_code
    assert located(doc, bad) == expected
    assert len(doc["problems"]) == len(expected)  # nothing reported against the good file
    assert all(isinstance(p["detail"], str) and p["detail"] for p in doc["problems"])
    assert [m["content"] for m in messages(db_path, "plain_early")] == ["hello", "Hi! How can I help?",
                                                                        "Ünïcödé ✓ 你好 🙂"]
    if stored is None:
        assert set(sessions(db_path)) == {"plain_early"}
    else:
        assert len(messages(db_path, bad.stem)) == stored == doc["messages_imported"] - 3


def test_cp1252_text_is_decoded_not_mangled(db_path):
    import_json(db_path, LEGACY / "jsonl" / "cp1252_crlf.jsonl")
    assert [m["content"] for m in messages(db_path, "cp1252_crlf")] == ["Café crawl — où?", "plain ascii"]


def test_a_truncated_index_keeps_its_complete_entries(db_path):
    index = LEGACY / "index_truncated" / "sessions.json"
    code, doc = import_json(db_path, index, LEGACY / "jsonl" / "meta_tools.jsonl", GOOD)
    assert code == 1
    assert located(doc, index) == [(None, "truncated_index")]
    rows = sessions(db_path)
    assert set(rows) == {"meta_tools", "plain_early"}
    assert (rows["meta_tools"]["user_id"], rows["meta_tools"]["input_tokens"]) == ("5551234567", 100)


def test_empty_transcript_with_an_index_entry_is_only_notices(tmp_path, db_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in ("sessions.json", "20260401_090000_deadbeef.jsonl"):
        shutil.copy(HOME_SESSIONS / name, folder / name)
    code, doc = import_json(db_path, folder)
    assert code == 0
    # The index's other entries name no transcript here: each is said, none becomes a session.
    index = json.loads((folder / "sessions.json").read_text())
    others = sorted(e["session_id"] for e in index.values() if isinstance(e, dict)
                    and e["session_id"] != "20260401_090000_deadbeef")
    assert [(p["line"], p["kind"]) for p in doc["problems"] if p["kind"] != "index_only"] == [
        (None, "empty_file"), (None, "no_messages")]
    listed = [p for p in doc["problems"] if p["kind"] == "index_only"]
    assert sorted(p["detail"].split("session ")[1].split(",")[0] for p in listed) == others
    assert {p["file"] for p in listed} == {str(folder / "sessions.json")}
    assert counts(doc) == (0, 0, 0, 0, 2)
    assert list(sessions(db_path)) == []


def test_a_rerun_reports_the_same_bad_records_and_fails_again(db_path):
    first_code, first = import_json(db_path, LEGACY_HOME, LEGACY / "jsonl")
    second_code, second = import_json(db_path, LEGACY_HOME, LEGACY / "jsonl")
    assert first_code == second_code == 1
    assert second["problems"] == first["problems"]
    assert (second["sessions_created"], second["messages_imported"]) == (0, 0)


def test_dry_run_reports_what_the_real_run_does_and_creates_nothing(db_path):
    code, dry = import_json(db_path, LEGACY_HOME, LEGACY / "jsonl", options=["--dry-run"])
    assert not db_path.exists() and list(db_path.parent.glob("state.db*")) == []
    real_code, real = import_json(db_path, LEGACY_HOME, LEGACY / "jsonl")
    assert (dry["dry_run"], real["dry_run"]) == (True, False)
    assert counts(dry) == counts(real) and code == real_code == 1
    assert dry["problems"] == real["problems"]


def test_dry_run_on_an_existing_database_changes_no_byte(db_path):
    import_json(db_path, LEGACY / "jsonl")
    main_file = sha256(db_path)
    _, closed = import_json(db_path, LEGACY_HOME, options=["--dry-run"])
    assert sha256(db_path) == main_file
    with SessionDB(db_path) as store:  # Hermes is running and its latest write is still in the WAL
        store.create_session("20260519_140233_c0ffee12", "discord")
        store.append_message("20260519_140233_c0ffee12", "user", "[ramon] ship it to prod then")
        before = file_digests(db_path)
        assert set(before) == {"state.db", "state.db-wal"}
        _, dry = import_json(db_path, LEGACY_HOME, LEGACY / "jsonl", options=["--dry-run"])
        assert file_digests(db_path) == before
    _, real = import_json(db_path, LEGACY_HOME, LEGACY / "jsonl")
    assert counts(dry) == counts(real) and counts(closed)[:4] == (5, 0, 26, 4)
    assert real["sessions_updated"] == 1 and real["messages_skipped_duplicate"] > 4


def test_dry_run_matches_the_real_run_when_a_second_process_reads(tmp_path, db_path):
    written = write_corpus(tmp_path / "corpus", 80, 12)  # enough files for the two-process reader
    for name in sorted(written)[:20]:  # a first import brought some of them in already
        shutil.copy(tmp_path / "corpus" / f"{name}.jsonl", tmp_path / f"{name}.jsonl")
    import_json(db_path, *(tmp_path / f"{name}.jsonl" for name in sorted(written)[:20]))
    with SessionDB(db_path) as store:  # and Hermes wrote a new turn into one of them
        store.append_message(sorted(written)[3], "user", "one more thing")
    _, dry = import_json(db_path, tmp_path / "corpus", options=["--dry-run"])
    _, real = import_json(db_path, tmp_path / "corpus")
    assert counts(dry) == counts(real) == (60, 0, 60 * 13, 20 * 13, 80)


def run_module(*args: object) -> subprocess.CompletedProcess[str]:
    """A real `python -m hermes_state_tools` process."""
    return subprocess.run([sys.executable, "-m", "hermes_state_tools", *map(str, args)], capture_output=True,
                          text=True, timeout=60)


def test_a_file_that_is_not_sqlite_is_refused_with_one_line(tmp_path):
    junk = tmp_path / "notes.db"
    junk.write_bytes(b"these are my notes, not a database\n" * 50)
    before = sha256(junk)
    done = run_module("--db", junk, "import-jsonl", LEGACY_HOME, "--no-progress")
    assert done.returncode == 2
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1 and str(junk) in done.stderr
    assert "Traceback" not in done.stderr and sha256(junk) == before
    result = cli("--db", junk, "import-jsonl", LEGACY_HOME, "--json")
    error = done.stderr.removeprefix("hermes-state: ").strip()
    assert result.exit_code == 2 and json.loads(result.stdout) == {"ok": False, "error": error}


def test_a_zero_byte_database_file_becomes_a_new_database(db_path):
    db_path.write_bytes(b"")
    code, doc = import_json(db_path, GOOD)
    assert code == 0 and doc["sessions_created"] == 1
    assert len(messages(db_path, "plain_early")) == 3


@pytest.mark.parametrize("options", [[], ["--dry-run"]])
def test_a_newer_schema_is_refused_and_left_unchanged(tmp_path, options):
    path = load_fixture("trap_version_31", tmp_path)
    before = sha256(path)
    result = cli("--db", path, "import-jsonl", LEGACY_HOME, *options, "--no-progress")
    assert result.exit_code == 3
    assert len(result.stderr.splitlines()) == 1 and "version 31" in result.stderr
    assert sha256(path) == before and not path.with_name(path.name + "-wal").exists()


@pytest.mark.parametrize("name", ["v1", "v5", "trap_no_fts"])
def test_an_older_schema_is_upgraded_after_a_backup_and_dry_run_leaves_it_alone(tmp_path, name):
    path = load_fixture(name, tmp_path)
    before = sha256(path)
    rows = content(path)
    _, dry = import_json(path, LEGACY_HOME, options=["--dry-run"])
    assert sha256(path) == before and dry["backup"] is None
    _, real = import_json(path, LEGACY_HOME)
    assert counts(dry) == counts(real) == (5, 0, 26, 4, 8)
    assert content(Path(real["backup"])) == rows
    assert len(sessions(path)) == len(rows["sessions"]) + 5 and fts_in_sync(path)


@pytest.mark.parametrize("options", [[], ["--dry-run"]])
def test_an_empty_folder_against_an_older_schema_takes_no_backup_and_changes_nothing(tmp_path, options):
    # Nothing found means nothing is written: no `.bak-*` beside the file and no upgrade (it used to
    # back up before looking for files, then return without upgrading).
    path = load_fixture("v5", tmp_path)
    before = file_digests(path)
    (tmp_path / "empty").mkdir()
    code, doc = import_json(path, tmp_path / "empty", options=options)
    assert code == 0 and [p["kind"] for p in doc["problems"]] == ["nothing_found"]
    assert doc["backup"] is None and file_digests(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", path.name]


@pytest.mark.parametrize("fixture, code, says", [("trap_version_31", 3, "version 31"), (None, 2, "no Hermes schema")])
def test_an_empty_folder_against_a_refused_file_is_still_refused(tmp_path, fixture, code, says):
    if fixture is None:
        path = tmp_path / "other.db"
        with contextlib.closing(sqlite3.connect(path)) as conn:
            conn.execute("CREATE TABLE notes (body TEXT)")
    else:
        path = load_fixture(fixture, tmp_path)
    before = file_digests(path)
    (tmp_path / "empty").mkdir()
    result = cli("--db", path, "import-jsonl", tmp_path / "empty", "--no-progress")
    assert result.exit_code == code and len(result.stderr.splitlines()) == 1 and says in result.stderr
    assert file_digests(path) == before


def test_unknown_time_zone_is_a_usage_error(db_path):
    result = cli("--db", db_path, "import-jsonl", GOOD, "--tz", "Mars/Olympus_Mons")
    assert result.exit_code == 2 and "Mars/Olympus_Mons" in result.stderr
    assert not db_path.exists()


def test_source_option_is_only_the_fallback(db_path):
    snapshots = LEGACY / "snapshots"
    import_json(db_path, GOOD, LEGACY / "jsonl" / "meta_tools.jsonl", snapshots, options=["--source", "myhost"])
    rows = sessions(db_path)
    assert {sid: rows[sid]["source"] for sid in ("plain_early", "meta_tools", "older", "newest", "mismatch")} == {
        "plain_early": "myhost", "meta_tools": "telegram", "older": "cli", "newest": "telegram", "mismatch": "myhost"}


def test_profiles_are_not_mixed_in_and_the_report_says_how_to_import_each(tmp_path, db_path):
    home = tmp_path / "home"
    shutil.copytree(LEGACY / "home", home)
    code, doc = import_json(db_path, home)
    assert code == 0
    assert list(sessions(db_path)) == ["20260201_090000_aaaaaaaa"]
    [skipped] = [p for p in doc["problems"] if p["kind"] == "profile_skipped"]
    profile = home / "profiles" / "work"
    assert (skipped["file"], skipped["line"]) == (str(profile), None)
    command = skipped["detail"].split(": ", 1)[1]
    assert command == f"hermes-state --db {profile / 'state.db'} import-jsonl {profile}"
    argv = shlex.split(command)
    assert cli(*argv[1:], "--no-progress").exit_code == 0  # the suggested command works as printed
    assert list(sessions(profile / "state.db")) == ["20260202_090000_bbbbbbbb"]
    noise = {Path(p["file"]).name for p in doc["problems"] if p["kind"] == "skipped_file"}
    assert {"request_dump_20260201.json", ".sessions_abc.tmp", "notes.txt", "payload_20260201.jsonl"} <= noise


def _on_a_terminal(*args: object) -> tuple[int, str, str]:
    """Run `hermes-state ARGS` with stderr on a pseudo-terminal: exit code, stdout, what the terminal showed."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))  # tqdm draws to the width
    with subprocess.Popen([sys.executable, "-m", "hermes_state_tools", *map(str, args)], stdout=subprocess.PIPE,
                          stderr=follower, text=True) as process:
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            shown += chunk
        out = process.stdout.read() if process.stdout else ""
    os.close(leader)
    return process.returncode, out, shown.decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_bars_show_on_a_terminal_and_never_on_a_pipe(tmp_path):
    code, out, shown = _on_a_terminal("--db", tmp_path / "state.db", "import-jsonl", LEGACY_HOME)
    assert code == 1 and "sessions created" in out  # the sample's truncated line: exit 1 by design
    assert "files: 100%" in shown and "msg/s" in shown  # files with ETA, messages with rate
    code, out, shown = _on_a_terminal("--db", tmp_path / "state.db", "export", "-o", tmp_path / "all.jsonl")
    assert code == 0 and "sessions: 100%" in shown
    piped = run_module("--db", tmp_path / "again.db", "import-jsonl", LEGACY_HOME)
    assert "files:" not in piped.stderr and "msg/s" not in piped.stderr


def test_a_dry_run_names_its_sessions_and_the_upgrade_it_would_make(tmp_path):
    db = load_fixture("v5", tmp_path)
    before = file_digests(db)
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "20260301_101010_4b4b4b4b.jsonl").write_text('{"role": "user", "content": "x"}\n')
    code, doc = import_json(db, folder, options=["--dry-run"])
    assert code == 0 and file_digests(db) == before
    assert (doc["would_create"], doc["would_update"]) == (["20260301_101010_4b4b4b4b"], [])
    assert doc["would_upgrade"] == {"from": 5, "to": 6, "backup_first": f"{db}.bak-<timestamp>"}
    human = cli("--db", db, "import-jsonl", folder, "--dry-run", "--no-progress").stdout
    assert "would create: 20260301_101010_4b4b4b4b" in human and "take a backup first" in human


def test_a_dry_run_lists_each_session_once():
    from hermes_state_tools.ingest.stats import ImportTally
    from hermes_state_tools.ingest.writing.writer import Written

    stats = ImportTally(dry_run=True)
    for written in (Written("a", True, False, 1, 0, ()), Written("a", False, True, 1, 0, ()),
                    Written("b", False, True, 1, 0, ()), Written("b", False, True, 2, 0, ())):
        stats.count(written)
    doc = stats.report().as_dict()
    assert (doc["would_create"], doc["would_update"]) == (["a"], ["b"])


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names are bytes")
@pytest.mark.parametrize("files", [0, 70])  # in this process, and with a reader process
def test_a_file_name_that_is_not_utf8_imports_once_and_is_reported_printably(tmp_path: Path, files: int) -> None:
    # The id the name gives holds lone surrogates (Python's spelling of undecodable bytes); the
    # store keeps U+FFFD in their place, so the next import must look the session up that way.
    folder = tmp_path / "sessions"
    write_corpus(folder, files, 3)
    name = os.fsdecode(b"bad\xff\xfe_1.jsonl")
    write_jsonl(folder / name, [{"role": "user", "content": "hello there", "timestamp": 1772359200.0}])
    db = tmp_path / "state.db"
    reports = []
    for options in ([], [], ["--dry-run"]):  # as the program runs them, in this process (the reports)
        done = hermes_state("--db", db, "import-jsonl", folder, "--json", "--no-progress", *options)
        assert done.returncode == 0, done.stderr
        reports.append(json.loads(done.stdout))
    first, again, dry = reports
    assert first["sessions_created"] == files + 1 and first["messages_imported"] == files * 3 + 1
    for later in (again, dry):
        assert later["sessions_created"] == later["messages_imported"] == 0
        assert later["messages_skipped_duplicate"] == files * 3 + 1
    printed = f"{folder}/bad\\xff\\xfe_1.jsonl"  # the bytes spelled as Python's stderr spells them
    for report in reports:
        assert [(p["kind"], p["file"]) for p in report["problems"]] == [("lone_surrogate", printed)]
    assert query(db, "SELECT id FROM sessions WHERE id LIKE 'bad%'") == [{"id": "bad\ufffd\ufffd_1"}]
    human = run_module("--db", db, "import-jsonl", folder, "--no-progress")  # a real process's stdout
    assert human.returncode == 0 and "bad\\xff\\xfe_1.jsonl" in human.stdout, human.stderr


@pytest.mark.parametrize("dry_run, others", [(False, 0), (True, 0), (False, 70)])  # 70: a reader process
def test_a_file_whose_session_holds_no_messages_is_reported_not_dropped_silently(tmp_path: Path, dry_run: bool,
                                                                                  others: int) -> None:
    folder = tmp_path / "sessions"
    write_corpus(folder, others, 2)
    write_jsonl(folder / "20261231_100000_ffff0001.jsonl", [{"role": "session_meta", "model": "m"}])
    (folder / "session_20261231_100000_ffff0002.json").write_text(
        json.dumps({"session_id": "20261231_100000_ffff0002", "system_prompt": "be kind", "messages": []}))
    (folder / "20261231_100000_ffff0003.jsonl").write_bytes(b"")  # said once, as an empty file
    code, report = import_json(tmp_path / "state.db", folder, options=["--dry-run"] if dry_run else [])
    assert code == 0 and report["sessions_created"] == others
    assert sorted((Path(p["file"]).name, p["kind"]) for p in report["problems"]) == [
        ("20261231_100000_ffff0001.jsonl", "no_messages"), ("20261231_100000_ffff0003.jsonl", "empty_file"),
        ("session_20261231_100000_ffff0002.json", "no_messages")]


def test_the_report_says_when_the_import_made_the_database(tmp_path):
    # A typo'd --db would otherwise pass unseen: a new empty-looking store beside the real one.
    db = tmp_path / "typo.db"
    code, dry = import_json(db, GOOD, options=["--dry-run"])
    assert code == 0 and dry["database_created"] == str(db) and not db.exists()
    code, doc = import_json(db, GOOD)
    assert code == 0 and doc["database_created"] == str(db) and db.exists()
    again_code, again = import_json(db, GOOD)
    assert again_code == 0 and again["database_created"] is None
    human = cli("--db", tmp_path / "other.db", "import-jsonl", GOOD, "--no-progress")
    assert human.exit_code == 0 and f"created a new database: {tmp_path / 'other.db'}" in human.stdout


def test_a_new_file_in_schema_6s_layout_says_what_a_later_hermes_does_to_it_and_one_made_with_schema_does_not(tmp_path):
    # A Hermes of schema 23 or later damages a v6 file's search index on first open (fixtures/hermes-late).
    made_at_6 = cli("--db", tmp_path / "six.db", "import-jsonl", GOOD, "--no-progress")
    assert made_at_6.exit_code == 0 and "a Hermes of schema 23 or later damages" in made_at_6.stdout
    assert "--schema 17" in made_at_6.stdout
    made_at_17 = cli("--db", tmp_path / "later.db", "import-jsonl", GOOD, "--no-progress", "--schema", "17")
    assert made_at_17.exit_code == 0 and "created a new database" in made_at_17.stdout
    assert "schema 23" not in made_at_17.stdout
    into_existing = cli("--db", tmp_path / "six.db", "import-jsonl", GOOD, "--no-progress")
    assert into_existing.exit_code == 0 and "schema 23" not in into_existing.stdout


def test_a_full_disk_in_the_middle_of_an_import_is_exit_74_and_what_was_committed_stays_whole(tmp_path, monkeypatch):
    """SQLITE_FULL rolls the whole transaction back, the session's savepoint with it: the writer must not
    take it for one session's bad value (it tried ROLLBACK TO a savepoint gone: exit 70)."""
    from hermes_state_tools.ingest import run

    class FillingDisk(SessionDB):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            pages = self._conn.execute("PRAGMA page_count").fetchone()[0]
            self._conn.execute(f"PRAGMA max_page_count = {pages + 40}")  # room for a few batches only

    monkeypatch.setattr(run, "SessionDB", FillingDisk)
    db = tmp_path / "state.db"
    SessionDB(db).close()
    write_corpus(tmp_path / "sessions", 300, 8, big=True)
    result = cli("--db", db, "import-jsonl", tmp_path / "sessions", "--no-progress")
    assert result.exit_code == 74, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    with SessionDB(db) as store:
        counts = {row[0] for row in store._conn.execute(
            "SELECT COUNT(m.id) FROM sessions s LEFT JOIN messages m ON m.session_id = s.id GROUP BY s.id")}
        assert [tuple(r) for r in store._conn.execute("PRAGMA integrity_check")] == [("ok",)]
    assert counts <= {8}  # each session stored whole or not at all
