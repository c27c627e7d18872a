"""Deleting sessions: prune by age, delete one. Children are kept and orphaned, except, from Hermes'
schema 16 on, the subagent sessions marked as delegated from a deleted one (`model_config._delegate_from`),
which go with it as Hermes' own delete takes them."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence

from hermes_state_tools.core.layouts import DELEGATES_SINCE, delegated_from
from hermes_state_tools.core.schema import read_version
from hermes_state_tools.tables import extras

_DAY_S = 86_400
# Messages go in slices of this many sessions: a DELETE with triggers first collects every rowid
# it will delete, so one statement over half a million messages holds them all in memory.
_SESSIONS_PER_SLICE = 1000


def _fill_doomed(conn: sqlite3.Connection, ids: Sequence[str]) -> None:
    """The sessions to delete, numbered in the given order, in a temp table."""
    conn.execute("DROP TABLE IF EXISTS temp._doomed")
    conn.execute("CREATE TEMP TABLE _doomed (n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE)")
    conn.executemany("INSERT OR IGNORE INTO _doomed (id) VALUES (?)", ((i,) for i in ids))


_DELEGATED_FROM = delegated_from()


def _add_delegate_children(conn: sqlite3.Connection) -> None:
    """Add to `_doomed` the delegate children of its sessions, and theirs, as Hermes 16+ deletes them: a
    session marked as delegated from a doomed one, or a marked child of one."""
    version = read_version(conn)
    if version is None or version < DELEGATES_SINCE:
        return
    while conn.execute(
            f"INSERT OR IGNORE INTO _doomed (id) SELECT id FROM sessions WHERE id NOT IN (SELECT id FROM _doomed) "
            f"AND ({_DELEGATED_FROM} IN (SELECT id FROM _doomed) OR (parent_session_id IN (SELECT id FROM _doomed) "
            f"AND {_DELEGATED_FROM} IS NOT NULL)) ORDER BY started_at, id").rowcount:
        pass


def with_delegate_children(conn: sqlite3.Connection, ids: Sequence[str]) -> list[str]:
    """`ids` and the delegate children a delete of them takes along (Hermes 16+), in that order."""
    _fill_doomed(conn, ids)
    _add_delegate_children(conn)
    found = [row[0] for row in conn.execute("SELECT id FROM _doomed ORDER BY n")]
    conn.execute("DROP TABLE temp._doomed")
    return found


def _delete_doomed(conn: sqlite3.Connection, cascaded: bool = False) -> int:
    """Orphan the children (a file's delegate children go too, unless `cascaded`: added already), then
    delete messages, extra data and the sessions of `_doomed`; messages deleted."""
    if not cascaded:
        _add_delegate_children(conn)
    conn.execute(
        "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN (SELECT id FROM _doomed) "
        "AND id NOT IN (SELECT id FROM _doomed)"
    )
    extras.delete_for_sessions(conn, "SELECT id FROM _doomed")
    deleted = 0
    last = conn.execute("SELECT COALESCE(MAX(n), 0) FROM _doomed").fetchone()[0]
    for first in range(1, last + 1, _SESSIONS_PER_SLICE):
        deleted += conn.execute(
            "DELETE FROM messages WHERE session_id IN (SELECT id FROM _doomed WHERE n BETWEEN ? AND ?)",
            (first, first + _SESSIONS_PER_SLICE - 1),
        ).rowcount
    # One statement for the sessions: parent links among the doomed sessions themselves vanish with
    # them, and SQLite checks the foreign key at the end of the statement, so they need no UPDATE.
    conn.execute("DELETE FROM sessions WHERE id IN (SELECT id FROM _doomed)")
    conn.execute("DROP TABLE temp._doomed")
    return int(deleted)


def delete_ids(conn: sqlite3.Connection, ids: Sequence[str]) -> int:
    """Orphan the children, then delete messages, extra data and the sessions; returns messages deleted."""
    _fill_doomed(conn, ids)
    return _delete_doomed(conn)


def _prunable(older_than_days: float, source: str | None) -> tuple[str, list[object]]:
    """The WHERE clause of a prunable session: ended, started before the cutoff (of the source)."""
    cutoff = time.time() - older_than_days * _DAY_S
    if source:
        return "started_at < ? AND ended_at IS NOT NULL AND source = ?", [cutoff, source]
    return "started_at < ? AND ended_at IS NOT NULL", [cutoff]


def prunable_ids(conn: sqlite3.Connection, older_than_days: float, source: str | None) -> list[str]:
    """Ended sessions started before the cutoff (open sessions are never pruned), with the delegate
    children that go with them (Hermes 16+)."""
    where, params = _prunable(older_than_days, source)
    ids = [row[0] for row in conn.execute(f"SELECT id FROM sessions WHERE {where} ORDER BY started_at, id", params)]
    return with_delegate_children(conn, ids) if ids else ids


def prune(conn: sqlite3.Connection, older_than_days: float = 90, source: str | None = None) -> tuple[int, int]:
    """Delete prunable sessions with their messages; returns (sessions, messages) deleted."""
    ids = prunable_ids(conn, older_than_days, source)
    return len(ids), (delete_ids(conn, ids) if ids else 0)


def prune_confirmed(
    conn: sqlite3.Connection, confirmed: Sequence[str], older_than_days: float, source: str | None
) -> tuple[Sequence[str], int]:
    """Delete the confirmed sessions that are still prunable (one reopened since is kept); (ids, messages).

    The recheck is one SQL statement over the temp table, not a second list of every id in memory."""
    _fill_doomed(conn, confirmed)
    where, params = _prunable(older_than_days, source)
    # Each id looked up by its key: a prune in many batches must not scan the sessions table in each.
    dropped = conn.execute(f"DELETE FROM _doomed WHERE NOT EXISTS (SELECT 1 FROM sessions "
                           f"WHERE sessions.id = _doomed.id AND {where})", params).rowcount
    _add_delegate_children(conn)  # (so the ids say them; _delete_doomed finds nothing more to add)
    ids = [row[0] for row in conn.execute("SELECT id FROM _doomed ORDER BY n")] if dropped or len(
        confirmed) != conn.execute("SELECT COUNT(*) FROM _doomed").fetchone()[0] else confirmed
    return ids, _delete_doomed(conn, cascaded=True)


def message_counts(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, int]:
    """How many messages each of these sessions holds (a session without any is left out)."""
    counts: dict[str, int] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        counts.update(conn.execute(
            f"SELECT session_id, COUNT(*) FROM messages WHERE session_id IN ({','.join('?' * len(chunk))}) "
            "GROUP BY session_id", chunk).fetchall())
    return counts


def batches(ids: Sequence[str], counts: dict[str, int], most: Callable[[], int]) -> Iterator[list[str]]:
    """The sessions in their order, in runs of about `most()` rows (asked again for each run: the caller
    paces them); a session is never split (one with more messages is a run alone), so deleting run by
    run keeps each session whole."""
    batch: list[str] = []
    held, limit = 0, most()
    for session_id in ids:
        rows = counts.get(session_id, 0) + 1  # (its own row: a run of empty sessions stays bounded too)
        if batch and held + rows > limit:
            yield batch
            batch, held, limit = [], 0, most()
        batch.append(session_id)
        held += rows
    if batch:
        yield batch


def delete(conn: sqlite3.Connection, session_id: str) -> bool:
    """Delete one session and its messages; its children stay, orphaned. False if unknown."""
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        return False
    delete_ids(conn, [session_id])
    return True
