"""Small helpers shared by the test modules (plain functions, not fixtures)."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from hypothesis import settings

from hermes_state_tools import SessionDB
from hermes_state_tools.cli import main
from hermes_state_tools.ingest.reader import launch


def examples(count: int) -> int:
    """A test's own Hypothesis example count, scaled as the profile in use scales Hypothesis' default of
    100 (tests/conftest.py: half in the default suite, ten times that with HYPOTHESIS_PROFILE=soak)."""
    return max(1, count * settings.default.max_examples // 100)


def set_times(db: SessionDB, session_id: str, *, started_at: float | None = None,
              ended_at: float | None = None, end_reason: str | None = None) -> None:
    """Backdate a session (tests need times that `time.time()` would not give)."""
    for column, value in (("started_at", started_at), ("ended_at", ended_at), ("end_reason", end_reason)):
        if value is not None:
            db._conn.execute(f"UPDATE sessions SET {column} = ? WHERE id = ?", (value, session_id))


def session_with_messages(db: SessionDB, session_id: str, *contents: str, source: str = "cli",
                          role: str = "user", **session_kwargs: Any) -> str:
    """Create a session and append one message of `role` per content string."""
    db.create_session(session_id, source, **session_kwargs)
    for content in contents:
        db.append_message(session_id, role, content)
    return session_id


def file_digests(db_path: Path) -> dict[str, str]:
    """sha256 of the database file and of its WAL when the WAL holds anything (a reader may leave an
    empty one behind, which carries no data)."""
    digests = {}
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        if path.exists() and (path == db_path or path.stat().st_size):
            digests[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def raw_scalar(db_path: Path, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """One value read through a separate plain sqlite3 connection."""
    import sqlite3

    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql, params).fetchone()[0]
    finally:
        conn.close()


@contextlib.contextmanager
def _environment(env: Mapping[str, str | None] | None, cwd: Path | None) -> Iterator[None]:
    """This process's environment and working directory as a command started with them would have them
    (None removes a variable), restored afterwards."""
    saved, before = {name: os.environ.get(name) for name in env or {}}, os.getcwd()
    try:
        for name, value in (env or {}).items():
            _set_variable(name, value)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(before)
        for name, value in saved.items():
            _set_variable(name, value)


def _set_variable(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def invoke(*args: object, input: str | None = None, env: Mapping[str, str | None] | None = None,
           cwd: Path | None = None) -> Result:
    """`hermes-state ARGS` in this process, as the installed command runs it (`__main__.run`): the
    import's reader process started first (forked from this process, which has loaded what it needs,
    where a new interpreter for every import would take most of an import test's time), then click,
    stdout and stderr kept apart; a reader the command did not take is stopped as the process's exit
    stops it."""
    argv = [str(a) for a in args]
    with _environment(env, cwd):
        # Frozen in the forked reader: a SQLite connection this test dropped is never collected there,
        # where its file number may be one of the reader's own files by then.
        gc.freeze()
        try:
            launch.start_early(argv)
        finally:
            gc.unfreeze()
        try:
            return CliRunner().invoke(main, argv, input=input, prog_name="hermes-state")
        finally:
            launch.stop_early()


def hermes_state(*args: object, input: str | None = None, env: Mapping[str, str | None] | None = None,
                 cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`hermes-state ARGS` in this process (`invoke`), answered as `subprocess.run(..., text=True,
    capture_output=True)` answers for the real program: exit code, stdout, stderr. An exception the
    command line let through fails the test here with its traceback."""
    result = invoke(*args, input=input, env=env, cwd=cwd)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess([str(a) for a in args], result.exit_code, result.stdout, result.stderr)
