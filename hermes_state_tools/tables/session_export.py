"""Sessions with their messages, one at a time, for export and backup."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from hermes_state_tools.tables import messages, sessions


def export_session(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    """The session row plus `messages` (decoded as `get_messages` returns them)."""
    row = sessions.get(conn, session_id)
    if row is None:
        return None
    return {**row, "messages": messages.get_all(conn, session_id)}


def session_ids(conn: sqlite3.Connection, source: str | None = None) -> list[str]:
    """Ids to export, oldest first (ids only: the rows are read one session at a time)."""
    sql = "SELECT id FROM sessions" + (" WHERE source = ?" if source else "") + " ORDER BY started_at, id"
    return [row[0] for row in conn.execute(sql, (source,) if source else ())]


def iter_export(conn: sqlite3.Connection, source: str | None = None) -> Iterator[dict[str, Any]]:
    for session_id in session_ids(conn, source):
        exported = export_session(conn, session_id)
        if exported is not None:
            yield exported
