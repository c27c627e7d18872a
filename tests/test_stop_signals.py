"""SIGTERM and SIGHUP end a command as Ctrl-C does (its cleanups run), and the scratch folders a run
killed outright left behind (a whole copy of the database, an import's staging files) are removed
by the next run that makes one in the same place."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import session_with_messages
from import_helpers import write_corpus

from hermes_state_tools import SessionDB
from hermes_state_tools.cli.base import stops_as_interrupts
from hermes_state_tools.core import scratch
from hermes_state_tools.ingest.writing import staging

ROOT = Path(__file__).resolve().parent.parent
OLD = time.time() - 2 * scratch.STALE_AFTER_S


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _env(tmpdir: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HERMES_HOME": "/nonexistent", "TMPDIR": str(tmpdir)}


def _command(*args: object) -> list[str]:
    return [sys.executable, "-m", "hermes_state_tools", *map(str, args), "--no-progress"]


def _leftover(folder: Path, purpose: str, pid: int, age: float = OLD, tag: str = "k1ll3d") -> Path:
    path = folder / f"{scratch.PREFIX}{purpose}-{pid}-{tag}"
    path.mkdir()
    (path / "copy.db").write_bytes(b"x" * 4096)
    os.utime(path, (age, age))
    return path


def _store(path: Path) -> Path:
    db = SessionDB(path)
    session_with_messages(db, "s1", "hello there", "general kenobi")
    db.close()
    return path


def test_a_scratch_folder_left_by_a_killed_run_is_removed_by_the_next_check(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    dead = _dead_pid()
    killed = [_leftover(tmpdir, purpose, dead) for purpose in ("check", "read", "import", "dry-run", "repair")]
    live = _leftover(tmpdir, "check", os.getpid())  # its process still runs
    fresh = _leftover(tmpdir, "check", dead, age=time.time(), tag="n0w")  # maybe another PID namespace's, being written
    foreign = tmpdir / "hermes-state-notes"  # not a name this tool makes
    foreign.mkdir()
    os.utime(foreign, (OLD, OLD))
    db = _store(tmp_path / "state.db")

    done = subprocess.run(_command("--db", db, "check"), capture_output=True, text=True, env=_env(tmpdir),
                          timeout=120, stdin=subprocess.DEVNULL)

    assert done.returncode == 0, done.stderr
    assert [path for path in killed if path.exists()] == []
    assert live.exists() and fresh.exists() and foreign.exists()
    assert sorted(p.name for p in tmpdir.iterdir()) == sorted(p.name for p in (live, fresh, foreign))


def test_remove_stale_spares_files_and_links_with_a_scratch_name(tmp_path):
    dead = _dead_pid()
    target = _leftover(tmp_path, "elsewhere", os.getpid())
    (tmp_path / f"{scratch.PREFIX}check-{dead}-link").symlink_to(target)
    (tmp_path / f"{scratch.PREFIX}check-{dead}-file").write_text("kept")
    assert scratch.remove_stale(tmp_path, now=time.time() + 2 * scratch.STALE_AFTER_S) == []
    assert len(list(tmp_path.iterdir())) == 3


def test_a_killed_exports_half_file_is_removed_by_the_next_export_into_that_folder(tmp_path):
    db = _store(tmp_path / "state.db")
    out = tmp_path / "out"
    out.mkdir()
    half = out / f"all.jsonl.hermes-tmp-export-{_dead_pid()}"
    half.write_text('{"half": ')
    done = subprocess.run(_command("--db", db, "export", "-o", out / "all.jsonl"), capture_output=True,
                          text=True, env=_env(tmp_path), timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["all.jsonl"]
    assert "general kenobi" in (out / "all.jsonl").read_text()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_ends_an_import_like_ctrl_c_and_its_staging_folder_goes(tmp_path, stop):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    db = _store(tmp_path / "state.db")
    write_corpus(tmp_path / "sessions", 600, 5)
    proc = subprocess.Popen(_command("--db", db, "import-jsonl", tmp_path / "sessions"), env=_env(tmpdir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(f"{scratch.PREFIX}import-") for p in tmpdir.iterdir()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGSTOP)  # the signal then lands wherever the import happens to be
    assert proc.poll() is None, "the import ended before it could be stopped"
    proc.send_signal(stop)
    os.kill(proc.pid, signal.SIGCONT)
    _out, err = proc.communicate(timeout=60)

    assert proc.returncode == 1, err
    assert "interrupted; nothing was left half-written" in err and "Traceback" not in err
    assert list(tmpdir.iterdir()) == []
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        counts = {n for (n,) in conn.execute("SELECT COUNT(m.id) FROM sessions s LEFT JOIN messages m "
                                             "ON m.session_id = s.id WHERE s.id != 's1' GROUP BY s.id")}
    finally:
        conn.close()
    assert counts <= {5}  # every session committed whole, or not at all


def test_a_signal_that_was_ignored_stays_ignored(tmp_path):
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as `nohup` starts a command
    try:
        with stops_as_interrupts():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, before)


@pytest.mark.parametrize("open_statement", [False, True])
def test_an_interrupt_inside_a_staged_batch_propagates_as_itself_and_the_staging_file_goes(tmp_path, open_statement):
    # Ctrl-C can land right after BEGIN (before any rollback) or while a statement on the staging
    # file is unfinished: either made the detach fail ("database hst_staged is locked") and that
    # error replaced the interrupt (exit 70 instead of 1).
    def staging_file(name: str) -> Path:
        path = tmp_path / name
        staged = sqlite3.connect(path)
        staged.execute("CREATE TABLE rows (a)")
        staged.executemany("INSERT INTO rows VALUES (?)", [(n,) for n in range(10)])
        staged.commit()
        staged.close()
        return path

    first = staging_file("first.db")
    conn = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    try:
        with pytest.raises(KeyboardInterrupt), staging.attached(conn, first):
            conn.execute("BEGIN IMMEDIATE")
            cursor = conn.execute(f"SELECT a FROM {staging.SCHEMA_NAME}.rows")
            if open_statement:
                cursor.fetchone()  # the statement stays open on the attached file
            else:
                cursor.fetchall()
            raise KeyboardInterrupt
        assert not conn.in_transaction and not first.exists()
        attached = [name for _, name, _ in conn.execute("PRAGMA database_list")]
        assert attached == (["main", staging.SCHEMA_NAME] if open_statement else ["main"])
        del cursor  # the interrupted statement ends; the next batch attaches its own file
        second = staging_file("second.db")
        with staging.attached(conn, second):
            assert conn.execute(f"SELECT COUNT(*) FROM {staging.SCHEMA_NAME}.rows").fetchone() == (10,)
        assert [name for _, name, _ in conn.execute("PRAGMA database_list")] == ["main"]
    finally:
        conn.close()


def test_ctrl_c_while_the_command_line_loads_is_one_line_not_a_traceback(tmp_path):
    # Ctrl-C in the first half second of `hermes-state import-jsonl ...`, while Python still loads
    # click and the commands: raised here where that load begins, as the signal would raise it.
    script = ("import builtins, sys\n"
              "load = builtins.__import__\n"
              "def interrupted(name, *args, **kwargs):\n"
              "    if name == 'hermes_state_tools.cli':\n"
              "        raise KeyboardInterrupt\n"
              "    return load(name, *args, **kwargs)\n"
              "builtins.__import__ = interrupted\n"
              "sys.argv = ['hermes-state', 'status']\n"
              "from hermes_state_tools.__main__ import run\n"
              "run()\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=_env(tmp_path),
                            timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == "\nhermes-state: interrupted before the command started; nothing was done\n"
