"""Session rows: lifecycle, token and cost accounting, lookup by id or prefix."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.errors import UnknownSessionError
from hermes_state_tools.tables.titles import escape_like

_COUNTERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
_FILL_IF_NULL = ("model", "billing_provider", "billing_base_url", "billing_mode")
_OVERWRITE_IF_GIVEN = ("cost_status", "cost_source", "pricing_version")


def exists(conn: sqlite3.Connection, session_id: str) -> bool:
    return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None


def create(
    conn: sqlite3.Connection,
    session_id: str,
    source: str,
    model: str | None = None,
    model_config: dict[str, Any] | None = None,
    system_prompt: str | None = None,
    user_id: str | None = None,
    parent_session_id: str | None = None,
) -> str:
    """Insert a session started now; an id that exists already is left as it is (first write wins)."""
    if parent_session_id is not None and not exists(conn, parent_session_id):
        raise UnknownSessionError(f"Parent session '{parent_session_id}' does not exist")
    conn.execute(
        "INSERT OR IGNORE INTO sessions (id, source, user_id, model, model_config, system_prompt, "
        "parent_session_id, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session_id, source, user_id, model,
            jsonutil.dumps(model_config) if model_config else None,
            system_prompt, parent_session_id, time.time(),
        ),
    )
    return session_id


def end(conn: sqlite3.Connection, session_id: str, end_reason: str) -> None:
    """Close a session that is still open; the first end wins."""
    conn.execute(
        "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL",
        (time.time(), end_reason, session_id),
    )


def reopen(conn: sqlite3.Connection, session_id: str) -> None:
    conn.execute("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", (session_id,))


def update_system_prompt(conn: sqlite3.Connection, session_id: str, system_prompt: str | None) -> None:
    conn.execute("UPDATE sessions SET system_prompt = ? WHERE id = ?", (system_prompt, session_id))


def update_token_counts(
    conn: sqlite3.Connection, session_id: str, values: dict[str, Any], absolute: bool = False
) -> None:
    """Add to (or with `absolute`, set) the counters and costs; fill billing identity while NULL."""
    assignments: list[str] = []
    params: list[Any] = []
    for name in _COUNTERS:
        assignments.append(f"{name} = ?" if absolute else f"{name} = COALESCE({name}, 0) + ?")
        params.append(int(values.get(name) or 0))
    # Estimated cost always becomes a number (Hermes sums it even when a turn has none);
    # actual cost only moves when a value is given.
    estimated = float(values.get("estimated_cost_usd") or 0.0)
    assignments.append("estimated_cost_usd = ?" if absolute
                       else "estimated_cost_usd = COALESCE(estimated_cost_usd, 0) + ?")
    params.append(estimated)
    if values.get("actual_cost_usd") is not None:
        assignments.append("actual_cost_usd = ?" if absolute else "actual_cost_usd = COALESCE(actual_cost_usd, 0) + ?")
        params.append(float(values["actual_cost_usd"]))
    for name in _FILL_IF_NULL:
        if values.get(name) is not None:
            assignments.append(f"{name} = COALESCE({name}, ?)")
            params.append(values[name])
    for name in _OVERWRITE_IF_GIVEN:
        if values.get(name) is not None:
            assignments.append(f"{name} = ?")
            params.append(values[name])
    conn.execute(f"UPDATE sessions SET {', '.join(assignments)} WHERE id = ?", (*params, session_id))


def get(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return dict(row) if row else None


def resolve_id(conn: sqlite3.Connection, id_or_prefix: str) -> str | None:
    """The exact id, else the one id starting with this prefix (wildcards literal), else None."""
    if not id_or_prefix or not str(id_or_prefix).strip():
        return None
    if exists(conn, id_or_prefix):
        return id_or_prefix
    rows = conn.execute(
        "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
        (escape_like(id_or_prefix) + "%",),
    ).fetchall()
    return rows[0]["id"] if len(rows) == 1 else None


def search(conn: sqlite3.Connection, source: str | None, limit: int, offset: int) -> list[dict[str, Any]]:
    """Sessions newest first, optionally of one source."""
    where, params = ("WHERE source = ?", [source]) if source else ("", [])
    rows = conn.execute(
        f"SELECT * FROM sessions {where} ORDER BY started_at DESC LIMIT ? OFFSET ?",
        (*params, limit, offset),
    )
    return [dict(row) for row in rows]


def count(conn: sqlite3.Connection, source: str | None = None) -> int:
    if source:
        return int(conn.execute("SELECT COUNT(*) FROM sessions WHERE source = ?", (source,)).fetchone()[0])
    return int(conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])
