"""Small helpers shared by the test modules (plain functions, not fixtures)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from hermes_state_tools import SessionDB


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
