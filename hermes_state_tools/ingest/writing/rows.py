"""Inserting the import's messages rows (into the store, or into a staging file), and a session's columns as stored.

A row is core/message_rows.py's: short (7 columns) or whole (12). Rows go in by runs of one
size, in their order: ids follow that order.
"""

from __future__ import annotations

import functools
import itertools
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.message_rows import MESSAGE_COLUMNS, Row
from hermes_state_tools.core.records import Problem
from hermes_state_tools.core.schema import SESSION_FIELDS
from hermes_state_tools.core.surrogates import without_surrogates

if TYPE_CHECKING:
    from hermes_state_tools.ingest.planning.prepared import Prepared

_SESSION_FIELD_SET = frozenset(SESSION_FIELDS)


# Rows per INSERT of many VALUES: under SQLite's oldest limit of 999 bound values for 12 columns.
# One statement binding a run of rows costs about two thirds of executemany's row-by-row steps.
ROWS_PER_INSERT = 80
# SQLite copies every bound text until the statement ends: a chunk holding more than this much
# content goes row by row, so a session of huge tool outputs is never held twice 80 rows at a time.
CHUNK_TEXT = 2**20


@functools.cache
def _insert_statement(table: str, size: int, rows: int = 1) -> str:
    values = ", ".join([f"({', '.join('?' * size)})"] * rows)
    return f"INSERT INTO {table} ({', '.join(MESSAGE_COLUMNS[:size])}) VALUES {values}"


def _insert_in_order(conn: sqlite3.Connection, table: str, rows: Sequence[Row]) -> None:
    for size, grouped in itertools.groupby(rows, key=len):
        run = list(grouped)
        whole = len(run) - len(run) % ROWS_PER_INSERT
        for start in range(0, whole, ROWS_PER_INSERT):
            _insert_chunk(conn, table, size, run[start:start + ROWS_PER_INSERT])
        if whole < len(run):
            conn.executemany(_insert_statement(table, size), run[whole:])


def _insert_chunk(conn: sqlite3.Connection, table: str, size: int, chunk: list[Row]) -> None:
    """ROWS_PER_INSERT rows of one width in one statement; row by row when they hold much text."""
    one_by_one = _insert_statement(table, size)
    if sum(len(row[2]) for row in chunk if type(row[2]) is str) > CHUNK_TEXT:
        conn.executemany(one_by_one, chunk)
        return
    try:
        conn.execute(_insert_statement(table, size, ROWS_PER_INSERT), list(itertools.chain.from_iterable(chunk)))
    except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
        # A value SQLite cannot bind (the chunk stored nothing): row by row, so the error the
        # session is reported with names the parameter of its row, not of the chunk.
        conn.executemany(one_by_one, chunk)
        raise


def insert_rows(conn: sqlite3.Connection, table: str, rows: Sequence[Row]) -> tuple[Problem, ...]:
    """Insert one session's rows in order; text holding a lone surrogate is stored as U+FFFD. No problem
    is returned for it any more: the readers report each one with its file and line (a surrogate only
    comes from a JSON escape), and a second, per-session entry would count it twice."""
    # executemany stops at the first row it cannot bind with the earlier rows already in: the
    # savepoint takes them back out before the cleaned retry.
    problems: tuple[Problem, ...] = ()
    conn.execute("SAVEPOINT import_rows")
    try:
        _insert_in_order(conn, table, rows)
    except UnicodeEncodeError:  # rare: some text held a lone surrogate
        conn.execute("ROLLBACK TO import_rows")
        _insert_in_order(conn, table, [tuple(without_surrogates(v) for v in row) for row in rows])
    conn.execute("RELEASE import_rows")
    return problems


def session_values(plan: Prepared, row: dict[str, Any]) -> dict[str, Any]:
    """The sessions columns as stored: JSON spelled, no lone surrogates; a new session's counters come
    from its plan (existing ones are recounted in SQL)."""
    if isinstance(row.get("model_config"), (dict, list)):
        row["model_config"] = jsonutil.dumps(row["model_config"])
    # (Text is checked inline: this runs for every field of every session imported.)
    row = {k: v if type(v) is not str or v.isascii() else without_surrogates(v)
           for k, v in row.items() if k in _SESSION_FIELD_SET}
    if plan.create:
        kept = _stored_counters(row, plan.message_count, plan.tool_calls)
        row["message_count"] = kept[0] if kept else plan.message_count
        row["tool_call_count"] = kept[1] if kept else plan.tool_calls or 0  # None: recounted in SQL by the writer
    return row


def _stored_counters(row: dict[str, Any], messages: int, tool_calls: int | None) -> tuple[int, int] | None:
    """The counters an exported session (or a merged file's) carries, kept when they are as a Hermes keeps
    them: in-place compaction sets them to the live rows' counts, and a rewind leaves them, so a stored
    count may be below the rows written but never above. A count another program made up is recounted."""
    stored, calls = row.get("message_count"), row.get("tool_call_count")
    if type(stored) is not int or type(calls) is not int or tool_calls is None:
        return None
    return (stored, calls) if 0 <= stored <= messages and 0 <= calls <= tool_calls else None
