"""The FTS5 index over message content: presence, recreation and rebuild."""

from __future__ import annotations

import sqlite3

from hermes_state_tools.core.schema import FTS_TABLE, FTS_TABLE_SQL, TRIGGERS, object_names


def missing_objects(conn: sqlite3.Connection) -> list[str]:
    """'table messages_fts' and 'trigger <name>' for each FTS object the file lacks."""
    missing = [] if FTS_TABLE in object_names(conn, "table") else [f"table {FTS_TABLE}"]
    triggers = object_names(conn, "trigger")
    return missing + [f"trigger {name}" for name in TRIGGERS if name not in triggers]


def recreate(conn: sqlite3.Connection) -> None:
    """Create whatever FTS table or trigger is missing, then rebuild the index from `messages`."""
    conn.execute(FTS_TABLE_SQL)
    for sql in TRIGGERS.values():
        conn.execute(sql)
    rebuild(conn)


def rebuild(conn: sqlite3.Connection) -> None:
    """Rebuild `messages_fts` from the `messages` table (external-content 'rebuild' command)."""
    conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')")


def optimize(conn: sqlite3.Connection) -> None:
    """Merge the FTS index b-trees into one (faster queries, smaller file)."""
    conn.execute(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('optimize')")
