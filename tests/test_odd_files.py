"""Odd places and odd files: read-only folders (as an unprivileged process), no files left beside a
database by read commands, newer schemas read but never written, a full disk, the SQLite in use."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from damage import build_healthy, cli, cli_json
from helpers import hermes_state
from page_damage import build_db, destroy_btree, listing, sha256
from schema_fixtures import load_fixture

from hermes_state_tools import SessionDB
from hermes_state_tools.core import sqlite_info

ROOT = Path(__file__).resolve().parent.parent
READ_COMMANDS = [["status"], ["check"], ["check", "--quick"], ["export"], ["sessions", "list"],
                 ["sessions", "stats"], ["search", "deploy"]]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def run(*args: object, user: list[str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`hermes-state ARGS` as another `user` (a real process of that uid), else in this process."""
    if user is None:
        return hermes_state(*args, env={"HERMES_HOME": "/nonexistent"}, cwd=cwd or Path("/"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HERMES_HOME": "/nonexistent"}
    return subprocess.run([*(user or []), sys.executable, "-m", "hermes_state_tools", *map(str, args)],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env,
                          cwd=cwd or "/")


# Several commands in one process of another uid: each as `hermes-state` runs it (click's main, its exit
# code, stdout and stderr apart; an exception the command line let through is its traceback on stderr and
# exit 1, as the real program's), where one interpreter per command would take most of the test's time.
_COMMANDS_IN_ONE_PROCESS = """
import json, sys, traceback
from click.testing import CliRunner
from hermes_state_tools.cli import main
answers = []
for args in json.loads(sys.argv[1]):
    result = CliRunner().invoke(main, args, prog_name="hermes-state")
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    answers.append([result.exit_code, result.stdout, stderr])
print(json.dumps(answers))
"""


def run_commands(*commands: list[object], user: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """`hermes-state ARGS` for each ARGS of `commands` in turn, in one real process of `user`'s uid."""
    argv = [[str(a) for a in args] for args in commands]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HERMES_HOME": "/nonexistent"}
    done = subprocess.run([*user, sys.executable, "-c", _COMMANDS_IN_ONE_PROCESS, json.dumps(argv)],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, env=env, cwd="/")
    assert done.returncode == 0, done.stderr
    return [subprocess.CompletedProcess(args, code, out, err) for args, (code, out, err)
            in zip(argv, json.loads(done.stdout), strict=True)]


def _can_run_as_nobody() -> str | None:
    if shutil.which("setpriv") is None:
        return "setpriv is not installed"
    if os.geteuid() != 0:
        return "changing to uid 65534 needs root"
    probe = subprocess.run([*NOBODY, sys.executable, "-c", "import click"], capture_output=True, timeout=60)
    return None if probe.returncode == 0 else "uid 65534 cannot run this Python"


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A folder outside pytest's private tmp (which uid 65534 cannot enter)."""
    folder = Path(tempfile.mkdtemp(prefix="hermes-state-ro-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in (folder, *folder.rglob("*")):
            with contextlib.suppress(OSError):
                path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(folder, ignore_errors=True)


def _with_live_wal(path: Path, folder: Path, keep_shm: bool) -> None:
    """Copy db + -wal (+ -shm) as they are while a writer has uncheckpointed rows in the WAL."""
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("INSERT INTO sessions (id, source, started_at) VALUES ('in-wal', 'cli', 1.0)")
        for suffix in ("", "-wal", "-shm") if keep_shm else ("", "-wal"):
            shutil.copyfile(f"{path}{suffix}", folder / f"state.db{suffix}")
    finally:
        writer.close()


@pytest.mark.parametrize("layout", ["clean", "wal+shm", "wal only"])
def test_a_read_only_folder_is_readable_by_every_read_command_as_nobody(tmp_path, public_dir, layout):
    reason = _can_run_as_nobody()
    if reason:
        pytest.skip(reason)
    source = build_healthy(tmp_path / "state.db")
    folder = public_dir / "snapshot"
    folder.mkdir()
    if layout == "clean":
        shutil.copyfile(source, folder / "state.db")
    else:
        _with_live_wal(source, folder, keep_shm=layout == "wal+shm")
    for path in folder.iterdir():
        path.chmod(0o444)
    folder.chmod(0o555)
    before = {p.name: sha256(p) for p in folder.iterdir()}
    out = public_dir / "out"
    out.mkdir()
    out.chmod(0o777)
    db = ["--db", folder / "state.db"]
    *reads, status, backup = run_commands(*([*db, *args] for args in READ_COMMANDS), [*db, "status", "--json"],
                                          [*db, "backup", out / "copy.db"], user=NOBODY)
    for result in reads:
        assert result.returncode == 0, (result.args, result.stderr)
        assert "readonly" not in result.stderr
    assert json.loads(status.stdout)["sessions"] == (4 if layout == "clean" else 5)  # the WAL's committed row is seen
    assert backup.returncode == 0, backup.stderr
    assert {p.name: sha256(p) for p in folder.iterdir()} == before


def _store_for_nobody(public_dir: Path, store: Path, file_mode: int, folder_mode: int) -> Path:
    """`store` copied into a folder of `public_dir`, with these modes, for a run as uid 65534 (the test
    is skipped where that cannot be)."""
    reason = _can_run_as_nobody()
    if reason:
        pytest.skip(reason)
    folder = public_dir / "store"
    folder.mkdir()
    shutil.copyfile(store, folder / "state.db")
    (folder / "state.db").chmod(file_mode)
    folder.chmod(folder_mode)
    return folder / "state.db"


@pytest.mark.parametrize("command", ["import-jsonl", "merge", "upgrade"])
def test_an_import_into_a_database_this_user_cannot_write_is_refused_up_front(tmp_path, public_dir, command):
    # SQLite opened it read-only, left a -wal and -shm and failed the first write ("attempt to write
    # a readonly database"): the refusal now comes before anything is opened for writing.
    # (the upgrade left a .bak, a -wal and -shm, and took the others' read bits off: 0444 -> 0400)
    store = load_fixture("v1", tmp_path) if command == "upgrade" else build_healthy(tmp_path / "state.db")
    # the folder takes new files: SQLite would have left its -wal and -shm in it
    folder = _store_for_nobody(public_dir, store, 0o444, 0o777).parent
    other = public_dir / "other.db"
    shutil.copyfile(build_healthy(tmp_path / "other.db"), other)
    before = {p.name: sha256(p) for p in folder.iterdir()}
    transcript = public_dir / "20260301_090000_3f9a2c7e.jsonl"
    shutil.copyfile(ROOT / "fixtures" / "legacy" / "jsonl" / "plain_early.jsonl", transcript)
    source = [] if command == "upgrade" else [transcript if command == "import-jsonl" else other]
    result = run("--db", folder / "state.db", command, *source, "--no-progress", user=NOBODY)
    assert result.returncode == 2 and "cannot be written" in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert {p.name: sha256(p) for p in folder.iterdir()} == before
    assert (folder / "state.db").stat().st_mode & 0o777 == 0o444


@pytest.mark.parametrize("writable_file", [False, True])
def test_upgrade_of_a_current_file_this_user_cannot_write_has_nothing_to_do(tmp_path, public_dir, writable_file):
    # Nothing is pending, so nothing would be written: the read-only folder is no reason to refuse (it was 2).
    store = build_healthy(tmp_path / "state.db")
    folder = _store_for_nobody(public_dir, store, 0o666 if writable_file else 0o444, 0o555).parent
    before = {p.name: sha256(p) for p in folder.iterdir()}
    result, as_json = run_commands(["--db", folder / "state.db", "upgrade", "--no-progress"],
                                   ["--db", folder / "state.db", "upgrade", "--json"], user=NOBODY)
    assert result.returncode == 0 and "nothing to do" in result.stdout, result.stderr
    done = json.loads(as_json.stdout)
    assert (done["from_version"], done["to_version"], done["steps"], done["backup"]) == (6, 6, [], None)
    assert {p.name: sha256(p) for p in folder.iterdir()} == before


@pytest.mark.parametrize("args", READ_COMMANDS, ids=" ".join)
def test_read_commands_leave_no_file_beside_a_cleanly_closed_database(tmp_path, args):
    path = build_healthy(tmp_path / "state.db")
    before = listing(tmp_path), sha256(path)
    result = cli("--db", path, *args)
    assert result.exit_code == 0, result.stderr
    assert (listing(tmp_path), sha256(path)) == before


def test_read_commands_leave_no_file_beside_a_wal_without_its_shm(tmp_path):
    source = build_healthy(tmp_path / "source.db")
    folder = tmp_path / "copy"
    folder.mkdir()
    _with_live_wal(source, folder, keep_shm=False)
    before = {p.name: sha256(p) for p in folder.iterdir()}
    code, doc = cli_json("--db", folder / "state.db", "status")
    assert code == 0 and doc["sessions"] == 5
    assert {p.name: sha256(p) for p in folder.iterdir()} == before


WRITING = [["upgrade"], ["vacuum"], ["repair"], ["rebuild-fts"], ["maintain"], ["prune", "--older-than", "1", "--yes"],
           ["import-jsonl", ROOT / "fixtures" / "legacy" / "jsonl"]]


def test_a_newer_schema_is_read_by_every_read_command_with_one_warning(tmp_path):
    path = load_fixture("trap_version_31", tmp_path)
    before = listing(tmp_path), sha256(path)
    for args in [["status"], ["check"], ["export"], ["sessions", "list"], ["sessions", "stats"]]:
        as_json = [] if args == ["export"] else ["--json"]
        result = cli("--db", path, *args, *as_json)
        assert result.exit_code in (0, 1), (args, result.stderr)
        assert result.stderr.count("\n") == 1 and "warning" in result.stderr and "version 31" in result.stderr
        if as_json:
            assert json.loads(result.stdout)["schema_newer"] is True
    doc = json.loads(cli("--db", path, "check", "--json").stdout)
    skipped = {s["check"] for s in doc["skipped"]}
    assert skipped >= {"lineage_cycles", "counter_mismatches"}
    assert "fts_sync" not in skipped  # its messages_fts is still version 6's own: v6's search checks apply
    assert (listing(tmp_path), sha256(path)) == before


def test_recover_of_a_newer_schema_says_it_keeps_only_the_v6_columns(tmp_path):
    # It said "everything came back" with no word that the v6 file leaves the v7 columns behind.
    path = load_fixture("trap_version_31", tmp_path)
    before = sha256(path)
    out = tmp_path / "out"
    out.mkdir()
    result = cli("--db", path, "recover", out / "v6.db", "--json")
    assert result.stderr.count("\n") == 1 and "warning" in result.stderr and "version 31" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema_newer"] is True and sha256(path) == before
    # The v7 column the v6 file cannot hold is named, and the recovery is not called complete (exit 1).
    assert doc["columns_not_kept"] == ["messages.reasoning_content"] and result.exit_code == 1


def _with_blob_column(path: Path, version: int) -> Path:
    """A column holding BLOBs (a newer Hermes' embeddings, another tool's), at this schema version."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("ALTER TABLE messages ADD COLUMN embedding BLOB")
        conn.execute("UPDATE messages SET embedding = ? WHERE id % 2 = 0", (bytes(range(256)),))
        conn.execute("UPDATE schema_version SET version = ?", (version,))
    conn.close()
    return path


def test_a_newer_schema_with_a_blob_column_is_exported_shown_and_merged(tmp_path):
    # Its BLOB column crashed export, `sessions show --json` and merge (exit 70, a bare "[" on stdout).
    # show reads the columns the tool knows, as the warning says; export carries every column (the BLOB
    # as base64, as of a v6 file); merge keeps the others as extra data.
    path = _with_blob_column(build_healthy(tmp_path / "state.db"), 30)
    exported = cli("--db", path, "export")
    assert exported.exit_code == 0, exported.stderr
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    blob = {"blob_base64": base64.b64encode(bytes(range(256))).decode()}
    exported_messages = [m for r in records for m in r["messages"]]
    assert all(m["embedding"] in (blob, None) and m["extra"] == {} for m in exported_messages)
    assert blob in [m["embedding"] for m in exported_messages]
    session = records[0]["session"]["id"]
    code, doc = cli_json("--db", path, "sessions", "show", session)
    assert code == 0 and doc["schema_newer"] is True
    SessionDB(tmp_path / "merged.db").close()
    code, doc = cli_json("--db", tmp_path / "merged.db", "merge", path)
    assert code == 0 and doc["messages_imported"] == sum(len(r["messages"]) for r in records)
    kept = [json.loads(row[0]) for row in rows_of(tmp_path / "merged.db", "SELECT data FROM hst_message_extra")]
    assert kept and all(extra["other_db_embedding"] == {"blob_base64": base64.b64encode(bytes(range(256))).decode()}
                        for extra in kept)


def test_a_blob_another_tool_stored_is_exported_and_imported_again_whole(tmp_path):
    path = _with_blob_column(build_healthy(tmp_path / "state.db"), 6)
    assert cli("--db", path, "export", "-o", tmp_path / "out.jsonl").exit_code == 0
    code, _doc = cli_json("--db", tmp_path / "again.db", "import-jsonl", tmp_path / "out.jsonl")
    assert code == 0
    kept = [json.loads(row[0])["embedding"] for row in rows_of(tmp_path / "again.db",
                                                                "SELECT data FROM hst_message_extra")]
    assert {"blob_base64": base64.b64encode(bytes(range(256))).decode()} in kept


def rows_of(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("args", WRITING, ids=lambda a: str(a[0]))
def test_a_newer_schema_is_never_written(tmp_path, args):
    path = load_fixture("trap_version_31", tmp_path)
    before = listing(tmp_path), sha256(path)
    result = cli("--db", path, *args, "--no-progress")
    assert result.exit_code == 3 and len(result.stderr.splitlines()) == 1
    assert (listing(tmp_path), sha256(path)) == before


def test_the_sqlite_version_is_reported_with_a_note_inside_the_wal_reset_range(tmp_path):
    assert sqlite_info.has_wal_reset_bug((3, 7, 0)) and sqlite_info.has_wal_reset_bug((3, 51, 2))
    assert not sqlite_info.has_wal_reset_bug((3, 51, 3)) and not sqlite_info.has_wal_reset_bug((3, 6, 23))
    path = build_healthy(tmp_path / "state.db")
    for command in ("status", "check"):
        code, doc = cli_json("--db", path, command)
        assert code == 0 and doc["sqlite_version"] == sqlite3.sqlite_version
        assert doc["sqlite_wal_reset_bug"] == sqlite_info.has_wal_reset_bug()
        # said where it matters: status, and a check of a damaged file; not every healthy night
        assert bool(doc["notes"]) == (command == "status" and sqlite_info.has_wal_reset_bug())
        assert all("WAL-reset" in note for note in doc["notes"])
    code, doc = cli_json("--db", path, "maintain")
    assert code == 0 and doc["sqlite_wal_reset_bug"] == sqlite_info.has_wal_reset_bug() and doc["notes"] == []


def test_the_wal_reset_note_comes_with_damage_when_the_sqlite_in_use_has_the_bug(tmp_path):
    path = build_db(tmp_path / "state.db", sessions=20)
    destroy_btree(path, "messages")
    code, doc = cli_json("--db", path, "check")
    assert code == 1 and doc["damaged"]
    assert any("WAL-reset" in note for note in doc["notes"]) == sqlite_info.has_wal_reset_bug()


# -- a full disk -----------------------------------------------------------------------

@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 3 MiB tmpfs (root only; skipped otherwise)."""
    yield from _tmpfs("3m")


@pytest.fixture
def disk_12m() -> Iterator[Path]:
    """A 12 MiB tmpfs: room for a file bigger than SQLite's page cache and its rebuilt copy."""
    yield from _tmpfs("12m")


def _tmpfs(size: str) -> Iterator[Path]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount = Path(tempfile.mkdtemp(prefix="hermes-state-full-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        mount.rmdir()
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)
        mount.rmdir()


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_is_exit_74_nothing_half_written_and_the_rerun_completes(small_disk):
    path = build_db(small_disk / "state.db", sessions=40, per_session=10, size=200)
    filler = _fill(small_disk)
    before = sha256(path)
    for args in (["backup", small_disk / "copy.db"], ["vacuum"],
                 ["import-jsonl", ROOT / "fixtures" / "legacy" / "jsonl"]):
        result = run("--db", path, *args, "--no-progress")
        assert result.returncode == 74, (args, result.stderr)
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
        assert not (small_disk / "copy.db").exists()
        assert not [p for p in listing(small_disk) if "copy.db" in p or "hermes-tmp" in p]
        assert run("--db", path, "check", "--no-progress").returncode == 0
    assert sha256(path) == before or run("--db", path, "check").returncode == 0
    filler.unlink()
    assert run("--db", path, "backup", small_disk / "copy.db").returncode == 0
    assert run("--db", small_disk / "copy.db", "check").returncode == 0
    assert run("--db", path, "vacuum").returncode == 0
    assert listing(small_disk) == ["copy.db", "state.db"]


def _fill_leaving(folder: Path, spare: int) -> Path:
    filler = folder / "filler"
    filler.unlink(missing_ok=True)
    with open(filler, "wb") as handle:
        handle.write(b"\0" * max(0, shutil.disk_usage(folder).free - spare))
    return filler


@pytest.mark.parametrize("command", ["repair", "recover"])
def test_a_disk_that_fills_while_a_damaged_file_is_rebuilt_is_exit_74(disk_12m, command):
    # The rebuild took a full disk under one message's insert (the file outgrew the page cache) for
    # a bad row: it counted the row rejected, SQLite had rolled the whole build back, and the
    # COMMIT exited 70.
    path = build_db(disk_12m / "state.db", sessions=400, per_session=15, size=300)
    destroy_btree(path, "idx_messages_session")
    before, args = sha256(path), [command] + ([disk_12m / "out.db"] if command == "recover" else [])
    for spare in (300_000, 1_500_000):
        filler = _fill_leaving(disk_12m, spare)
        result = run("--db", path, *args, "--no-progress")
        filler.unlink()
        assert result.returncode == 74, (spare, result.stderr)
        assert len(result.stderr.splitlines()) == 1 and "full" in result.stderr
        assert sha256(path) == before and listing(disk_12m) == ["state.db"]
    assert run("--db", path, *args, "--no-progress").returncode == 0


def test_recover_onto_a_full_disk_names_the_folder_that_is_full(small_disk, tmp_path):
    # The error line named the source database, which is only read and sat on a disk with room.
    path = build_db(tmp_path / "state.db", sessions=200, per_session=10, size=300)
    filler = _fill_leaving(small_disk, 100_000)
    try:
        result = run("--db", path, "recover", small_disk / "out.db", "--no-progress")
    finally:
        filler.unlink()
    assert result.returncode == 74 and len(result.stderr.splitlines()) == 1, result.stderr
    assert str(small_disk) in result.stderr and str(path) not in result.stderr
    assert listing(small_disk) == []


def test_a_hot_rollback_journal_is_rolled_back_on_a_copy_by_read_commands(tmp_path):
    path = build_db(tmp_path / "state.db", sessions=60, per_session=20)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    # A writer killed mid-transaction, after it spilled changed pages into the main file.
    code = (f"import sqlite3, os\nc = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
            "c.execute('PRAGMA cache_size=1'); c.execute('BEGIN')\n"
            "c.execute('DELETE FROM messages WHERE id < 1000'); os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert (tmp_path / "state.db-journal").stat().st_size > 0
    before = {n: sha256(tmp_path / n) for n in listing(tmp_path)}
    code_, doc = cli_json("--db", path, "status")
    assert code_ == 0 and doc["messages"] == 1200  # as committed: the interrupted delete is undone
    assert cli_json("--db", path, "check")[0] == 0
    assert {n: sha256(tmp_path / n) for n in listing(tmp_path)} == before


@pytest.mark.skipif(_can_run_as_nobody() is not None, reason=str(_can_run_as_nobody()))
def test_a_folder_this_user_cannot_open_is_reported_and_the_rest_imported(public_dir: Path) -> None:
    # Asking whether the folder is a HERMES_HOME (has it sessions/?) raised on it and stopped the
    # whole import with exit 2.
    sessions = public_dir / "sessions"
    (sessions / "locked").mkdir(parents=True)
    line = '{"role": "user", "content": "hello", "timestamp": "2026-03-01T10:00:00"}\n'
    (sessions / "20260301_100000_aaaa0001.jsonl").write_text(line)
    (sessions / "locked" / "20260301_100000_aaaa0002.jsonl").write_text(line)
    for path in (public_dir, *public_dir.rglob("*")):
        path.chmod(0o777 if path.is_dir() else 0o644)
    (sessions / "locked").chmod(0)
    done = run("--db", public_dir / "state.db", "import-jsonl", sessions, "--json", user=NOBODY)
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["sessions_created"] == 1, done.stderr
    assert [(p["kind"], p["file"]) for p in report["problems"]] == [("unreadable_path", str(sessions / "locked"))]


def test_tightening_permissions_never_makes_a_read_only_file_writable(tmp_path: Path) -> None:
    # It chmodded every database to 0600: a file its owner had made 0444 became writable, so the
    # command after a refused write wrote into it.
    from hermes_state_tools.core.paths import tighten_permissions

    read_only, shared = tmp_path / "ro.db", tmp_path / "shared.db"
    for path, mode in ((read_only, 0o444), (shared, 0o644)):
        path.write_bytes(b"")
        path.chmod(mode)
    tighten_permissions(read_only)
    tighten_permissions(shared)
    assert (read_only.stat().st_mode & 0o777, shared.stat().st_mode & 0o777) == (0o400, 0o600)


@pytest.mark.skipif(_can_run_as_nobody() is not None, reason=str(_can_run_as_nobody()))
@pytest.mark.parametrize("args", [["vacuum"], ["prune", "--older-than", "0", "--yes"], ["maintain"]], ids=" ".join)
def test_a_read_only_database_file_is_refused_in_one_line_and_stays_read_only(public_dir: Path, args) -> None:
    path = build_healthy(public_dir / "state.db")
    os.chown(path, 65534, 65534)
    path.chmod(0o444)
    before = sha256(path)
    for _attempt in range(2):  # the second run met a file the first had made 0600, and wrote into it
        done = run("--db", path, *args, user=NOBODY)
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().count("\n") == 0 and "read-only" in done.stderr, done.stderr
    assert path.stat().st_mode & 0o200 == 0 and sha256(path) == before
    assert sorted(p.name for p in public_dir.iterdir()) == ["state.db"]


@pytest.mark.skipif(_can_run_as_nobody() is not None, reason=str(_can_run_as_nobody()))
@pytest.mark.parametrize("keep", [False, True])
def test_a_backup_into_a_folder_this_user_cannot_write_is_exit_2_naming_it(tmp_path, public_dir: Path, keep) -> None:
    # It was exit 1 ("problems found") with the database named and Python's errno text.
    source = build_healthy(public_dir / "state.db")
    source.chmod(0o644)
    locked = public_dir / "locked"
    locked.mkdir(mode=0o555)
    dest = locked if keep else locked / "copy.db"
    done = run("--db", source, "backup", dest, *(["--keep", "1"] if keep else []), "--json", user=NOBODY)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "cannot write the backup there (Permission denied)" in line
    assert line.startswith(f"hermes-state: {locked}/")
    assert json.loads(done.stdout)["ok"] is False and list(locked.iterdir()) == []


@pytest.mark.parametrize("version", ["v1", "v2", "v3", "v4", "v5"])
def test_an_older_schema_is_read_by_every_read_command_without_upgrading_it(tmp_path, version):
    # `sessions list` exited 70 (KeyError: 'title') on v1 and v2 files, which have no title column.
    path = load_fixture(version, tmp_path)
    session = rows_of(path, "SELECT id FROM sessions ORDER BY started_at LIMIT 1")[0][0]
    before = listing(tmp_path), sha256(path)
    for args in [["sessions", "list"], ["sessions", "list", "--json"], ["sessions", "show", session],
                 ["sessions", "show", session, "--json"], ["sessions", "stats"], ["export"], ["status"],
                 ["search", "the"]]:
        result = cli("--db", path, *args)
        assert result.exit_code == 0, (args, result.stderr)
    records = [json.loads(line) for line in cli("--db", path, "export").stdout.splitlines()]
    assert len(records) == rows_of(path, "SELECT COUNT(*) FROM sessions")[0][0]
    assert (listing(tmp_path), sha256(path)) == before
