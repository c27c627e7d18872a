"""`check --quick`: one pass over the messages' session index answers three checks at once.

Walking `idx_messages_session` (a covering index: session_id + rowid) joined by rowid to the FTS
index's docsize table gives, per session, its real message count and how many of its messages are
indexed; joined to `sessions` that yields messages of missing sessions (the only foreign key of
`messages`), messages the search index lacks and stored message counts that are wrong. Only the
disagreeing sessions reach Python. Index entries whose message is gone follow from the totals.
tool_call_count needs every row's tool_calls (a full table read): that is the full check's.

On a layout with `active` (v15+), `idx_messages_session_active` (session_id, active) covers the
live count too, and a stored message_count is wrong only outside [live rows, all rows]: that
Hermes keeps the count of a rewound turn and sets it to the live rows on a compaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from hermes_state_tools.core.layouts import read_layout
from hermes_state_tools.core.schema import object_names
from hermes_state_tools.maintenance.fts_agreement import DOCSIZE, has_index

_SESSION_INDEX = "idx_messages_session"
_ACTIVE_INDEX = "idx_messages_session_active"


@dataclass(frozen=True)
class QuickPass:
    """What the pass found; ids sorted."""

    orphans: tuple[tuple[str, int], ...]  # (session id that does not exist, its messages)
    counts: tuple[tuple[str, int | None, int], ...]  # (session id, stored message_count, real count)
    unindexed: tuple[int, ...]  # message ids missing from the search index (empty without one)
    stale: tuple[int, ...]  # index entries whose message is gone
    indexed: bool  # the file has an FTS index to compare


def _per_session(conn: sqlite3.Connection, indexed: bool) -> list[tuple[str, int, int, int | None, int, int]]:
    """(session id, messages, indexed messages, stored count, session missing, live messages) where
    something disagrees."""
    active = read_layout(conn).hides_rewound
    index = _ACTIVE_INDEX if active else _SESSION_INDEX
    hint = f"INDEXED BY {index}" if index in object_names(conn, "index") else ""
    join, counted = (f"LEFT JOIN {DOCSIZE} d ON d.id = m.id", "count(d.id)") if indexed else ("", "count(*)")
    live, wrong = (("sum(m.active = 1)", "NOT (s.message_count BETWEEN g.live AND g.n)") if active
                   else ("count(*)", "s.message_count IS NOT g.n"))
    return [tuple(row) for row in conn.execute(
        f"SELECT g.sid, g.n, g.ix, s.message_count, s.id IS NULL, g.live FROM "
        f"(SELECT m.session_id AS sid, count(*) AS n, {counted} AS ix, {live} AS live FROM messages m {hint} "
        f"{join} GROUP BY m.session_id) g LEFT JOIN sessions s ON s.id = g.sid "
        f"WHERE g.n != g.ix OR s.id IS NULL OR s.message_count IS NULL OR {wrong} ORDER BY g.sid"
    )]


def _unindexed_ids(conn: sqlite3.Connection, session_ids: list[str]) -> tuple[int, ...]:
    found: list[int] = []
    for start in range(0, len(session_ids), 500):
        chunk = session_ids[start:start + 500]
        found += [row[0] for row in conn.execute(
            f"SELECT id FROM messages WHERE session_id IN ({','.join('?' * len(chunk))}) "
            f"AND id NOT IN (SELECT id FROM {DOCSIZE})", chunk)]
    return tuple(sorted(found))


def run(conn: sqlite3.Connection) -> QuickPass:
    """The one pass, plus the sessions that claim messages but have none and the stale index entries."""
    indexed = has_index(conn)
    rows = _per_session(conn, indexed)
    orphans = tuple((sid, n) for sid, n, _ix, _mc, missing, _live in rows if missing)
    counts = [(sid, mc, n) for sid, n, _ix, mc, missing, live in rows
              if not missing and (mc is None or not live <= mc <= n)]
    counts += [tuple(row) for row in conn.execute(
        "SELECT id, message_count, 0 FROM sessions s WHERE coalesce(message_count, 0) != 0 "
        "AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id)")]
    unindexed: tuple[int, ...] = ()
    stale: tuple[int, ...] = ()
    if indexed:
        unindexed = _unindexed_ids(conn, [sid for sid, n, ix, _mc, _m, _live in rows if n != ix])
        # Exact without a second pass: index entries = (messages - unindexed) + stale.
        total, in_index = conn.execute(f"SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM {DOCSIZE})"
                                       ).fetchone()
        if in_index - (total - len(unindexed)) > 0:
            stale = tuple(row[0] for row in conn.execute(
                f"SELECT id FROM {DOCSIZE} WHERE id NOT IN (SELECT id FROM messages) ORDER BY id"))
    return QuickPass(orphans, tuple(sorted(counts)), unindexed, stale, indexed)
