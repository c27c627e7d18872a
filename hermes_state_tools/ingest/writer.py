"""Write import plans in short transactions, indexing each batch's messages in one FTS pass.

Per-row FTS triggers cost about 2.5x a bulk load, so inside each write transaction the
insert trigger is dropped, the batch's rows go in, the FTS index gets them in one
INSERT ... SELECT, and the trigger is recreated before COMMIT. Other connections never
see the trigger missing (the change is part of the transaction), and a kill at any point
rolls back rows, index and trigger together.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from importers.records import Problem

from .. import counters, extras, jsonutil, titles
from ..schema import SESSION_FIELDS, TRIGGERS
from .merge import Existing, ExistingMessage, SessionPlan

_INSERT_TRIGGER = "messages_fts_insert"
_MESSAGE_COLUMNS = (
    "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp", "token_count",
    "finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items",
)
_INSERT_MESSAGE = (
    f"INSERT INTO messages ({', '.join(_MESSAGE_COLUMNS)}) VALUES ({', '.join('?' * len(_MESSAGE_COLUMNS))})"
)


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


def _text(value: Any, problems: list[Problem], where: str) -> Any:
    """Strings SQLite can store: a lone surrogate (invalid UTF-8) becomes U+FFFD, reported."""
    if not isinstance(value, str):
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        problems.append(Problem(where, None, "lone_surrogate",
                                "text held a lone UTF-16 surrogate, which UTF-8 cannot store; stored as U+FFFD"))
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in value)
    return value


def _json_column(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return jsonutil.dumps(value)


def _message_row(session_id: str, message: Any, timestamp: float, problems: list[Problem]) -> tuple:
    where = f"session {session_id}"
    return (
        session_id, message.role, _text(jsonutil.encode_content(message.content), problems, where),
        message.tool_call_id, _text(_json_column(message.tool_calls), problems, where), message.tool_name,
        timestamp, message.token_count, message.finish_reason, _text(message.reasoning, problems, where),
        _text(_json_column(message.reasoning_details), problems, where),
        _text(_json_column(message.codex_reasoning_items), problems, where),
    )


def _unique_title(conn: sqlite3.Connection, plan: SessionPlan, title: str) -> str:
    holder = conn.execute("SELECT id FROM sessions WHERE title = ? AND id != ?", (title, plan.session_id)).fetchone()
    if holder is None:
        return title
    renamed = titles.next_title_in_lineage_unchecked(conn, title)
    plan.problems.append(Problem(f"session {plan.session_id}", None, "title_renamed",
                                 f"title {title!r} is held by session {holder[0]}; stored as {renamed!r}"))
    return renamed


def _parent_or_none(conn: sqlite3.Connection, plan: SessionPlan, parent: Any) -> Any:
    if parent is None or conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchone():
        return parent
    # The parent may come later in this import: the link is kept in extra data and restored
    # by the final pass (or by a re-run, which fills NULL fields).
    plan.session_extra.setdefault("parent_session_id", parent)
    return None


def _write_session_row(conn: sqlite3.Connection, plan: SessionPlan) -> None:
    row = dict(plan.row)
    if row.get("title"):
        row["title"] = _unique_title(conn, plan, row["title"])
    if "parent_session_id" in row:
        row["parent_session_id"] = _parent_or_none(conn, plan, row["parent_session_id"])
    if isinstance(row.get("model_config"), (dict, list)):
        row["model_config"] = jsonutil.dumps(row["model_config"])
    row = {k: _text(v, plan.problems, f"session {plan.session_id}") for k, v in row.items() if k in SESSION_FIELDS}
    if plan.create:
        names = ", ".join(row)
        conn.execute(f"INSERT INTO sessions ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    elif row:
        sets = ", ".join(f"{name} = COALESCE({name}, ?)" for name in row)
        conn.execute(f"UPDATE sessions SET {sets} WHERE id = ?", (*row.values(), plan.session_id))


def _write_messages(conn: sqlite3.Connection, plan: SessionPlan) -> None:
    rows = [_message_row(plan.session_id, m, t, plan.problems) for m, t, _ in plan.inserts]
    first = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0] + 1
    conn.executemany(_INSERT_MESSAGE, rows)
    # Ids are consecutive: this transaction holds the write lock and AUTOINCREMENT only grows.
    message_extra = [(first + n, plan.session_id, m.extra) for n, (m, _, _) in enumerate(plan.inserts) if m.extra]
    extras.put_message_extras(conn, message_extra)


def apply_plans(conn: sqlite3.Connection, plans: Iterable[SessionPlan]) -> None:
    """Write plans inside the caller's transaction, FTS indexed in one pass at the end."""
    first_id = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0] + 1
    has_trigger = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?", (_INSERT_TRIGGER,)
    ).fetchone() is not None
    if has_trigger:
        conn.execute(f"DROP TRIGGER {_INSERT_TRIGGER}")
    touched = []
    for plan in plans:
        _write_session_row(conn, plan)
        if plan.inserts:
            _write_messages(conn, plan)
        extras.merge_session_extra(conn, plan.session_id, plan.session_extra)
        touched.append(plan.session_id)
    if has_trigger:
        conn.execute("INSERT INTO messages_fts(rowid, content) SELECT id, content FROM messages WHERE id >= ?",
                     (first_id,))
        conn.execute(TRIGGERS[_INSERT_TRIGGER])
    counters.recount(conn, touched)


def restore_parent_links(conn: sqlite3.Connection) -> list[str]:
    """Set parents kept aside (their parent arrived later in the import); returns ids still waiting."""
    if not extras.present(conn):
        return []
    waiting = []
    rows = conn.execute(
        f"SELECT s.id, json_extract(e.data, '$.parent_session_id') FROM sessions s JOIN {extras.SESSION_TABLE} e "
        "ON e.session_id = s.id WHERE s.parent_session_id IS NULL "
        "AND json_extract(e.data, '$.parent_session_id') IS NOT NULL"
    ).fetchall()
    for session_id, parent in rows:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchone():
            conn.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (parent, session_id))
        else:
            waiting.append(session_id)
    return waiting
