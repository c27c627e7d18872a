"""Opening a store: refuse what must not be touched, then create or upgrade it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from . import paths
from .connection import WriteRunner, connect, looks_like_sqlite, read_only_peek, retry_on_lock
from .errors import DatabaseLockedError, NotAHermesDatabaseError, SchemaTooNewError
from .schema import SCHEMA_VERSION
from .upgrade import UpgradeReport, bring_up_to_date

_VERSION_QUERY = (
    "SELECT (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version')"
)


def peek_version(path: Path) -> int | None:
    """The stored schema version, read without any chance of changing the file."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    if not path.is_file() or not looks_like_sqlite(path):
        raise NotAHermesDatabaseError(f"{path}: not an SQLite database")
    (has_table,), = read_only_peek(path, _VERSION_QUERY)
    if not has_table:
        return None
    (version,), = read_only_peek(path, "SELECT MAX(version) FROM schema_version")
    return version if isinstance(version, int) else None


def refuse_newer(path: Path) -> int | None:
    """Raise SchemaTooNewError for a schema above ours; otherwise return the stored version."""
    version = peek_version(path)
    if version is not None and version > SCHEMA_VERSION:
        raise SchemaTooNewError(path, version, SCHEMA_VERSION)
    return version


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
    refuse_newer(path)
    conn, runner = open_writable(path, lock)
    try:
        report = bring_up_to_date(conn, runner.run)
    except BaseException:
        conn.close()
        raise
    paths.tighten_permissions(path)
    return conn, runner, report
