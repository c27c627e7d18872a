"""Lineage: compression chains, ancestors and descendants, cycles. Every walk is bounded."""

from __future__ import annotations

import sqlite3
from typing import Any

MAX_COMPRESSION_HOPS = 100
MAX_LINEAGE_DEPTH = 10_000


def compression_tip(conn: sqlite3.Connection, session_id: str) -> str:
    """Follow `compression` ends to the live continuation (children started before the end are sub-agents)."""
    current, seen = session_id, {session_id}
    for _ in range(MAX_COMPRESSION_HOPS):
        row = conn.execute(
            "SELECT ended_at, end_reason FROM sessions WHERE id = ?", (current,)
        ).fetchone()
        if row is None or row["end_reason"] != "compression" or row["ended_at"] is None:
            break
        child = conn.execute(
            "SELECT id FROM sessions WHERE parent_session_id = ? AND started_at >= ? "
            "ORDER BY started_at DESC, id DESC LIMIT 1",
            (current, row["ended_at"]),
        ).fetchone()
        if child is None or child["id"] in seen:
            break
        current = child["id"]
        seen.add(current)
    return current


def closes_cycle(conn: sqlite3.Connection, session_id: str, parent: str) -> bool:
    """Whether linking `session_id` to `parent` would close a lineage cycle: the parent is the session
    itself or descends from it."""
    return parent == session_id or session_id in ancestors(conn, parent)


def ancestors(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """Parent, grandparent, ... of a session, nearest first; stops at a cycle (whatever the connection's
    row factory)."""
    chain: list[str] = []
    seen = {session_id}
    current = session_id
    for _ in range(MAX_LINEAGE_DEPTH):
        row = conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (current,)).fetchone()
        parent = row[0] if row else None
        if parent is None or parent in seen:
            break
        chain.append(parent)
        seen.add(parent)
        current = parent
    return chain


def descendants(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """Every session below this one, breadth first, each with its depth; cycles are cut."""
    found: list[dict[str, Any]] = []
    seen = {session_id}
    frontier = [session_id]
    depth = 0
    while frontier and depth < MAX_LINEAGE_DEPTH:
        depth += 1
        placeholders = ",".join("?" * len(frontier))
        rows = conn.execute(
            f"SELECT id, parent_session_id FROM sessions WHERE parent_session_id IN ({placeholders}) "
            "ORDER BY started_at, id",
            frontier,
        ).fetchall()
        frontier = [row["id"] for row in rows if row["id"] not in seen]
        seen.update(frontier)
        found += [{"id": row["id"], "parent_session_id": row["parent_session_id"], "depth": depth}
                  for row in rows if row["id"] in frontier]
    return found


def find_cycles(conn: sqlite3.Connection) -> list[list[str]]:
    """Every parent cycle, each listed once as the ids on it (in parent order)."""
    # A session on a cycle has a parent and is a parent itself: only those are loaded, so memory
    # follows the sessions that are both (a few), not every session in the file.
    parent = {row[0]: row[1] for row in conn.execute(
        "SELECT id, parent_session_id FROM sessions WHERE parent_session_id IS NOT NULL "
        "AND id IN (SELECT parent_session_id FROM sessions)")}
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = finished
    cycles: list[list[str]] = []
    for start in parent:
        walk: list[str] = []
        node: str | None = start
        while node is not None and node in parent and state.get(node) is None:
            state[node] = 1
            walk.append(node)
            node = parent[node]
        if node is not None and state.get(node) == 1:
            cycles.append(walk[walk.index(node):])
        for visited in walk:
            state[visited] = 2
    return cycles
