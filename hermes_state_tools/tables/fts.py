"""The FTS5 index over message content: presence, recreation and rebuild."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from hermes_state_tools.core.layouts import SearchIndex, read_layout
from hermes_state_tools.core.schema import FTS_TABLE, object_names


class Index(NamedTuple):
    """Where message text sits in this file's FTS table: v6 (and v11-v22, inline) index one column. A
    later Hermes (v23+) indexes `content`, `tool_name` and `tool_calls` as columns of their own and its
    search matches all three; a search here then matches those columns (never another one a fork may
    add, a role) and snips the text column."""

    column: int = 0
    scope: str = ""

    def query(self, fts_query: str) -> str:
        return f"{self.scope} : ({fts_query})" if self.scope else fts_query


# The columns of a later Hermes' search index that its own search matches.
SEARCHED_COLUMNS = ("content", "tool_name", "tool_calls")


def text_index(conn: sqlite3.Connection) -> Index:
    names = [row[1] for row in conn.execute(f"PRAGMA table_info({FTS_TABLE})")]
    if names == ["content"] or "content" not in names:
        return Index()
    searched = [name for name in SEARCHED_COLUMNS if name in names]
    return Index(names.index("content"), "{" + " ".join(searched) + "}")


def search_indexes(conn: sqlite3.Connection) -> tuple[SearchIndex, ...]:
    """The search indexes of the file's own layout (core/layouts.py): v6's one external-content table,
    or a later Hermes' tables (its trigram index, its inline text) in that layout's own form."""
    return read_layout(conn).search


def missing_objects(conn: sqlite3.Connection) -> list[str]:
    """'table <name>' and 'trigger <name>' for each FTS object of the file's layout it lacks."""
    tables, triggers = object_names(conn, "table"), object_names(conn, "trigger")
    missing = []
    for index in search_indexes(conn):
        missing += [] if index.name in tables else [f"table {index.name}"]
        missing += [f"trigger {name}" for name, _ in index.triggers if name not in triggers]
    return missing


def recreate(conn: sqlite3.Connection) -> None:
    """Create whatever FTS table or trigger is missing, in the file's own layout's form, then rebuild the
    indexes from `messages`."""
    tables, triggers = object_names(conn, "table"), object_names(conn, "trigger")
    for index in search_indexes(conn):
        if index.name not in tables:
            conn.execute(index.sql)
        for name, sql in index.triggers:
            if name not in triggers:
                conn.execute(sql)
    rebuild(conn)


def rebuild(conn: sqlite3.Connection) -> None:
    """Rebuild every search index of the file's layout from the `messages` table."""
    for index in search_indexes(conn):
        index.rebuild(conn)


def optimize(conn: sqlite3.Connection) -> None:
    """Merge each search index's b-trees into one (faster queries, smaller file)."""
    tables = object_names(conn, "table")
    for index in search_indexes(conn):
        if index.name in tables:
            index.optimize(conn)


# FTS5 merges the segments of a level once it holds this many ('automerge', 4 by default). At 16 a
# level is merged only when FTS5 must: its crisis merge ('crisismerge', 16 by default) merges any
# level of 16 segments whatever 'automerge' says, so a larger value changes nothing.
_FEWEST_MERGES = 16


def merge_later(conn: sqlite3.Connection) -> None:
    """Let each level gather 16 segments before FTS5 merges them, for a file built by many inserts that no
    one searches meanwhile (store/fresh.py): a fifth less indexing work for 200,000 messages, and the
    same number of segments in the end. Kept in the index's config table until merge_as_usual."""
    conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('automerge', ?)", (_FEWEST_MERGES,))


def merge_as_usual(conn: sqlite3.Connection) -> None:
    """FTS5's default merging again, held as a file Hermes made holds it: no 'automerge' entry in the
    config table. (This connection keeps the setting it read; others read the default.)"""
    conn.execute(f"DELETE FROM {FTS_TABLE}_config WHERE k = 'automerge'")
