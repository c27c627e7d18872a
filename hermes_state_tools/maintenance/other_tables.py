"""The tables, views and triggers of a database that are not Hermes' own, carried by recover and
repair into the file they build: a newer Hermes' tables, this tool's extra data, another tool's.

Each table is copied whole or not at all (a savepoint), rows first and its indexes and triggers
after (so no trigger fires on the copy). A virtual table is created as it was, which makes its
shadow tables, and those take the source's rows as they are; one the building SQLite cannot
create (a module or tokenizer it lacks) keeps its data as its shadow tables, plain. What cannot be
carried is named, never dropped without a word. Derived tables are not copied: the search index
(built anew) and this tool's CJK side table (`maintain` builds it again).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hermes_state_tools.core.connection import is_io_error
from hermes_state_tools.core.schema import FTS_TABLE
from hermes_state_tools.maintenance.locate_damage import CANONICAL_TABLES
from hermes_state_tools.search.trigram import STATE_TABLE, TRIGRAM_TABLE

_DERIVED = frozenset({FTS_TABLE, TRIGRAM_TABLE, STATE_TABLE})
# The tables each virtual-table module keeps its data in ("<table>_<suffix>"), for a SQLite before 3.37,
# whose PRAGMA table_list does not name them.
_SHADOW_SUFFIXES = {"fts5": ("data", "idx", "content", "docsize", "config"),
                    "fts4": ("content", "segments", "segdir", "docsize", "stat"),
                    "fts3": ("content", "segments", "segdir", "docsize", "stat"),
                    "rtree": ("node", "rowid", "parent"), "rtree_i32": ("node", "rowid", "parent"),
                    "geopoly": ("node", "rowid", "parent")}
_MODULE = re.compile(r"\bUSING\s+(\w+)", re.IGNORECASE)


@dataclass(frozen=True)
class Rows:
    """A plain table's insertable columns (no generated ones) and its rows in them; None: unreadable."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]] | None


@dataclass(frozen=True)
class Other:
    """A table as read from the source: its CREATE sql, the indexes and triggers on it, and its rows
    (for a virtual table, those of each shadow table, with the shadow table's own CREATE sql)."""

    name: str
    sql: str
    after: list[str]
    data: Rows | None  # None for a virtual table
    shadows: dict[str, tuple[str, Rows]] = field(default_factory=dict)

    @property
    def readable(self) -> bool:
        parts = [self.data] if self.data is not None else []
        parts += [rows for _sql, rows in self.shadows.values()]
        return all(part.rows is not None for part in parts)


@dataclass(frozen=True)
class Others:
    tables: list[Other]
    views: list[tuple[str, str]]  # (name, CREATE sql)


def quoted(name: str) -> str:
    """An identifier as SQL spells it, whatever it holds."""
    return '"' + name.replace('"', '""') + '"'


def read(conn: sqlite3.Connection, derived: frozenset[str] = frozenset()) -> Others:
    """Every table, view and trigger of the source that is not Hermes' own nor derived (also the
    search tables named in `derived`: a later layout's, built anew), read whole."""
    master = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                          "AND name NOT GLOB 'sqlite_*' ORDER BY rowid").fetchall()
    sql_of = {name: sql for kind, name, _t, sql in master if kind == "table"}
    kinds = _table_kinds(conn)
    shadows = {name: _shadows_of(name, sql, sql_of, kinds) for name, sql in sql_of.items() if _is_virtual(sql)}
    shadowed = {n for found in shadows.values() for n in found}
    tables = []
    for name, sql in sql_of.items():
        if name in CANONICAL_TABLES or name in _DERIVED or name in derived or name in shadowed:
            continue
        after = [s for kind, _n, table, s in master if kind in ("index", "trigger") and table == name]
        if name in shadows:
            tables.append(Other(name, sql, after, None,
                                {s: (sql_of[s], _rows(conn, s)) for s in shadows[name]}))
        else:
            tables.append(Other(name, sql, after, _rows(conn, name)))
    views = [(name, sql) for kind, name, _t, sql in master if kind == "view"]
    return Others(tables, views)


def write(dest: sqlite3.Connection, others: Others, kept: list[str], lost: list[str],
          existing: frozenset[str] = frozenset()) -> None:
    """Every table, then every view, into DEST inside its open transaction; each one's name goes to
    `kept` or `lost`. A table DEST's layout already made (`existing`: a later Hermes' state_meta)
    takes the rows alone, verbatim. A full disk (or SQLite ending the transaction) ends the whole build."""
    for other in others.tables:
        if not other.readable:
            lost.append(other.name)
        elif other.name in existing and other.data is not None:
            (kept if _tried(dest, lambda o=other: _insert(dest, o.name, o.data)) else lost).append(other.name)
        elif _tried(dest, lambda o=other: _copy(dest, o)):
            kept.append(other.name)
        else:  # a module or tokenizer this SQLite lacks, a constraint the rows break, another shape
            lost.append(other.name)
            if other.shadows and _tried(dest, lambda o=other: _copy_shadows_plain(dest, o)):
                kept.extend(other.shadows)  # the data kept, for a SQLite with that module to read
    for name, sql in others.views:
        (kept if _tried(dest, lambda s=sql: dest.execute(s)) else lost).append(name)


def _tried(dest: sqlite3.Connection, work: Any) -> bool:
    """Run `work` whole or not at all; False when SQLite refused it (the reason goes in the report's
    lists), raising what must end the build."""
    try:
        with _savepoint(dest):
            work()
    except sqlite3.DatabaseError as exc:
        if is_io_error(exc) or not dest.in_transaction:
            raise
        return False
    return True


@contextmanager
def _savepoint(dest: sqlite3.Connection) -> Iterator[None]:
    dest.execute("SAVEPOINT other_table")
    try:
        yield
    except BaseException:
        if dest.in_transaction:  # (SQLite rolls the whole transaction back itself on a full disk)
            dest.execute("ROLLBACK TO other_table")
            dest.execute("RELEASE other_table")
        raise
    dest.execute("RELEASE other_table")


def _copy(dest: sqlite3.Connection, other: Other) -> None:
    dest.execute(other.sql)  # a virtual table makes its own shadow tables, which take the source's rows
    if other.data is not None:
        _insert(dest, other.name, other.data)
    for shadow, (_sql, rows) in other.shadows.items():
        dest.execute(f"DELETE FROM {quoted(shadow)}")
        _insert(dest, shadow, rows)
    for statement in other.after:
        dest.execute(statement)


def _copy_shadows_plain(dest: sqlite3.Connection, other: Other) -> None:
    for shadow, (sql, rows) in other.shadows.items():
        dest.execute(sql)
        _insert(dest, shadow, rows)


def _insert(dest: sqlite3.Connection, table: str, data: Rows) -> None:
    if data.rows:
        columns = ", ".join(map(quoted, data.columns))
        marks = ", ".join("?" * len(data.columns))
        dest.executemany(f"INSERT INTO {quoted(table)} ({columns}) VALUES ({marks})", data.rows)


def _rows(conn: sqlite3.Connection, table: str) -> Rows:
    """The rows of a plain table in its insertable columns (table_xinfo's hidden 0: not generated)."""
    try:
        columns = tuple(row[1] for row in conn.execute(f"PRAGMA main.table_xinfo({quoted(table)})") if row[6] == 0)
        select = ", ".join(map(quoted, columns))
        return Rows(columns, conn.execute(f"SELECT {select} FROM {quoted(table)} NOT INDEXED").fetchall())
    except sqlite3.DatabaseError:
        return Rows((), None)


def _table_kinds(conn: sqlite3.Connection) -> dict[str, str]:
    """name -> 'table', 'virtual', 'shadow' as SQLite 3.37+ says (PRAGMA table_list); {} before it."""
    try:
        return {row[1]: row[2] for row in conn.execute("PRAGMA main.table_list")}
    except sqlite3.DatabaseError:
        return {}


def _shadows_of(table: str, sql: str, sql_of: dict[str, str], kinds: dict[str, str]) -> list[str]:
    """The shadow tables of the virtual table `table`: as SQLite names them, else by its module's
    suffixes (a real table that merely looks like one is then taken for one)."""
    prefix = table + "_"
    if kinds:
        return [name for name in sql_of if name.startswith(prefix) and kinds.get(name) == "shadow"]
    module = _MODULE.search(sql)
    suffixes = _SHADOW_SUFFIXES.get(module.group(1).lower(), ()) if module else ()
    return [name for name in sql_of if name.startswith(prefix) and name[len(prefix):] in suffixes]


def _is_virtual(sql: str) -> bool:
    return sql.lstrip()[:20].upper().replace(" ", "").startswith("CREATEVIRTUAL")
