"""The layout a file rebuilt by `recover` or `repair` gets: the source's own.

A file a later Hermes wrote, of a layout this tool knows, is rebuilt in that layout (its version row,
its statements in Hermes' order, its search indexes and triggers), with `sessions` and `messages`
created as the source declares them, so columns a Hermes added without a version bump come along.
Any other source (version 6 or older, a layout this tool does not know, a schema that cannot be
read) is rebuilt as version 6, as before.
"""

from __future__ import annotations

import contextlib
import sqlite3

from hermes_state_tools.core.layouts import Layout, layout, read_layout
from hermes_state_tools.core.schema import SCHEMA_VERSION, create_schema

_CANONICAL = ("sessions", "messages")


def source_layout(conn: sqlite3.Connection) -> Layout:
    """The layout to rebuild a source in: its own known later layout, else version 6."""
    try:
        file = read_layout(conn)
    except sqlite3.DatabaseError:
        return layout(SCHEMA_VERSION)  # a damaged version row or schema: the rows are still read
    return file.layout if file.later and file.layout is not None else layout(SCHEMA_VERSION)


def _declared(conn: sqlite3.Connection, table: str) -> str | None:
    """The source's own CREATE TABLE of `table`, as SQLite keeps it (ALTER TABLE ADD COLUMN included)."""
    try:
        row = conn.execute("SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    except sqlite3.DatabaseError:
        return None
    return str(row[0]) if row and row[0] else None


def _own_indexes(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(name, CREATE sql) of the indexes the source has on sessions and messages."""
    try:
        return [(str(name), str(sql)) for name, sql in conn.execute(
            "SELECT name, sql FROM main.sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            "AND tbl_name IN ('sessions', 'messages') ORDER BY rowid")]
    except sqlite3.DatabaseError:
        return []


def create(dest: sqlite3.Connection, source: sqlite3.Connection, target: Layout) -> None:
    """`target`'s schema in the empty file on `dest`, with the source's own sessions and messages tables
    and the indexes it has on them beside the layout's (one a Hermes added without a version bump)."""
    dest.execute("BEGIN")  # one transaction: one sync, not one per statement
    if target.version == SCHEMA_VERSION:
        create_schema(dest)
        dest.execute("COMMIT")
        return
    own = {table: _declared(source, table) for table in _CANONICAL}
    for statement in target.statements:
        table = next((t for t in _CANONICAL if statement == target.tables.get(t)), None)
        dest.execute(own[table] or statement if table is not None else statement)
    for name, sql in _own_indexes(source):
        if name not in target.indexes:
            with contextlib.suppress(sqlite3.OperationalError):  # derived: an index that does not fit is no loss
                dest.execute(sql)
    dest.execute("INSERT INTO schema_version (version) VALUES (?)", (target.version,))
    dest.execute("COMMIT")


def search_tables(target: Layout) -> frozenset[str]:
    """The search indexes of `target`: built anew in the rebuilt file, never copied."""
    return frozenset(index.name for index in target.search)


def made_tables(target: Layout) -> frozenset[str]:
    """Tables `target` creates beside the canonical ones and its search indexes (state_meta,
    compression_locks): the rebuilt file has them, and they take the source's rows."""
    return frozenset(target.tables) - {"schema_version", *_CANONICAL} - search_tables(target)


def insert_triggers(target: Layout) -> dict[str, str]:
    """The triggers that index a new message: dropped while the rows are written, the index built once."""
    return {name: sql for name, sql in target.triggers.items() if name.endswith("_insert")}
