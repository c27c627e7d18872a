"""Extra data: what legacy files hold that the v6 schema has no column for.

The mirror flag and its source, a message's platform `message_id`, a snapshot's inner
session id, tool schemas, the raw ShareGPT value, ... are kept in two side tables that
only exist once an import needed them, so a database Hermes writes is never changed
by this library unless it imports into it. Hermes ignores these tables; `export`
writes their rows out and `import-jsonl` reads them back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.schema import object_names

SESSION_TABLE = "hst_session_extra"
MESSAGE_TABLE = "hst_message_extra"
TABLES_SQL = (
    f"CREATE TABLE IF NOT EXISTS {SESSION_TABLE} (session_id TEXT PRIMARY KEY, data TEXT NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {MESSAGE_TABLE} "
    "(message_id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {MESSAGE_TABLE}_session ON {MESSAGE_TABLE}(session_id)",
)


def present(conn: sqlite3.Connection) -> bool:
    return SESSION_TABLE in object_names(conn, "table")


def ensure_tables(conn: sqlite3.Connection) -> None:
    for sql in TABLES_SQL:
        conn.execute(sql)


def delete_for_sessions(conn: sqlite3.Connection, id_query: str, params: Iterable[Any] = ()) -> None:
    """Drop the extra data of the sessions that `id_query` selects."""
    if not present(conn):
        return
    params = tuple(params)
    conn.execute(f"DELETE FROM {SESSION_TABLE} WHERE session_id IN ({id_query})", params)
    conn.execute(f"DELETE FROM {MESSAGE_TABLE} WHERE session_id IN ({id_query})", params)


def drop_orphans(conn: sqlite3.Connection) -> int:
    """Delete extra data whose session or message no longer exists (Hermes deleted it: it knows no
    hst_ tables, so its deletes leave these rows behind); returns how many rows went."""
    if not present(conn):
        return 0
    dropped = conn.execute(f"DELETE FROM {SESSION_TABLE} WHERE session_id NOT IN (SELECT id FROM sessions)").rowcount
    dropped += conn.execute(f"DELETE FROM {MESSAGE_TABLE} WHERE message_id NOT IN (SELECT id FROM messages)").rowcount
    return dropped


def session_extra(conn: sqlite3.Connection, session_id: str) -> dict[str, Any]:
    if not present(conn):
        return {}
    row = conn.execute(f"SELECT data FROM {SESSION_TABLE} WHERE session_id = ?", (session_id,)).fetchone()
    data = jsonutil.loads_or_raw(row[0]) if row else {}
    return data if isinstance(data, dict) else {}


def message_extras(conn: sqlite3.Connection, session_id: str) -> dict[int, dict[str, Any]]:
    """message id -> extra data, for one session's messages."""
    if not present(conn):
        return {}
    rows = conn.execute(f"SELECT message_id, data FROM {MESSAGE_TABLE} WHERE session_id = ?", (session_id,))
    return {row[0]: jsonutil.loads_or_raw(row[1]) for row in rows}


def merge_session_extra(conn: sqlite3.Connection, session_id: str, data: dict[str, Any]) -> None:
    """Add keys to a session's extra data; keys it already holds keep their value."""
    if not data:
        return
    ensure_tables(conn)
    merged = {**data, **session_extra(conn, session_id)}
    conn.execute(
        f"INSERT OR REPLACE INTO {SESSION_TABLE} (session_id, data) VALUES (?, ?)",
        (session_id, jsonutil.dumps(merged)),
    )


def put_session_extras(conn: sqlite3.Connection, rows: list[tuple[str, dict[str, Any]]]) -> None:
    """Store (session_id, data) rows for sessions that hold no extra data yet (new ones)."""
    if not rows:
        return
    ensure_tables(conn)
    conn.executemany(f"INSERT OR REPLACE INTO {SESSION_TABLE} (session_id, data) VALUES (?, ?)",
                     ((sid, jsonutil.dumps(data)) for sid, data in rows))


def put_message_extras(conn: sqlite3.Connection, rows: list[tuple[int, str, dict[str, Any]]]) -> None:
    """Store (message_id, session_id, data) rows."""
    if not rows:
        return
    ensure_tables(conn)
    conn.executemany(
        f"INSERT OR REPLACE INTO {MESSAGE_TABLE} (message_id, session_id, data) VALUES (?, ?, ?)",
        ((mid, sid, jsonutil.dumps(data)) for mid, sid, data in rows),
    )


def drop_session_extra_key(conn: sqlite3.Connection, session_id: str, key: str) -> None:
    """Remove one key from a session's extra data (the row goes when nothing is left)."""
    data = session_extra(conn, session_id)
    if key not in data:
        return
    del data[key]
    if data:
        conn.execute(f"UPDATE {SESSION_TABLE} SET data = ? WHERE session_id = ?", (jsonutil.dumps(data), session_id))
    else:
        conn.execute(f"DELETE FROM {SESSION_TABLE} WHERE session_id = ?", (session_id,))


def add_message_extra(conn: sqlite3.Connection, message_id: int, session_id: str, data: dict[str, Any]) -> None:
    """Add keys to one message's extra data; keys it already holds keep their value."""
    if not data:
        return
    ensure_tables(conn)
    row = conn.execute(f"SELECT data FROM {MESSAGE_TABLE} WHERE message_id = ?", (message_id,)).fetchone()
    held = jsonutil.loads_or_raw(row[0]) if row else {}
    merged = {**data, **(held if isinstance(held, dict) else {})}
    conn.execute(f"INSERT OR REPLACE INTO {MESSAGE_TABLE} (message_id, session_id, data) VALUES (?, ?, ?)",
                 (message_id, session_id, jsonutil.dumps(merged)))
