"""Rows in `messages` that are no message: the February 2026 gateway also wrote its `session_meta`
lines there (`append_to_transcript` sent every transcript line to SQLite), so replaying such a
session sends them to the API. They move into the session's extra data, losing nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.records import FOREIGN_ROLES as FOREIGN_ROLES  # named in check's finding
from hermes_state_tools.core.records import FOREIGN_ROWS_KEY
from hermes_state_tools.core.schema import table_columns
from hermes_state_tools.tables import counters, extras

EXTRA_KEY = FOREIGN_ROWS_KEY  # the session extra key the moved rows are kept under
_NOT_A_MESSAGE = f"role IN ({', '.join(repr(r) for r in FOREIGN_ROLES)})"
_FILLED_FIELDS = ("model", "system_prompt", "user_id")


def sessions_with_foreign_rows(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """(session id, how many rows) of every session holding rows that are no message."""
    return [tuple(row) for row in conn.execute(
        f"SELECT session_id, COUNT(*) FROM messages WHERE {_NOT_A_MESSAGE} GROUP BY session_id ORDER BY session_id"
    )]


def _rows(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    cursor = conn.execute(f"SELECT * FROM messages WHERE session_id = ? AND {_NOT_A_MESSAGE} ORDER BY timestamp, id",
                          (session_id,))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def _meta_values(row: dict[str, Any]) -> dict[str, Any]:
    """The session fields a session_meta row names (its content, when it holds the JSON line)."""
    content = jsonutil.loads_or_raw(row["content"]) if isinstance(row.get("content"), str) else None
    if not isinstance(content, dict):
        return {}
    wanted = (*_FILLED_FIELDS, "platform")
    return {k: v.strip() for k, v in content.items() if k in wanted and isinstance(v, str) and v.strip()}


def move_foreign_rows(conn: sqlite3.Connection, session_ids: Iterable[str]) -> dict[str, int]:
    """Move each session's rows that are no message into its extra data (`foreign_rows`: every column
    and the row's own extra data), fill NULL model/system prompt/user id from them, delete the rows,
    recount (in a layout with `active`, take the moved live rows off the count that layout keeps);
    returns session id -> rows moved. Inside the caller's transaction."""
    moved: dict[str, int] = {}
    live = "active" in table_columns(conn, "messages")
    for session_id in session_ids:
        rows = _rows(conn, session_id)
        if not rows:
            continue
        kept_extras = extras.message_extras(conn, session_id)
        for row in rows:
            if row["id"] in kept_extras:
                row["extra"] = kept_extras[row["id"]]
        data = extras.session_extra(conn, session_id)
        found = data.get(EXTRA_KEY)
        earlier: list[Any] = found if isinstance(found, list) else []
        extras.drop_session_extra_key(conn, session_id, EXTRA_KEY)
        extras.merge_session_extra(conn, session_id, {EXTRA_KEY: [*earlier, *rows]})
        for row in rows:
            values = _meta_values(row)
            for name in _FILLED_FIELDS:
                if name in values:
                    conn.execute(f"UPDATE sessions SET {name} = ? WHERE id = ? AND ({name} IS NULL OR {name} = '')",
                                 (values[name], session_id))
            if "platform" in values:  # the source nothing named yet
                conn.execute("UPDATE sessions SET source = ? WHERE id = ? AND source = 'unknown'",
                             ("cli" if values["platform"] == "local" else values["platform"], session_id))
        ids = [row["id"] for row in rows]
        marks = ",".join("?" * len(ids))
        if live:
            counters.take_away_live(conn, session_id, ids)
        conn.execute(f"DELETE FROM messages WHERE id IN ({marks})", ids)
        if extras.present(conn):
            conn.execute(f"DELETE FROM {extras.MESSAGE_TABLE} WHERE message_id IN ({marks})", ids)
        moved[session_id] = len(rows)
    (counters.heal if live else counters.recount)(conn, list(moved))
    return moved
