"""Opening a database file: the one place that reads its version, applies the newer-schema rule,
and opens it read-only (to look), writable (to maintain, never upgraded) or as a store (created
and upgraded, as Hermes opens it)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hermes_state_tools.core import paths
from hermes_state_tools.core.connection import WriteRunner, connect, looks_like_sqlite, read_only_peek, retry_on_lock
from hermes_state_tools.core.schema import SCHEMA_VERSION, object_names, read_version
from hermes_state_tools.errors import DatabaseLockedError, NotAHermesDatabaseError, SchemaTooNewError
from hermes_state_tools.upgrade.steps import UpgradeReport, bring_up_to_date, pending


def require_database_file(path: Path) -> None:
    """Refuse a path that is missing, empty, a folder or not SQLite (before anything opens it)."""
    if not path.exists():
        raise NotAHermesDatabaseError(f"{path}: no such database file")
    if not path.is_file():
        raise NotAHermesDatabaseError(f"{path}: not a file")
    if path.stat().st_size == 0:
        raise NotAHermesDatabaseError(f"{path}: empty file, not a Hermes database")
    try:
        sqlite_header = looks_like_sqlite(path)
    except OSError as exc:
        raise NotAHermesDatabaseError(f"{path}: cannot read ({exc.strerror})") from exc
    if not sqlite_header:
        raise NotAHermesDatabaseError(f"{path}: not an SQLite database")


def peek_version(path: Path) -> int | None:
    """The stored schema version, read without any chance of changing the file (None: no file or no row)."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    if not path.is_file() or not looks_like_sqlite(path):
        raise NotAHermesDatabaseError(f"{path}: not an SQLite database")
    return read_only_peek(path, read_version)


def refuse_newer(path: Path, version: int | None) -> None:
    """The newer-schema rule: a file written by a newer Hermes is never touched by this tool."""
    if version is not None and version > SCHEMA_VERSION:
        raise SchemaTooNewError(path, version, SCHEMA_VERSION)


def open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to an existing file holding the Hermes tables (any version)."""
    require_database_file(path)
    try:
        conn = connect(path, readonly=True)
        tables = object_names(conn, "table")
    except sqlite3.DatabaseError as exc:
        raise NotAHermesDatabaseError(f"{path}: unreadable database ({exc})") from exc
    if not {"sessions", "messages"} <= tables:
        conn.close()
        raise NotAHermesDatabaseError(f"{path}: holds no Hermes schema (no sessions/messages tables)")
    return conn


def open_supported(path: Path) -> tuple[sqlite3.Connection, int | None]:
    """A read-only connection to an existing Hermes database of a supported schema, with its version."""
    # The version is read first by a look that leaves no -wal/-shm behind, so a newer file keeps every byte.
    refuse_newer(path, peek_version(path))
    conn = open_readonly(path)
    try:
        version = read_version(conn)
        refuse_newer(path, version)
    except BaseException:
        conn.close()
        raise
    return conn, version


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """Open an existing supported database to look: read-only, never created, closed afterwards."""
    conn, _version = open_supported(path)
    try:
        yield conn
    finally:
        conn.close()


@contextmanager
def writing(path: Path) -> Iterator[tuple[sqlite3.Connection, WriteRunner]]:
    """Open an existing supported database to maintain it: writable, with its write runner, never upgraded."""
    with reading(path):
        pass  # refuses a missing, foreign or newer file before anything opens it for writing
    conn, runner = open_writable(path, threading.RLock())
    try:
        yield conn, runner
    finally:
        conn.close()


def schema_change_pending(path: Path) -> bool:
    """True when opening `path` as a store would change its schema (an upgrade step or a repair is due)."""
    with reading(path) as conn:
        return pending(conn)


def open_writable(path: Path, lock: threading.RLock) -> tuple[sqlite3.Connection, WriteRunner]:
    """A WAL-mode read-write connection on a 0600 file, foreign keys enforced."""
    paths.create_private_file(path)
    conn = connect(path)
    try:
        retry_on_lock(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
        conn.execute("PRAGMA foreign_keys=ON")
    except DatabaseLockedError:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise NotAHermesDatabaseError(f"{path}: {exc}") from exc
    paths.tighten_permissions(path)
    return conn, WriteRunner(conn, lock)


def open_store(path: Path, lock: threading.RLock) -> tuple[sqlite3.Connection, WriteRunner, UpgradeReport]:
    """Open (creating if needed) and bring the schema to v6, one transaction per step."""
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_newer(path, peek_version(path))
    conn, runner = open_writable(path, lock)
    try:
        report = bring_up_to_date(conn, runner.run)
    except BaseException:
        conn.close()
        raise
    paths.tighten_permissions(path)
    return conn, runner, report
