"""Per-session counters recomputed from the rows, the rule `append_message` follows one row at a time."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

# A list of tool calls counts its length, any other non-null value counts 1, tool rows 0.
TOOL_CALLS_OF_ROW = (
    "CASE WHEN m.role = 'tool' OR m.tool_calls IS NULL THEN 0 "
    "WHEN json_valid(m.tool_calls) AND json_type(m.tool_calls) = 'array' THEN json_array_length(m.tool_calls) "
    "ELSE 1 END"
)


def counted(where: str) -> tuple[str, str]:
    """The two subqueries that count the rows of `messages m` matching `where`: how many there are, and
    the tool calls they hold."""
    rows = f"FROM messages m WHERE {where}"
    return f"(SELECT COUNT(*) {rows})", f"(SELECT COALESCE(SUM({TOOL_CALLS_OF_ROW}), 0) {rows})"


REAL_MESSAGE_COUNT, REAL_TOOL_CALL_COUNT = counted("m.session_id = sessions.id")
# What a layout with `active` shows: the live rows, which a compaction sets the count to.
LIVE_MESSAGE_COUNT, LIVE_TOOL_CALL_COUNT = counted("m.session_id = sessions.id AND m.active = 1")


def recount(conn: sqlite3.Connection, session_ids: Iterable[str]) -> None:
    """Set message_count and tool_call_count of these sessions from their messages."""
    conn.executemany(
        f"UPDATE sessions SET message_count = {REAL_MESSAGE_COUNT}, tool_call_count = {REAL_TOOL_CALL_COUNT} "
        "WHERE id = ?",
        ((sid,) for sid in session_ids),
    )


def add_new_rows(conn: sqlite3.Connection, session_ids: Iterable[str], first_id: int) -> None:
    """Add to the counters of these sessions what their messages from `first_id` on add, as
    `append_message` adds one row at a time: a layout that hides rewound rows keeps its own count
    (the live rows after an in-place compaction), which a recount over every row would overwrite."""
    added, calls = counted("m.session_id = sessions.id AND m.id >= ?")
    conn.executemany(
        f"UPDATE sessions SET message_count = COALESCE(message_count, 0) + {added}, "
        f"tool_call_count = COALESCE(tool_call_count, 0) + {calls} WHERE id = ?",
        ((first_id, first_id, sid) for sid in session_ids),
    )


def heal(conn: sqlite3.Connection, session_ids: Iterable[str]) -> None:
    """In a layout with `active`: recount (every row, as `repair` does) a session whose counters no
    Hermes could have kept: NULL, below its live rows or above all its rows. Others stay as they are."""
    conn.executemany(
        f"UPDATE sessions SET message_count = {REAL_MESSAGE_COUNT}, tool_call_count = {REAL_TOOL_CALL_COUNT} "
        f"WHERE id = ? AND (message_count IS NULL OR tool_call_count IS NULL "
        f"OR message_count NOT BETWEEN {LIVE_MESSAGE_COUNT} AND {REAL_MESSAGE_COUNT} "
        f"OR tool_call_count NOT BETWEEN {LIVE_TOOL_CALL_COUNT} AND {REAL_TOOL_CALL_COUNT})",
        ((sid,) for sid in session_ids),
    )


def take_away_live(conn: sqlite3.Connection, session_id: str, message_ids: list[int]) -> None:
    """Before these rows of a session are deleted: take what they added to its counters (its live rows,
    as a layout with `active` counts them) away."""
    gone, calls = counted(f"m.id IN ({','.join('?' * len(message_ids))}) AND m.active = 1")
    conn.execute(
        f"UPDATE sessions SET message_count = MAX(COALESCE(message_count, 0) - {gone}, 0), "
        f"tool_call_count = MAX(COALESCE(tool_call_count, 0) - {calls}, 0) WHERE id = ?",
        (*message_ids, *message_ids, session_id),
    )


def mismatches(conn: sqlite3.Connection) -> list[tuple[str, int, int, int, int]]:
    """(id, stored messages, real messages, stored tool calls, real tool calls) where they differ."""
    rows = conn.execute(
        f"SELECT id, message_count, {REAL_MESSAGE_COUNT}, tool_call_count, {REAL_TOOL_CALL_COUNT} FROM sessions"
    )
    return [tuple(row) for row in rows if (row[1], row[3]) != (row[2], row[4])]
