"""The rich session list: top-level conversations with a preview and last activity."""

from __future__ import annotations

import sqlite3
from typing import Any

from hermes_state_tools.core.jsonutil import content_text
from hermes_state_tools.tables.lineage import compression_tip

PREVIEW_LENGTH = 60
_PROJECTED = (
    "id", "ended_at", "end_reason", "message_count", "tool_call_count", "title",
    "last_active", "preview", "model", "system_prompt",
)
_RICH_SELECT = (
    "SELECT s.*, "
    "(SELECT m.content FROM messages m WHERE m.session_id = s.id AND m.role = 'user' "
    " AND m.content IS NOT NULL ORDER BY m.timestamp, m.id LIMIT 1) AS _first_user, "
    "COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) "
    " AS last_active FROM sessions s"
)


def preview(content: Any) -> str:
    """First user message, newlines folded to spaces, cut to 60 characters with '...'."""
    text = content_text(content).replace("\r\n", " ").replace("\n", " ").replace("\r", " ").strip()
    return text[:PREVIEW_LENGTH] + "..." if len(text) > PREVIEW_LENGTH else text


def _rich(row: sqlite3.Row) -> dict[str, Any]:
    item = dict(row)
    item["preview"] = preview(item.pop("_first_user"))
    return item


def _rich_by_id(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    row = conn.execute(f"{_RICH_SELECT} WHERE s.id = ?", (session_id,)).fetchone()
    return _rich(row) if row else None


def _project_tip(conn: sqlite3.Connection, root: dict[str, Any]) -> dict[str, Any]:
    tip_id = compression_tip(conn, root["id"])
    tip = _rich_by_id(conn, tip_id) if tip_id != root["id"] else None
    if tip is None:
        return root
    projected = dict(root)
    projected.update({key: tip[key] for key in _PROJECTED})
    projected["_lineage_root_id"] = root["id"]
    return projected


def list_rich(
    conn: sqlite3.Connection,
    source: str | None = None,
    exclude_sources: list[str] | None = None,
    limit: int = 20,
    offset: int = 0,
    include_children: bool = False,
    project_compression_tips: bool = True,
    listed: str = "",
    also_children: str = "",
) -> list[dict[str, Any]]:
    """Top-level sessions newest first (only those the SQL condition `listed` on `s` keeps, if given),
    and the children the condition `also_children` on `s` names; compressed conversations shown as
    their live tip."""
    where: list[str] = [listed] if listed else []
    params: list[Any] = []
    if not include_children:
        where.append(f"(s.parent_session_id IS NULL OR {also_children})" if also_children
                     else "s.parent_session_id IS NULL")
    if source:
        where.append("s.source = ?")
        params.append(source)
    if exclude_sources:
        where.append(f"s.source NOT IN ({','.join('?' * len(exclude_sources))})")
        params += list(exclude_sources)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    rows = conn.execute(
        f"{_RICH_SELECT}{clause} ORDER BY s.started_at DESC LIMIT ? OFFSET ?", (*params, limit, offset)
    )
    items = [_rich(row) for row in rows.fetchall()]
    if not project_compression_tips or include_children:
        return items
    return [_project_tip(conn, item) if item.get("end_reason") == "compression" else item for item in items]
