"""What `check` and `repair` expect of a file, in the file's own layout (core/layouts.py).

A file a later Hermes wrote is held to that Hermes' definitions, not to version 6's: its triggers by
name and body, its indexes, its counters as that Hermes keeps them. Version 6 files (and files of a
layout the tool does not know, which are only read) are held to version 6.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from hermes_state_tools.core.layouts import Layout, SearchIndex, layout, normalized, read_layout
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.tables import counters
from hermes_state_tools.tables.counters import REAL_MESSAGE_COUNT, REAL_TOOL_CALL_COUNT

# What a trigger of the legacy inline form (v11-v22) does that an external-content index (v6-v10)
# must never see: a plain DELETE reads the row's text back from `messages`, which an update has
# already changed, and removes tokens the index never held (FTS5's index is then corrupt).
_PLAIN_DELETE = "DELETE FROM {name} WHERE"


def expected_layout(conn: sqlite3.Connection) -> Layout:
    """The layout whose definitions the file is held to (version 6's for a layout the tool does not know)."""
    return read_layout(conn).layout or layout(SCHEMA_VERSION)


def keeps_v6_search_index(conn: sqlite3.Connection) -> bool:
    """A file of a layout this tool does not know whose `messages_fts` is still version 6's own table:
    what a Hermes of schema 23 or later leaves of a v6 file until `hermes sessions optimize-storage`
    (it calls that index legacy and keeps it). Version 6's search checks then apply to that index."""
    if read_layout(conn).known:
        return False
    own = layout(SCHEMA_VERSION).search[0]
    row = conn.execute("SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = ?", (own.name,)).fetchone()
    return row is not None and normalized(row[0]) == normalized(own.sql)


@dataclass(frozen=True)
class TriggerDrift:
    """One trigger of the layout the file lacks (`present` None) or holds with another body."""

    name: str
    expected: str
    present: str | None
    index: SearchIndex

    @property
    def hazard(self) -> bool:
        """The telltale of a v6-v10 file a Hermes of schema 23 or later opened: its update trigger
        replaced by the legacy inline body over an external-content index (hermes-versions.md,
        'Cross-version hazard'); the first content update then corrupts the search index."""
        return (self.present is not None and not self.index.inline
                and _PLAIN_DELETE.format(name=self.index.name) in normalized(self.present))


def trigger_drift(conn: sqlite3.Connection) -> list[TriggerDrift]:
    """Each trigger of the file's layout that is missing or whose body is not the layout's own
    (compared as meaning: whitespace and IF NOT EXISTS aside)."""
    present = dict(conn.execute("SELECT name, sql FROM main.sqlite_master WHERE type = 'trigger'").fetchall())
    return [TriggerDrift(name, sql, present.get(name), index)
            for index in expected_layout(conn).search for name, sql in index.triggers
            if normalized(present.get(name)) != normalized(sql)]


def restore_triggers(conn: sqlite3.Connection) -> list[TriggerDrift]:
    """Put every missing or altered trigger of the file's layout back in the layout's own form."""
    drifted = trigger_drift(conn)
    for trigger in drifted:
        conn.execute(f'DROP TRIGGER IF EXISTS "{trigger.name}"')
        conn.execute(trigger.expected)
    return drifted


def counter_mismatches(conn: sqlite3.Connection) -> list[tuple[str, int, int, int, int]]:
    """(id, stored messages, real messages, stored tool calls, real tool calls) where the stored counters
    are not what the file's Hermes keeps. Version 6 counts every row. A layout with `active` keeps
    message_count through a rewind (rows made inactive stay counted), sets it to the live rows on an
    in-place compaction and adds one per append: only a count below the live rows or above all rows is
    wrong; tool_call_count likewise."""
    if not read_layout(conn).hides_rewound:
        return counters.mismatches(conn)
    real_m, real_t = REAL_MESSAGE_COUNT, REAL_TOOL_CALL_COUNT
    rows = conn.execute(
        f"SELECT id, message_count, {real_m}, tool_call_count, {real_t}, {counters.LIVE_MESSAGE_COUNT}, "
        f"{counters.LIVE_TOOL_CALL_COUNT} FROM sessions"
    )
    return [tuple(row[:5]) for row in rows
            if not (_within(row[1], row[5], row[2]) and _within(row[3], row[6], row[4]))]


def _within(stored: object, low: int, high: int) -> bool:
    return isinstance(stored, int) and low <= stored <= high


def add_placeholder_session(conn: sqlite3.Connection, session_id: str, source: str, started: float | None,
                            ended: float | None, end_reason: str) -> None:
    """A session row for messages whose own session is gone, with the values the file's layout gives a
    new row (a later Hermes' archived = 0, ...)."""
    given = read_layout(conn).new_row_values("sessions")
    columns = ", ".join(("id", "source", "started_at", "ended_at", "end_reason", *given))
    conn.execute(f"INSERT INTO sessions ({columns}) VALUES ({', '.join('?' * (5 + len(given)))})",
                 (session_id, source, started, ended, end_reason, *given.values()))
