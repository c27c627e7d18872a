"""Read-only access for commands that only look: never create, never lock, never write."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from .connection import connect, looks_like_sqlite
from .errors import NotAHermesDatabaseError, SchemaTooNewError
from .schema import SCHEMA_VERSION, object_names
from .upgrade import stored_version


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


def open_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to an existing Hermes database."""
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


def require_supported(conn: sqlite3.Connection, path: Path) -> int | None:
    """The stored version; SchemaTooNewError when a newer Hermes wrote the file."""
    version = stored_version(conn)
    if version is not None and version > SCHEMA_VERSION:
        raise SchemaTooNewError(path, version, SCHEMA_VERSION)
    return version
