"""Mistakes people make at the command line: one line on stderr, the right exit code, nothing created."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_state_tools import SessionDB
from hermes_state_tools.cli import main
from tests.helpers import hermes_state
from tests.schema_fixtures import load_fixture


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("s1", "cli")
        db.append_message("s1", "user", "disk usage is high")
    return path


@pytest.mark.parametrize(("args", "hint"), [
    (["--json", "status"], "go after the command"),
    (["search", "x", "--limit", "0", "--json"], None),
    (["sessions", "show"], None),
])
def test_usage_errors_are_one_line_and_exit_2(store: Path, args: list[str], hint: str | None) -> None:
    result = cli("--db", store, *args)
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("hermes-state: ")
    if hint:
        assert hint in result.stderr
    if "--json" in args:
        assert json.loads(result.stdout)["ok"] is False
    else:
        assert result.stdout == ""


def test_a_directory_as_db_is_a_usage_error(tmp_path: Path) -> None:
    result = cli("--db", tmp_path, "status", "--json")
    assert result.exit_code == 2 and json.loads(result.stdout) == {"ok": False, "error": result.stderr.strip()[14:]}


def test_import_of_a_missing_path_creates_nothing(tmp_path: Path) -> None:
    result = cli("--db", tmp_path / "new.db", "import-jsonl", tmp_path / "no-such-folder")
    assert result.exit_code == 2 and "does not exist" in result.stderr
    assert not (tmp_path / "new.db").exists()


def test_import_of_an_empty_folder_reports_it_and_creates_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = cli("--db", tmp_path / "new.db", "import-jsonl", tmp_path / "empty", "--json")
    assert result.exit_code == 0
    assert [p["kind"] for p in json.loads(result.stdout)["problems"]] == ["nothing_found"]
    assert not (tmp_path / "new.db").exists()


def test_search_without_an_index_says_how_to_fix_it(tmp_path: Path) -> None:
    path = load_fixture("trap_no_fts", tmp_path)
    result = cli("--db", path, "search", "disk")
    assert result.exit_code == 1 and "hermes-state repair" in result.stderr


def test_repair_that_changes_the_schema_takes_a_backup_first(tmp_path: Path) -> None:
    path = load_fixture("v2", tmp_path)
    result = cli("--db", path, "repair", "--json")
    doc = json.loads(result.stdout)
    backup = Path(doc["backup"])
    assert result.exit_code == 0 and backup.exists()
    assert sqlite3.connect(str(backup)).execute("SELECT version FROM schema_version").fetchone() == (2,)


def test_upgrade_report_says_ok(store: Path) -> None:
    doc = json.loads(cli("--db", store, "upgrade", "--json").stdout)
    assert doc["ok"] is True and doc["steps"] == [] and doc["backup"] is None


def test_repair_dry_run_never_opens_a_rollback_journal_file_for_writing(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("s1", "cli")
        db.append_message("s1", "user", "hello")
    conn = sqlite3.connect(str(path))
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("DROP TRIGGER messages_fts_update")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    result = cli("--db", path, "repair", "--dry-run", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["changes"]
    assert path.read_bytes() == before
    assert sqlite3.connect(str(path)).execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_markdown_export_survives_odd_tool_calls(store: Path) -> None:
    with SessionDB(store) as db:
        db.append_message("s1", "assistant", "", tool_calls=[{"function": "ls"}, "raw", {"function": {"name": "x"}}])
    result = cli("--db", store, "export", "--format", "md")
    assert result.exit_code == 0 and "Tool call `x`" in result.stdout and "Tool call `?`" in result.stdout


def test_every_command_module_registers_exactly_the_commands_the_lazy_map_names() -> None:
    import importlib

    from hermes_state_tools.cli import COMMAND_MODULES

    for module in set(COMMAND_MODULES.values()):
        importlib.import_module(f"hermes_state_tools.cli.{module}")
    assert set(main.commands) == set(COMMAND_MODULES)
    for name, module in COMMAND_MODULES.items():
        assert main.commands[name].callback.__module__ == f"hermes_state_tools.cli.{module}"


def test_a_command_loads_only_its_own_module() -> None:
    import subprocess
    import sys

    code = ("import sys; from hermes_state_tools.cli import main; cmd = main.get_command(None, 'check'); "
            "print(cmd.name, 'hermes_state_tools.cli.importing' in sys.modules, "
            "'hermes_state_tools.ingest.run' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["check", "False", "False"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names are bytes")
@pytest.mark.parametrize("args", [
    ["status"],                      # no such file: the error names it
    ["import-jsonl", "{home}"],      # a report naming files under the folder
    ["check"],
    ["merge", "{db}"],               # refused: the same file
    ["backup", "{folder}/copy.db"],
    ["search", "hello"],
])
def test_a_path_that_is_not_utf8_is_printed_not_crashed_on(tmp_path: Path, args: list[str]) -> None:
    # Python spells a file name's undecodable bytes as lone surrogates, which UTF-8 (and so JSON and a
    # strict stdout) cannot carry: every line and document spells them \xNN instead.
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    home = folder / "home" / "sessions"
    home.mkdir(parents=True)
    (home / "20260301_100000_aaaa0001.jsonl").write_text(
        '{"role": "user", "content": "hello", "timestamp": "2026-03-01T10:00:00"}\n')
    db = folder / "state.db"
    if args[0] != "status":
        assert hermes_state("--db", db, "import-jsonl", folder / "home").returncode == 0
    argv = [a.format(home=folder / "home", db=db, folder=folder) for a in args]
    for options in (["--json"], []):
        done = subprocess.run([sys.executable, "-m", "hermes_state_tools", "--db", db, *argv, *options],
                              capture_output=True)
        assert done.returncode in (0, 1, 2), done.stderr
        assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr
        out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")  # both valid UTF-8
        if options:
            json.loads(out)
        assert "\\udc" not in out + err
        if done.returncode == 2:
            assert "caf\\xe9" in err


def _digest(path: Path) -> bytes:
    return path.read_bytes()


@pytest.mark.parametrize("target", ["{db}", "{db}-wal", "{db}-shm", "{db}-journal", "{folder}/other.db",
                                    "{folder}/link.jsonl"])
def test_export_never_writes_over_a_database_or_a_name_sqlite_takes_for_its_files(store: Path, target: str) -> None:
    other = store.parent / "other.db"
    with SessionDB(other) as db:
        db.create_session("o1", "cli")
    (store.parent / "link.jsonl").symlink_to(store)  # the database under another name
    before = {p: _digest(p) for p in (store, other)}
    output = Path(target.format(db=store, folder=store.parent))
    result = cli("--db", store, "export", "-o", output)
    assert result.exit_code == 2 and ("refusing" in result.stderr or "choose another name" in result.stderr)
    assert {p: _digest(p) for p in before} == before
    assert not Path(f"{store}-journal").exists() and SessionDB(store).message_count() == 1


def test_export_writes_into_a_pipe_and_to_stdout_for_a_dash(store: Path) -> None:
    fifo = store.parent / "out.jsonl"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    result = cli("--db", store, "export", "-o", fifo)
    received = reader.communicate(timeout=30)[0]
    assert result.exit_code == 0 and b"disk usage is high" in received
    assert fifo.is_fifo()  # written into, not replaced by a regular file
    dash = cli("--db", store, "export", "-o", "-")
    assert dash.exit_code == 0 and "disk usage is high" in dash.stdout and not (Path.cwd() / "-").exists()


@pytest.mark.parametrize("command", ["backup", "recover"])
@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_a_new_file_named_as_a_database_s_own_is_refused(store: Path, command: str, suffix: str) -> None:
    # SQLite takes state.db-wal for state.db's write-ahead log: the next program that opened
    # state.db would replay or delete a backup written there.
    dest = Path(f"{store}{suffix}")
    result = cli("--db", store, command, dest)
    assert result.exit_code == 2 and "choose another name" in result.stderr, result.stderr
    assert not dest.exists()


def test_reports_show_a_stored_time_no_calendar_date_can_show(store: Path) -> None:
    # Another program (or an older import) may have stored 1e20 or a time in milliseconds: every
    # report still prints, showing the number itself.
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE sessions SET started_at = 1e20, ended_at = -1e20")
        conn.execute("UPDATE messages SET timestamp = 1773168132000")
    for args in (["status"], ["sessions", "list"], ["sessions", "show", "s1"], ["sessions", "lineage", "s1"],
                 ["search", "disk"], ["export", "--format", "md"], ["sessions", "stats"]):
        result = cli("--db", store, *args)
        assert result.exit_code == 0, (args, result.stderr)
    assert "1e+20 (no calendar date)" in cli("--db", store, "sessions", "show", "s1").stdout


@pytest.mark.parametrize("command", [["import-jsonl", "{home}"], ["import-jsonl", "{home}", "--dry-run"],
                                     ["merge", "{other}"]])
def test_a_store_that_is_a_pipe_or_a_device_is_refused_as_no_file(store: Path, tmp_path: Path,
                                                                  command: list[str]) -> None:
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    home = Path(__file__).resolve().parent.parent / "fixtures" / "legacy" / "home"
    for target in (fifo, Path("/dev/zero")):
        result = cli("--db", target, *[a.format(home=home, other=store) for a in command])
        assert result.exit_code == 2 and "not a file" in result.stderr, (target, result.stderr)
    assert fifo.is_fifo()



def test_a_name_ending_in_wal_beside_a_file_that_is_no_database_is_allowed(store: Path) -> None:
    (store.parent / "notes").write_text("my notes")
    (store.parent / "folder").mkdir()
    for name in ("notes-wal", "folder-journal", "nothing-shm"):
        result = cli("--db", store, "export", "-o", store.parent / name)
        assert result.exit_code == 0 and b"disk usage" in (store.parent / name).read_bytes(), result.stderr


def test_a_stored_time_no_calendar_shows_survives_an_export_round_trip(store: Path, tmp_path: Path) -> None:
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE messages SET timestamp = 1767600000123.0")
    first = tmp_path / "first.jsonl"
    assert cli("--db", store, "export", "-o", first).exit_code == 0
    again = tmp_path / "again.db"
    imported = cli("--db", again, "import-jsonl", first, "--json")
    assert imported.exit_code == 0 and json.loads(imported.stdout)["problem_counts"] == {}, imported.stdout
    second = tmp_path / "second.jsonl"
    assert cli("--db", again, "export", "-o", second).exit_code == 0
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.parametrize("args", [["sessions", "show", "s1"], ["sessions", "list"], ["export"]])
def test_text_that_is_not_utf8_is_a_damaged_file_not_a_bug(tmp_path: Path, args: list[str]) -> None:
    db_path = tmp_path / "state.db"
    with SessionDB(db_path) as db:
        db.create_session("s1", "cli")
        db.append_message("s1", "user", "hello")
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE messages SET content = CAST(x'68ff6c6c6f' AS TEXT)")  # as a destroyed page leaves it
    conn.close()
    result = CliRunner().invoke(main, ["--db", str(db_path), *args])
    assert result.exit_code == 65, result.output
    assert "not UTF-8" in result.stderr and "recover" in result.stderr and "internal error" not in result.stderr
