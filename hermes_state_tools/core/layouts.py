"""Every Hermes layout this tool knows, as data, and the layout a file holds.

A layout is the schema one Hermes schema version creates: version 6 as core/schema.py describes it,
versions 7 to 17 as the SQL in hermes_state_tools/layouts/v<N>.sql, which scripts/make_layouts.py
writes by running `SessionDB()` of the Hermes commit where that version first appeared. Beside the
schema, the few rules a foreign writer must keep that the schema alone does not say (see
hermes-versions.md, section 2) are stated here once: the text each search index holds, and the
values a new row is given.

A file's layout is told from what it holds, not from its version row alone: its version names the
layout, but a file whose search index has another form than that layout's, or whose tables require
a value this tool cannot give (a fork's columns), is of no layout the tool knows. Such a file is
read through the columns the tool knows and never written.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from hermes_state_tools.core.records import HERMES_COLUMNS_KEY
from hermes_state_tools.core.schema import NEWEST_KNOWN, SCHEMA_VERSION, read_version, schema_statements

LATER_VERSIONS = tuple(range(SCHEMA_VERSION + 1, NEWEST_KNOWN + 1))

# The text an inline (contentful) index of v11 and later holds for one message, as its triggers
# spell it: the message text, its tool name and its tool calls.
_INLINE_TEXT = "COALESCE({m}content, '') || ' ' || COALESCE({m}tool_name, '') || ' ' || COALESCE({m}tool_calls, '')"

# What a new row gets, where the file has the column, unless the row brings its own value: a
# message is live, not compacted away, not observed context; a session is not archived or rewound
# and made no API call this tool knows of. Written explicitly, because a column a Hermes reconcile
# added may lack its default (Hermes issue #51646: `active` NULL hides the whole history).
NEW_ROW_VALUES: Mapping[str, Mapping[str, int]] = {
    "messages": {"active": 1, "compacted": 0, "observed": 0},
    "sessions": {"api_call_count": 0, "archived": 0, "rewind_count": 0},
}


@dataclass(frozen=True)
class SearchIndex:
    """One FTS5 table over the messages: its name, whether it holds its own text (inline, v11+) or
    reads `messages` (external content), and its triggers as SQLite records them."""

    name: str
    sql: str
    inline: bool
    triggers: tuple[tuple[str, str], ...]

    def text(self, alias: str = "") -> str:
        """The SQL expression of the text this index holds for a messages row (`alias.` columns)."""
        prefix = f"{alias}." if alias else ""
        return _INLINE_TEXT.format(m=prefix) if self.inline else f"{prefix}content"

    def index_from(self, conn: sqlite3.Connection, first_id: int) -> None:
        """Index the messages from id `first_id` on, exactly as the insert trigger would have."""
        conn.execute(f"INSERT INTO {self.name}(rowid, content) SELECT id, {self.text()} FROM messages "
                     "WHERE id >= ?", (first_id,))

    def rebuild(self, conn: sqlite3.Connection) -> None:
        """Fill the index anew from every message."""
        if self.inline:
            conn.execute(f"DELETE FROM {self.name}")
            conn.execute(f"INSERT INTO {self.name}(rowid, content) SELECT id, {self.text()} FROM messages")
        else:
            conn.execute(f"INSERT INTO {self.name}({self.name}) VALUES ('rebuild')")

    def optimize(self, conn: sqlite3.Connection) -> None:
        conn.execute(f"INSERT INTO {self.name}({self.name}) VALUES ('optimize')")


@dataclass(frozen=True)
class Layout:
    """The schema of one Hermes version: its statements in the order Hermes creates them, and what they
    make (columns with their declarations, indexes, tables, search indexes and their triggers)."""

    version: int
    statements: tuple[str, ...]
    columns: Mapping[str, tuple[tuple[str, str, bool, str | None], ...]]  # table -> (name, type, notnull, default)
    indexes: Mapping[str, str]
    tables: Mapping[str, str]
    search: tuple[SearchIndex, ...]

    @property
    def name(self) -> str:
        return f"Hermes schema {self.version}"

    @property
    def triggers(self) -> dict[str, str]:
        return {name: sql for index in self.search for name, sql in index.triggers}

    def column_names(self, table: str) -> tuple[str, ...]:
        return tuple(column[0] for column in self.columns[table])

    def create(self, conn: sqlite3.Connection) -> None:
        """Create this layout in an empty file, inside the caller's transaction, with its version row."""
        for statement in self.statements:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (self.version,))


def _split(script: str) -> list[str]:
    """The statements of a layout file: each ends with ';' at the end of a line, a trigger's body too."""
    statements: list[str] = []
    current: list[str] = []
    for line in script.splitlines():
        if line.startswith("--") and not current:
            continue
        current.append(line)
        if line.endswith(";") and sqlite3.complete_statement("\n".join(current)):
            statements.append("\n".join(current)[:-1])
            current = []
    return statements


def _from_statements(version: int, statements: list[str]) -> Layout:
    """A layout from the statements that create it, read back from an in-memory database."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in statements:
            if not statement.startswith("INSERT"):
                conn.execute(statement)
        rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                            "AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall()
        virtual = [name for kind, name, _, sql in rows if kind == "table" and sql.startswith("CREATE VIRTUAL")]
        shadow = {name for kind, name, _, sql in rows if kind == "table" and sql.startswith("CREATE TABLE '")}
        columns = {table: tuple((r[1], r[2].upper(), bool(r[3]), r[4])
                                for r in conn.execute(f"PRAGMA table_info({table})"))
                   for table in ("sessions", "messages")}
    finally:
        conn.close()
    triggers = [(name, sql) for kind, name, _, sql in rows if kind == "trigger"]
    search = tuple(
        SearchIndex(name, sql, "content=" not in sql.replace(" ", ""),
                    tuple((t, s) for t, s in triggers if _trigger_target(s) == name))
        for kind, name, _, sql in rows if name in virtual
    )
    return Layout(
        version=version,
        statements=tuple(sql for kind, name, _, sql in rows if name not in shadow),
        columns=columns,
        indexes={name: sql for kind, name, _, sql in rows if kind == "index"},
        tables={name: sql for kind, name, _, sql in rows if kind == "table" and name not in shadow},
        search=search,
    )


def _trigger_target(sql: str) -> str:
    """The FTS table a trigger writes into (the first INSERT INTO / DELETE FROM of its body)."""
    body = " ".join(sql.split()).split(" BEGIN ", 1)[-1]
    for lead in ("INSERT INTO ", "DELETE FROM "):
        if body.startswith(lead):
            return body[len(lead):].split("(")[0].split()[0]
    return ""


@functools.cache
def layout(version: int) -> Layout:
    """The layout of schema `version` (6 or one of LATER_VERSIONS)."""
    if version == SCHEMA_VERSION:
        return _from_statements(version, schema_statements(version))
    if version not in LATER_VERSIONS:
        raise KeyError(f"no layout for schema version {version}")
    script = resources.files("hermes_state_tools.layouts").joinpath(f"v{version}.sql").read_text("utf-8")
    return _from_statements(version, _split(script))


def known_versions() -> tuple[int, ...]:
    return (SCHEMA_VERSION, *LATER_VERSIONS)


def normalized(sql: str | None) -> str:
    """SQL text compared as meaning, not spelling: whitespace collapsed, IF NOT EXISTS dropped."""
    return " ".join((sql or "").replace("IF NOT EXISTS ", "").split())


# Columns Hermes added without a version bump after the last layout's commit, or that short-lived builds
# added and later Hermes never drop (hermes-versions.md, section 1): known, though no layout declares them.
UNBUMPED_COLUMNS: Mapping[str, frozenset[str]] = {
    "sessions": frozenset({"compression_failure_cooldown_until", "compression_failure_error", "handoff_pending",
                           "icon"}),
    "messages": frozenset({"anthropic_content_blocks"}),
}


@functools.cache
def _known_columns(table: str) -> frozenset[str]:
    """Every column of `table` some known layout has: a value for any of them can be given."""
    declared = {name for version in known_versions() for name in layout(version).column_names(table)}
    return UNBUMPED_COLUMNS[table] | declared


# Columns of a layout later than any this tool knows that it reads there (never writes), because they
# decide what Hermes shows: `sessions.hidden = 1` keeps a session out of Hermes' session lists.
READ_FROM_LATER: dict[str, frozenset[str]] = {"sessions": frozenset({"hidden"}), "messages": frozenset()}


def readable_columns(table: str) -> frozenset[str]:
    """The columns of `table` read on a file of a layout this tool does not know: those of every
    layout it knows, and READ_FROM_LATER."""
    return _known_columns(table) | READ_FROM_LATER[table]


# From this schema on, Hermes marks a subagent's session with `model_config._delegate_from` (its v16
# migration also marked small untitled tool runs `__orphaned__`), deletes it with its parent, and
# keeps it out of its pickers.
DELEGATES_SINCE = 16


def delegated_from(alias: str = "") -> str:
    """The SQL of a session's `_delegate_from` marker (`alias.` columns)."""
    return _marker(alias, "_delegate_from")


def _marker(alias: str, key: str) -> str:
    """The SQL of a session's `model_config` marker `key`; model_config text that is not JSON marks
    nothing (json_extract would fail on it for every row read)."""
    config = f"{alias}.model_config" if alias else "model_config"
    return f"json_extract(CASE WHEN json_valid({config}) THEN {config} ELSE '{{}}' END, '$.{key}')"


# From this schema on, Hermes' picker lists a /branch session as a conversation of its own, though it
# has a parent: marked `model_config._branched_from`, or (before the marker) started once its parent
# ended with end_reason 'branched' (a Hermes of 9 did so only from late April; fixtures/hermes).
BRANCHES_LISTED_SINCE = 10
# A later Hermes (after 17) also lists a session a reset started: marked `_reset_from`, or (before the
# marker) on its parent's own non-empty session_key after the parent ended at a reset.
_RESET_END_REASONS = ("session_reset", "session_switch", "idle", "daily", "suspended", "resume_pending_expired")


def _branch_child(alias: str) -> str:
    return (f"({_marker(alias, '_branched_from')} IS NOT NULL OR EXISTS (SELECT 1 FROM sessions p "
            f"WHERE p.id = {alias}.parent_session_id AND p.end_reason = 'branched' "
            f"AND {alias}.started_at >= p.ended_at))")


def _reset_child(alias: str) -> str:
    reasons = ", ".join(f"'{reason}'" for reason in _RESET_END_REASONS)
    return (f"({_marker(alias, '_reset_from')} IS NOT NULL OR EXISTS (SELECT 1 FROM sessions p "
            f"WHERE p.id = {alias}.parent_session_id AND p.end_reason IN ({reasons}) "
            f"AND {alias}.session_key IS NOT NULL AND {alias}.session_key != '' "
            f"AND {alias}.session_key = p.session_key))")


def delegate_child(alias: str = "") -> str:
    """The SQL condition on a session that a subagent ran it (`alias.` columns): the `_delegate_from`
    marker, or source `subagent` (a later Hermes' own test for keeping it out of its lists)."""
    prefix = f"{alias}." if alias else ""
    return f"({delegated_from(alias)} IS NOT NULL OR {prefix}source = 'subagent')"


@functools.cache
def later_columns(table: str) -> frozenset[str]:
    """The columns of `table` that only a later Hermes' layout has (reasoning_content, active, ...)."""
    return _known_columns(table) - frozenset(layout(SCHEMA_VERSION).column_names(table))


def carry_later_columns(table: str, row: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` with the values of a later Hermes' columns taken out of `row` (core/layouts.py) and
    carried under HERMES_COLUMNS_KEY, where the writer finds them for a database that has the columns."""
    taken = {key: row.pop(key) for key in [k for k in row if k in later_columns(table)]}
    carried = {key: value for key, value in taken.items() if value is not None}  # NULL: the column's own default
    if not carried:
        return extra
    before = extra.get(HERMES_COLUMNS_KEY)
    return {**extra, HERMES_COLUMNS_KEY: {**(before if isinstance(before, dict) else {}), **carried}}


@dataclass(frozen=True)
class FileLayout:
    """The layout one file holds: its version row, the known layout that describes it (None: none
    does, and `unknown_because` says why), and the columns its own tables have (a file may lack a
    column its layout declares, a Hermes of the same version that had not added it yet, and may have
    more: columns added without a version bump, or by another tool)."""

    version: int | None
    layout: Layout | None
    unknown_because: str | None
    columns: Mapping[str, tuple[str, ...]]

    @property
    def known(self) -> bool:
        return self.layout is not None

    @property
    def later(self) -> bool:
        """Written by a Hermes after version 6 (known to this tool or not)."""
        return self.version is not None and self.version > SCHEMA_VERSION

    def has(self, table: str, column: str) -> bool:
        return column in self.columns[table]

    @property
    def hides_rewound(self) -> bool:
        """Rows can be out of the conversation (`active = 0`): rewound, undone or compacted away."""
        return self.has("messages", "active")

    def shown_messages(self, alias: str = "m", *, searching: bool = False) -> str:
        """The SQL condition on messages that this layout's Hermes shows ("" where it hides none): rewound
        or undone rows (`active = 0`) are out of conversations and search; rows compacted away
        (`active = 0, compacted = 1`) are out of conversations but still found by search."""
        if not self.has("messages", "active"):
            return ""
        if searching and self.has("messages", "compacted"):
            return f"({alias}.active = 1 OR {alias}.compacted = 1)"
        return f"{alias}.active = 1"

    def listed_sessions(self, alias: str = "s") -> str:
        """The SQL condition on sessions this layout's Hermes lists ("" where it hides none): archived
        sessions (and a later Hermes' hidden ones, `hidden = 1`) are out of its lists, and from schema
        16 sessions marked as a subagent's (`model_config._delegate_from`, which its v16 migration also
        set on small untitled tool runs)."""
        conditions = [f"{alias}.{flag} = 0" for flag in ("archived", "hidden") if self.has("sessions", flag)]
        if self.version is not None and self.version >= DELEGATES_SINCE:
            conditions.append(f"{delegated_from(alias)} IS NULL")
        return " AND ".join(conditions)

    def listed_children(self, alias: str = "s") -> str:
        """The SQL condition on a session with a parent that this layout's Hermes lists as a
        conversation of its own ("" where it lists none): a /branch session, and on a layout after
        the ones this tool knows, a session a reset started (the gateway keeps its parent link)."""
        if self.version is None or self.version < BRANCHES_LISTED_SINCE:
            return ""
        if self.known or not self.has("sessions", "session_key"):
            return _branch_child(alias)
        return f"({_branch_child(alias)} OR {_reset_child(alias)})"

    def new_row_values(self, table: str) -> dict[str, int]:
        """The values a new row of `table` is given explicitly in this file (NEW_ROW_VALUES it has)."""
        return {name: value for name, value in NEW_ROW_VALUES[table].items() if self.has(table, name)}

    @property
    def search(self) -> tuple[SearchIndex, ...]:
        """The search indexes this file's layout has (version 6's when it is of no known layout)."""
        return (self.layout or layout(SCHEMA_VERSION)).search


def read_layout(conn: sqlite3.Connection) -> FileLayout:
    """The layout the file on `conn` holds, told from its version row, its search indexes' form and the
    columns its tables require (reads the file's own tables, `main.*`, never a read connection's views)."""

    version = read_version(conn)
    info = {table: conn.execute(f"PRAGMA main.table_info({table})").fetchall() for table in ("sessions", "messages")}
    columns = {table: tuple(row[1] for row in rows) for table, rows in info.items()}
    if version is None or version <= SCHEMA_VERSION:
        return FileLayout(version, layout(SCHEMA_VERSION), None, columns)
    why = _unknown_because(conn, version, info)
    return FileLayout(version, None if why else layout(version), why, columns)


def _unknown_because(conn: sqlite3.Connection, version: int,
                     info: Mapping[str, list[tuple[object, ...]]]) -> str | None:
    if version > NEWEST_KNOWN:
        return f"schema version {version} is newer than the newest layout this tool knows ({NEWEST_KNOWN})"
    known = layout(version)
    for index in known.search:
        row = conn.execute("SELECT sql FROM main.sqlite_master WHERE name = ?", (index.name,)).fetchone()
        if row is not None and ("content=" not in str(row[0]).replace(" ", "")) != index.inline:
            return f"its search index {index.name} is not of the form {known.name} gives it"
    for table, rows in info.items():
        for _, name, _, notnull, default, pk in rows:
            if notnull and default is None and not pk and name not in _known_columns(table):
                return f"its column {table}.{name} needs a value this tool cannot give"
    return None
