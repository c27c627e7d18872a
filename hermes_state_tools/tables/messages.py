"""Message rows: append with counters, read back in order, clear."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.message_rows import tool_call_increment
from hermes_state_tools.errors import UnknownSessionError
from hermes_state_tools.tables import extras

_JSON_COLUMNS = ("reasoning_details", "codex_reasoning_items")


_SQLITE_CONSTRAINT_FOREIGNKEY = 787
_INSERT = (
    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, "
    "timestamp, token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_BUMP = (
    "UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, "
    "tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?"
)


def unknown_session(session_id: str) -> UnknownSessionError:
    return UnknownSessionError(f"Session '{session_id}' does not exist")




def append(
    conn: sqlite3.Connection,
    session_id: str,
    role: str,
    content: Any = None,
    tool_name: str | None = None,
    tool_calls: Any = None,
    tool_call_id: str | None = None,
    token_count: int | None = None,
    finish_reason: str | None = None,
    reasoning: str | None = None,
    reasoning_details: Any = None,
    codex_reasoning_items: Any = None,
) -> int:
    """Insert one message stamped now and bump the session's counters; returns the row id.

    An unknown session is refused by the foreign key (the connection enforces them), or else by
    the counter UPDATE finding no row, not by a lookup before every insert: the live path does
    what its floor does, INSERT and UPDATE.
    """
    row = (
        session_id, role, jsonutil.encode_content(content), tool_call_id,
        jsonutil.dumps_if_any(tool_calls), tool_name, time.time(), token_count, finish_reason,
        reasoning, jsonutil.dumps_if_any(reasoning_details), jsonutil.dumps_if_any(codex_reasoning_items),
    )
    try:
        cursor = conn.execute(_INSERT, row)
    except sqlite3.IntegrityError as exc:
        if getattr(exc, "sqlite_errorcode", None) == _SQLITE_CONSTRAINT_FOREIGNKEY:
            raise unknown_session(session_id) from None
        raise
    if conn.execute(_BUMP, (tool_call_increment(role, tool_calls), session_id)).rowcount == 0:
        # foreign keys off on this connection: no session row was bumped, so none exists; the
        # caller's transaction rolls the insert back
        raise unknown_session(session_id)
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def decode_row(row: sqlite3.Row) -> dict[str, Any]:
    """A message row as a dict with content and tool_calls decoded."""
    message = dict(row)
    message["content"] = jsonutil.decode_content(message.get("content"))
    if message.get("tool_calls"):
        message["tool_calls"] = jsonutil.loads_or_raw(message["tool_calls"])
    return message


def get_all(conn: sqlite3.Connection, session_id: str, shown: str = "") -> list[dict[str, Any]]:
    """Every message of a session (or those the SQL condition `shown` keeps), every column, in timestamp
    then id order."""
    rows = conn.execute(
        f"SELECT * FROM messages WHERE session_id = ?{f' AND {shown}' if shown else ''} ORDER BY timestamp, id",
        (session_id,))
    return [decode_row(row) for row in rows]


def as_conversation(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session in OpenAI chat format, ready to replay to an API."""
    conversation = []
    for message in get_all(conn, session_id):
        entry: dict[str, Any] = {"role": message["role"], "content": message["content"]}
        for key in ("tool_call_id", "tool_name", "tool_calls"):
            if message.get(key):
                entry[key] = message[key]
        if message["role"] == "assistant":
            if message.get("reasoning"):
                entry["reasoning"] = message["reasoning"]
            for key in _JSON_COLUMNS:
                if message.get(key):
                    entry[key] = jsonutil.loads_or_raw(message[key])
        conversation.append(entry)
    return conversation


def clear(conn: sqlite3.Connection, session_id: str) -> None:
    """Delete a session's messages and zero its counters; the session itself stays."""
    if extras.present(conn):
        conn.execute(f"DELETE FROM {extras.MESSAGE_TABLE} WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
    conn.execute(
        "UPDATE sessions SET message_count = 0, tool_call_count = 0 WHERE id = ?", (session_id,)
    )


def count(conn: sqlite3.Connection, session_id: str | None = None) -> int:
    if session_id:
        row = conn.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (session_id,))
    else:
        row = conn.execute("SELECT COUNT(*) FROM messages")
    return int(row.fetchone()[0])
