"""What a file of a later Hermes layout must still be after the toolkit wrote to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes_state_tools.core.layouts import read_layout


def schema_entries(path: Path) -> list[tuple[str, str, str, str]]:
    """Every sqlite_master entry of the file but the tool's own (hst_*): type, name, table and SQL."""
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute("SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master "
                                   "WHERE name NOT LIKE 'hst_%' AND name NOT LIKE 'sqlite_autoindex_hst%'"))
    finally:
        conn.close()


def hermes_objects(path: Path) -> dict[str, str]:
    """Every trigger, index and table of the file but the tool's own (hst_*) and SQLite's, with its SQL."""
    return {name: sql for kind, name, _, sql in schema_entries(path)
            if kind in ("trigger", "index", "table") and sql and not name.startswith("sqlite_")}


def search_index_agrees(path: Path) -> None:
    """Every search index of the file's layout passes FTS5's own check and holds the text its triggers give."""
    conn = sqlite3.connect(path)
    try:
        for index in read_layout(conn).search:
            conn.execute(f"INSERT INTO {index.name}({index.name}, rank) VALUES ('integrity-check', 1)")
            if index.inline:
                differ = conn.execute(f"SELECT COUNT(*) FROM messages m LEFT JOIN {index.name} f ON f.rowid = m.id "
                                      f"WHERE f.content IS NOT ({index.text('m')})").fetchone()[0]
                extra = conn.execute(f"SELECT COUNT(*) FROM {index.name} WHERE rowid NOT IN "
                                     "(SELECT id FROM messages)").fetchone()[0]
                assert (differ, extra) == (0, 0), index.name
    finally:
        conn.close()
