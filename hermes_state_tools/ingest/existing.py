"""What the database already holds for one session: the merge's starting point."""

from __future__ import annotations

import sqlite3

from hermes_state_tools.core import jsonutil
from hermes_state_tools.ingest.merge_copies import Existing, ExistingMessage

Fingerprint = tuple[int, int] | None  # (message count, highest message id), None when the session is absent


def load_existing(conn: sqlite3.Connection, session_id: str) -> Existing | None:
    """The session row and its messages as alignment needs them, or None when it is not stored."""
    row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    messages = conn.execute(
        "SELECT id, role, content, tool_call_id, tool_calls, timestamp FROM messages WHERE session_id = ? "
        "ORDER BY timestamp, id", (session_id,)
    )
    return Existing(dict(row), tuple(
        ExistingMessage(m[0], m[1], m[2], m[3], jsonutil.loads_or_raw(m[4]) if m[4] else None, m[5])
        for m in messages
    ))


def fingerprint(conn: sqlite3.Connection, session_id: str) -> Fingerprint:
    """The session's fingerprint as stored now (one query: the writer asks it for every session)."""
    stored, count, highest = conn.execute(
        "SELECT (SELECT 1 FROM sessions WHERE id = ?1), COUNT(*), COALESCE(MAX(id), 0) FROM messages "
        "WHERE session_id = ?1", (session_id,)
    ).fetchone()
    return None if stored is None else (count, highest)


def fingerprint_of(existing: Existing | None) -> Fingerprint:
    """The fingerprint of what load_existing read: the same snapshot as the plan made from it."""
    if existing is None:
        return None
    return (len(existing.messages), max((m.id for m in existing.messages), default=0))


def stored_session_ids(conn: sqlite3.Connection) -> set[str]:
    """Every session id in the database: sessions outside it need no lookup to plan (one created
    meanwhile fails the writer's fingerprint check and is planned again)."""
    return {row[0] for row in conn.execute("SELECT id FROM sessions")}
