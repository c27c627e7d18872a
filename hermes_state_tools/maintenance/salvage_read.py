"""Reading every row that can still be read from a damaged table.

A range of rowids that raises SQLITE_CORRUPT is bisected down to single rowids; a single rowid
is read by `rowid = ?` (one seek: a BETWEEN would step onto the neighbouring, destroyed page
and fail although the row itself is fine). The rowid space is bounded by whatever still
answers: the table's edges, sqlite_sequence, and the table's indexes.
"""

from __future__ import annotations

import bisect
import sqlite3
from dataclasses import dataclass, field
from typing import Any

CHUNK = 512
_MAX_ROWID = 2**63 - 1


@dataclass
class TableRead:
    """The rows read (rowid -> {column: value}) and the rowid ranges that could not be read."""

    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    lost: list[tuple[int, int]] = field(default_factory=list)


def _try(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[Any] | None:
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.DatabaseError:
        return None


def table_info(conn: sqlite3.Connection, table: str) -> list[tuple[str, Any]]:
    """(column, default value) of a table in the source, defaults as Python values."""
    return [(row[1], literal(row[4])) for row in conn.execute(f'PRAGMA table_info("{table}")')]


def literal(default: str | None) -> Any:
    """A DEFAULT clause as a value (the simple literals Hermes uses)."""
    if default is None or default.upper() == "NULL":
        return None
    for kind in (int, float):
        try:
            return kind(default)
        except ValueError:
            pass
    return default.strip("'")


def indexes_of(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    """(index name, its WHERE clause for partial indexes or '') of `table`."""
    out = []
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?",
                                  (table,)):
        text = sql or ""
        at = text.upper().find(" WHERE ")
        out.append((name, text[at:] if at >= 0 else ""))
    return out


def rowid_bounds(conn: sqlite3.Connection, table: str) -> tuple[int, int]:
    """The smallest and largest rowid anything still knows of (1, 0 when nothing answers)."""
    low: list[int] = [1]
    high: list[int] = []
    for sql, into in ((f'SELECT MIN(rowid) FROM "{table}"', low), (f'SELECT MAX(rowid) FROM "{table}"', high)):
        got = _try(conn, sql)
        if got and got[0][0] is not None:
            into.append(got[0][0])
    got = _try(conn, "SELECT seq FROM sqlite_sequence WHERE name = ?", (table,))
    if got and got[0][0] is not None:
        high.append(int(got[0][0]))
    for index, where in indexes_of(conn, table):
        got = _try(conn, f'SELECT MIN(rowid), MAX(rowid) FROM "{table}" INDEXED BY "{index}"{where}')
        if got and got[0][0] is not None:
            low.append(got[0][0])
            high.append(got[0][1])
    return (min(low), max(high)) if high else (1, 0)


class _Reader:
    def __init__(self, conn: sqlite3.Connection, table: str, columns: list[str]) -> None:
        listed = ", ".join(f'"{c}"' for c in columns)
        self.conn, self.columns, self.out = conn, columns, TableRead()
        self.range_sql = f'SELECT rowid, {listed} FROM "{table}" WHERE rowid BETWEEN ? AND ? ORDER BY rowid'
        self.one_sql = f'SELECT rowid, {listed} FROM "{table}" WHERE rowid = ?'

    def keep(self, row: Any) -> None:
        self.out.rows[row[0]] = dict(zip(self.columns, row[1:], strict=True))

    def lose(self, first: int, last: int) -> None:
        lost = self.out.lost
        if lost and lost[-1][1] == first - 1:
            lost[-1] = (lost[-1][0], last)
        else:
            lost.append((first, last))

    def seek_each(self, first: int, last: int) -> None:
        """Every rowid of the range sought alone: a seek goes where the b-tree's interior pages send it,
        never onto the misplaced page a range scan walks into (whose rows it would take for these)."""
        for rowid in range(first, last + 1):
            self.out.rows.pop(rowid, None)
            self.visit(rowid, rowid)

    def visit(self, first: int, last: int) -> None:
        if first == last:
            try:
                for row in self.conn.execute(self.one_sql, (first,)):
                    self.keep(row)
            except sqlite3.DatabaseError:
                self.lose(first, first)
            return
        reached = first - 1
        try:
            for row in self.conn.execute(self.range_sql, (first, last)):  # row by row: keep what came first
                if row[0] <= reached:  # out of order: a valid page of other rows stands where this range's were
                    self.seek_each(first, last)
                    return
                self.keep(row)
                reached = row[0]
            return
        except sqlite3.DatabaseError:
            pass
        first = reached + 1
        if first > last:
            return
        middle = (first + last) // 2
        self.visit(first, middle)
        self.visit(middle + 1, last)


def read_table(conn: sqlite3.Connection, table: str, columns: list[str], chunk: int = CHUNK) -> TableRead:
    """Every readable row of `table` (the given columns) and the rowid ranges lost."""
    reader = _Reader(conn, table, columns)
    low, high = rowid_bounds(conn, table)
    for start in range(low, high + 1, chunk):
        reader.visit(start, min(start + chunk - 1, high))
    try:  # past the known maximum: a damaged right edge hides the true one
        for row in conn.execute(reader.range_sql, (high + 1, _MAX_ROWID)):
            reader.keep(row)
    except sqlite3.DatabaseError:
        pass
    _seek_what_indexes_know(reader, table)
    return reader.out


def _seek_what_indexes_know(reader: _Reader, table: str) -> None:
    """A leaf overwritten by a valid page of other rows (a misdirected write) raises nothing: the range
    scan meets rowids past its end there and stops, silently skipping the rest of its range. Every
    rowid an index still holds that was neither read nor already lost is sought alone; one that is
    not found is lost."""
    known: set[int] = set()
    for index, where in indexes_of(reader.conn, table):
        got = _try(reader.conn, f'SELECT rowid FROM "{table}" INDEXED BY "{index}"{where}')
        known.update(row[0] for row in got or [])
    lost = reader.out.lost
    starts = [a for a, _b in lost]
    missing = []
    for rowid in sorted(known - reader.out.rows.keys()):
        at = bisect.bisect_right(starts, rowid) - 1
        if at < 0 or lost[at][1] < rowid:
            missing.append(rowid)
    for rowid in missing:
        reader.visit(rowid, rowid)
    if missing:
        reader.out.lost = _merged([*lost, *((r, r) for r in missing if r not in reader.out.rows)])


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(last, out[-1][1]))
        else:
            out.append((first, last))
    return out


def index_values(conn: sqlite3.Connection, table: str, index: str, column: str) -> dict[int, Any]:
    """rowid -> `column` as a (derived) index still holds it, to fill placeholders for lost rows."""
    got = _try(conn, f'SELECT rowid, "{column}" FROM "{table}" INDEXED BY "{index}"')
    return {rowid: value for rowid, value in (got or [])}


def indexed_rowids(conn: sqlite3.Connection, table: str, index: str) -> frozenset[int] | None:
    """Every rowid the index holds, read from the index alone; None when it cannot be read whole."""
    got = _try(conn, f'SELECT rowid FROM "{table}" INDEXED BY "{index}"')
    return None if got is None else frozenset(row[0] for row in got)
