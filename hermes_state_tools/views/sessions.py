"""Browsing a database read-only: the session list, one session, its lineage, token and cost totals."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from hermes_state_tools.core.schema import table_columns
from hermes_state_tools.errors import SessionIdError
from hermes_state_tools.store.opening import reading
from hermes_state_tools.tables import lineage, messages, session_list, sessions
from hermes_state_tools.tables.titles import escape_like

_SUMMARY = ("id", "parent_session_id", "source", "title", "model", "started_at", "ended_at", "end_reason",
            "message_count")
_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
_COSTS = ("estimated_cost_usd", "actual_cost_usd")
_WITH_MESSAGE_COUNTS = (
    "FROM sessions s LEFT JOIN (SELECT session_id, COUNT(*) AS n FROM messages GROUP BY session_id) mc "
    "ON mc.session_id = s.id"
)


def resolve(conn: sqlite3.Connection, id_or_prefix: str) -> str:
    """The session an exact id or unique prefix names; SessionIdError when none or several match."""
    found = sessions.resolve_id(conn, id_or_prefix)
    if found is not None:
        return found
    matches = conn.execute(
        "SELECT COUNT(*) FROM sessions WHERE id LIKE ? ESCAPE '\\'", (escape_like(id_or_prefix) + "%",)
    ).fetchone()[0]
    if matches and id_or_prefix.strip():
        raise SessionIdError(f"session id prefix {id_or_prefix!r} matches {matches} sessions; give more of the id")
    raise SessionIdError(f"no session with id or unique id prefix {id_or_prefix!r}")


def list_sessions(path: Path, source: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """Top-level conversations newest first, with preview (compressed ones shown as their live tip)."""
    with reading(path, allow_newer=True) as conn:
        return session_list.list_rich(conn, source=source, limit=limit)


def show_session(path: Path, id_or_prefix: str) -> dict[str, Any]:
    """One session's row and its messages in order."""
    with reading(path, allow_newer=True) as conn:
        session_id = resolve(conn, id_or_prefix)
        return {"session": sessions.get(conn, session_id), "messages": messages.get_all(conn, session_id)}


def _summary(conn: sqlite3.Connection, session_id: str) -> dict[str, Any]:
    """The few fields a lineage shows; `missing` for a parent id that names no session."""
    row = sessions.get(conn, session_id)
    if row is None:
        return {"id": session_id, "missing": True}
    return {key: row.get(key) for key in _SUMMARY}


def session_lineage(path: Path, id_or_prefix: str) -> dict[str, Any]:
    """Ancestors (nearest first) and descendants (with depth) of a session; bounded and cycle-safe."""
    with reading(path, allow_newer=True) as conn:
        session_id = resolve(conn, id_or_prefix)
        up = lineage.ancestors(conn, session_id)
        down = lineage.descendants(conn, session_id)
        top = sessions.get(conn, up[-1] if up else session_id)
        cycle = top is not None and top["parent_session_id"] in {session_id, *up}
        return {
            "session": _summary(conn, session_id),
            "ancestors": [_summary(conn, ancestor) for ancestor in up],
            "descendants": [{**_summary(conn, d["id"]), "depth": d["depth"]} for d in down],
            "cycle": cycle,
        }


def _sums(conn: sqlite3.Connection) -> str:
    """SELECT terms for the totals; columns an older schema lacks count as 0 (tokens) or unknown (cost)."""
    present = table_columns(conn, "sessions")
    terms = ["COUNT(*) AS sessions", "COALESCE(SUM(mc.n), 0) AS messages"]
    terms += [f"COALESCE(SUM(s.{c}), 0) AS {c}" if c in present else f"0 AS {c}" for c in _TOKENS]
    terms += [f"SUM(s.{c}) AS {c}" if c in present else f"NULL AS {c}" for c in _COSTS]
    return ", ".join(terms)


def _grouped(conn: sqlite3.Connection, column: str) -> list[dict[str, Any]]:
    """The totals for each value of `column` (model or source), most sessions first."""
    rows = conn.execute(
        f"SELECT s.{column} AS {column}, {_sums(conn)} {_WITH_MESSAGE_COUNTS} "
        f"GROUP BY s.{column} ORDER BY sessions DESC, s.{column}"
    )
    return [dict(row) for row in rows]


def usage_stats(path: Path) -> dict[str, Any]:
    """Sessions, messages, tokens and cost: in total, by model and by source."""
    with reading(path, allow_newer=True) as conn:
        conn.execute("BEGIN")  # the three totals from one snapshot
        try:
            totals = dict(conn.execute(f"SELECT {_sums(conn)} {_WITH_MESSAGE_COUNTS}").fetchone())
            return {"totals": totals, "by_model": _grouped(conn, "model"), "by_source": _grouped(conn, "source")}
        finally:
            conn.execute("ROLLBACK")
