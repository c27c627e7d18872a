"""Schema history as data: one small step per version, each committed with its version bump.

A crash between steps leaves a database whose version row names the last step that
committed; every step is idempotent, so the next open simply carries on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from hermes_state_tools.core.layouts import FileLayout, layout, read_layout
from hermes_state_tools.core.schema import (
    INDEXES,
    NEWEST_KNOWN,
    SCHEMA_VERSION,
    TABLE_COLUMNS,
    columns_at,
    create_schema,
    is_newer,
    object_names,
    read_version,
    table_columns,
)
from hermes_state_tools.errors import SchemaTooNewError
from hermes_state_tools.tables import fts, titles

T = TypeVar("T")
Step = Callable[[sqlite3.Connection], list[dict[str, str]]]


@dataclass
class UpgradeReport:
    """What opening or upgrading a database did to its schema."""

    from_version: int
    to_version: int
    created: bool = False
    steps: list[str] = field(default_factory=list)
    renamed_titles: list[dict[str, str]] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.created or bool(self.steps or self.renamed_titles or self.repairs)


def _add_columns(conn: sqlite3.Connection, table: str, version: int) -> None:
    present = table_columns(conn, table)
    for column in TABLE_COLUMNS[table]:
        if column.since == version and column.name not in present:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column.name} {column.decl}")


def _columns_step(table: str, version: int) -> Step:
    def step(conn: sqlite3.Connection) -> list[dict[str, str]]:
        _add_columns(conn, table, version)
        return []

    return step


def _unique_titles_step(conn: sqlite3.Connection) -> list[dict[str, str]]:
    renames = titles.dedupe_titles(conn)
    conn.execute(next(i.sql for i in INDEXES if i.name == "idx_sessions_title_unique"))
    return renames


# version produced -> (description, step)
STEPS: dict[int, tuple[str, Step]] = {
    2: ("v2: messages.finish_reason", _columns_step("messages", 2)),
    3: ("v3: sessions.title", _columns_step("sessions", 3)),
    4: ("v4: unique index on sessions.title", _unique_titles_step),
    5: ("v5: sessions billing and cache-token columns", _columns_step("sessions", 5)),
    6: ("v6: messages reasoning columns", _columns_step("messages", 6)),
}


def detect_schema_version(conn: sqlite3.Connection) -> int:
    """The version the file really is at, judged by the columns and indexes present."""
    messages, sessions = table_columns(conn, "messages"), table_columns(conn, "sessions")
    if {"reasoning", "reasoning_details", "codex_reasoning_items"} <= messages:
        return 6
    if {c.name for c in columns_at("sessions", 5)} <= sessions:
        return 5
    if "idx_sessions_title_unique" in object_names(conn, "index"):
        return 4
    if "title" in sessions:
        return 3
    if "finish_reason" in messages:
        return 2
    return 1


def is_empty(conn: sqlite3.Connection) -> bool:
    """True when the file holds neither Hermes table (a new or foreign database)."""
    return not ({"sessions", "messages"} & object_names(conn, "table"))


def starting_version(conn: sqlite3.Connection) -> int:
    """Where the upgrade starts: the version row, unless it is missing, empty, no version at all (0 or
    below) or ahead of the columns."""
    stored = read_version(conn)
    detected = detect_schema_version(conn)
    if stored is None or stored < 1:
        return detected
    return stored if is_newer(stored) else min(stored, detected)


def set_version(conn: sqlite3.Connection, version: int) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    conn.execute("DELETE FROM schema_version")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))


def create_fresh(conn: sqlite3.Connection, schema: int = SCHEMA_VERSION) -> UpgradeReport:
    """Create a whole schema: v6, or a later Hermes' layout exactly as its own code creates it (the caller
    wraps this in one transaction)."""
    if schema == SCHEMA_VERSION:
        create_schema(conn)
    else:
        layout(schema).create(conn)
    return UpgradeReport(from_version=0, to_version=schema, created=True)


def missing_structure(conn: sqlite3.Connection) -> list[str]:
    """Names of the columns, indexes, FTS tables and triggers of the file's layout it lacks. A later
    Hermes' file is never given columns (that Hermes adds its own): only its indexes and search
    objects, in its own form."""
    later = later_layout(conn)
    indexes = object_names(conn, "index")
    if later is not None:
        assert later.layout is not None
        return [f"index {name}" for name in later.layout.indexes if name not in indexes] + fts.missing_objects(conn)
    missing = [
        f"column {table}.{c.name}"
        for table, cols in TABLE_COLUMNS.items()
        for c in cols
        if c.name not in table_columns(conn, table)
    ]
    missing += [f"index {i.name}" for i in INDEXES if i.name not in indexes]
    missing += fts.missing_objects(conn)
    return missing


def restore_structure(conn: sqlite3.Connection) -> tuple[list[str], list[dict[str, str]]]:
    """Recreate missing columns, indexes, FTS tables and triggers (a later Hermes' file: its indexes
    and search objects, from its own layout); rebuild the search index if it was broken."""
    missing = missing_structure(conn)
    renames: list[dict[str, str]] = []
    if not missing:
        return missing, renames
    later = later_layout(conn)
    if later is None:
        for version in range(2, SCHEMA_VERSION + 1):
            for table in TABLE_COLUMNS:
                _add_columns(conn, table, version)
    if "index idx_sessions_title_unique" in missing:
        renames = titles.dedupe_titles(conn)
    index_sql = later.layout.indexes if later is not None and later.layout is not None else {
        i.name: i.sql for i in INDEXES}
    present = object_names(conn, "index")
    for name, sql in index_sql.items():
        if name not in present:
            conn.execute(sql)
    if fts.missing_objects(conn):
        fts.recreate(conn)
    return missing, renames


def later_layout(conn: sqlite3.Connection) -> FileLayout | None:
    """The layout of a file a later Hermes wrote (None: version 6 or older, or no version row); a layout
    this tool does not know is refused (SchemaTooNewError): nothing here may write into it."""
    version = read_version(conn)
    if version is None or not is_newer(version):
        return None
    file = read_layout(conn)
    if not file.known:
        path = next((row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main"), "")
        raise SchemaTooNewError(path, version, NEWEST_KNOWN, file.unknown_because)
    return file


def refuse_newer_under_lock(conn: sqlite3.Connection) -> bool:
    """Inside a write transaction: True when a later Hermes upgraded the file since it was read (it held
    the lock meanwhile) and now owns its schema; writing a version of 6 over its own would make it run
    its migrations again on a file that already has their columns. A layout this tool does not know is
    refused (SchemaTooNewError)."""
    return later_layout(conn) is not None


def _step_transaction(version: int) -> Callable[[sqlite3.Connection], list[dict[str, str]] | None]:
    _, step = STEPS[version]

    def apply(conn: sqlite3.Connection) -> list[dict[str, str]] | None:
        if refuse_newer_under_lock(conn) or starting_version(conn) >= version:
            return None  # another process made this step while we waited for the lock
        renames = step(conn)
        set_version(conn, version)
        return renames

    return apply


class RunWrite(Protocol):
    """The write runner: runs `fn` in one write transaction and returns what it returned."""

    def __call__(self, fn: Callable[[sqlite3.Connection], T]) -> T: ...


def bring_up_to_date(conn: sqlite3.Connection, run: RunWrite, schema: int = SCHEMA_VERSION) -> UpgradeReport:
    """Create (in the layout of `schema`) or upgrade the schema, one transaction per step; `run` is the
    write runner.

    Reads first and writes only when something is pending, so opening an up-to-date
    database never takes the write lock.
    """
    if is_empty(conn):
        created = run(lambda c: create_fresh(c, schema) if is_empty(c) else None)
        if created is not None:
            return created
    if (later := later_layout(conn)) is not None:
        return _keep_later_layout(conn, run, later)
    start = starting_version(conn)
    report = UpgradeReport(from_version=start, to_version=SCHEMA_VERSION)
    for version in range(start + 1, SCHEMA_VERSION + 1):
        renames = run(_step_transaction(version))
        if renames is not None:
            report.renamed_titles += renames
            report.steps.append(STEPS[version][0])
    if missing_structure(conn) or read_version(conn) != SCHEMA_VERSION:
        def finish(c: sqlite3.Connection) -> tuple[list[str], list[dict[str, str]]]:
            if refuse_newer_under_lock(c):
                return [], []
            repaired = restore_structure(c)
            set_version(c, SCHEMA_VERSION)
            return repaired

        missing, renames = run(finish)
        report.repairs += [f"recreated {name}" for name in missing]
        report.renamed_titles += renames
    return report


def _keep_later_layout(conn: sqlite3.Connection, run: RunWrite, later: FileLayout) -> UpgradeReport:
    """A later Hermes' file keeps its version and layout: only a missing index or search object of that
    layout is recreated, in its own form (as that Hermes recreates them when it opens the file)."""
    assert later.version is not None
    report = UpgradeReport(from_version=later.version, to_version=later.version)
    if missing_structure(conn):
        missing, renames = run(restore_structure)
        report.repairs += [f"recreated {name}" for name in missing]
        report.renamed_titles += renames
    return report


def pending(conn: sqlite3.Connection) -> bool:
    """True when opening this file for writing would change its schema."""
    if is_empty(conn):
        return True
    if later_layout(conn) is not None:
        return bool(missing_structure(conn))
    return (
        starting_version(conn) < SCHEMA_VERSION
        or read_version(conn) != SCHEMA_VERSION
        or bool(missing_structure(conn))
    )


def rebuilds_search_index(conn: sqlite3.Connection) -> bool:
    """True when the upgrade would recreate the FTS index and fill it from every message (one long write)."""
    return not is_empty(conn) and bool(fts.missing_objects(conn))
