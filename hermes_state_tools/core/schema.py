"""The v6 schema as data: columns, indexes, FTS table and triggers, with the version that added each.

Fresh databases, the fixture databases of older versions and the upgrade steps are all
built from these tables, so there is exactly one description of what a version holds.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

SCHEMA_VERSION = 6
# The newest schema version whose layout this tool has from Hermes' own code (core/layouts.py).
NEWEST_KNOWN = 17


def is_newer(version: int | None) -> bool:
    """True for a file written by a later Hermes: a stored schema version above 6. Whether this tool
    knows its layout (and so writes it in that layout's form) is core/layouts.py's read_layout; a file of
    no known layout is refused for writing and read with a warning (store/opening.py's refuse_newer);
    the upgrade never lowers such a version (upgrade/steps.py)."""
    return version is not None and version > SCHEMA_VERSION


@dataclass(frozen=True)
class Column:
    name: str
    decl: str  # type and constraints, as in the CREATE TABLE statement
    since: int  # schema version that added it


SESSIONS_COLUMNS: tuple[Column, ...] = (
    Column("id", "TEXT PRIMARY KEY", 1),
    Column("source", "TEXT NOT NULL", 1),
    Column("user_id", "TEXT", 1),
    Column("model", "TEXT", 1),
    Column("model_config", "TEXT", 1),
    Column("system_prompt", "TEXT", 1),
    Column("parent_session_id", "TEXT", 1),
    Column("started_at", "REAL NOT NULL", 1),
    Column("ended_at", "REAL", 1),
    Column("end_reason", "TEXT", 1),
    Column("message_count", "INTEGER DEFAULT 0", 1),
    Column("tool_call_count", "INTEGER DEFAULT 0", 1),
    Column("input_tokens", "INTEGER DEFAULT 0", 1),
    Column("output_tokens", "INTEGER DEFAULT 0", 1),
    Column("cache_read_tokens", "INTEGER DEFAULT 0", 5),
    Column("cache_write_tokens", "INTEGER DEFAULT 0", 5),
    Column("reasoning_tokens", "INTEGER DEFAULT 0", 5),
    Column("billing_provider", "TEXT", 5),
    Column("billing_base_url", "TEXT", 5),
    Column("billing_mode", "TEXT", 5),
    Column("estimated_cost_usd", "REAL", 5),
    Column("actual_cost_usd", "REAL", 5),
    Column("cost_status", "TEXT", 5),
    Column("cost_source", "TEXT", 5),
    Column("pricing_version", "TEXT", 5),
    Column("title", "TEXT", 3),
)

MESSAGES_COLUMNS: tuple[Column, ...] = (
    Column("id", "INTEGER PRIMARY KEY AUTOINCREMENT", 1),
    Column("session_id", "TEXT NOT NULL REFERENCES sessions(id)", 1),
    Column("role", "TEXT NOT NULL", 1),
    Column("content", "TEXT", 1),
    Column("tool_call_id", "TEXT", 1),
    Column("tool_calls", "TEXT", 1),
    Column("tool_name", "TEXT", 1),
    Column("timestamp", "REAL NOT NULL", 1),
    Column("token_count", "INTEGER", 1),
    Column("finish_reason", "TEXT", 2),
    Column("reasoning", "TEXT", 6),
    Column("reasoning_details", "TEXT", 6),
    Column("codex_reasoning_items", "TEXT", 6),
)

TABLE_COLUMNS = {"sessions": SESSIONS_COLUMNS, "messages": MESSAGES_COLUMNS}
SESSION_FIELDS = tuple(c.name for c in SESSIONS_COLUMNS)
MESSAGE_FIELDS = tuple(c.name for c in MESSAGES_COLUMNS)

SCHEMA_VERSION_SQL = "CREATE TABLE IF NOT EXISTS schema_version (\n    version INTEGER NOT NULL\n)"


@dataclass(frozen=True)
class Index:
    name: str
    sql: str
    since: int


INDEXES: tuple[Index, ...] = (
    Index("idx_sessions_source", "CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source)", 1),
    Index(
        "idx_sessions_parent",
        "CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id)",
        1,
    ),
    Index(
        "idx_sessions_started",
        "CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC)",
        1,
    ),
    Index(
        "idx_messages_session",
        "CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp)",
        1,
    ),
    Index(
        "idx_sessions_title_unique",
        "CREATE UNIQUE INDEX IF NOT EXISTS idx_sessions_title_unique ON sessions(title) "
        "WHERE title IS NOT NULL",
        4,
    ),
)

FTS_TABLE = "messages_fts"
FTS_TABLE_SQL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(\n"
    "    content,\n    content=messages,\n    content_rowid=id\n)"
)

TRIGGERS: dict[str, str] = {
    "messages_fts_insert": (
        "CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN\n"
        "    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);\nEND"
    ),
    "messages_fts_delete": (
        "CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN\n"
        "    INSERT INTO messages_fts(messages_fts, rowid, content) "
        "VALUES('delete', old.id, old.content);\nEND"
    ),
    "messages_fts_update": (
        "CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE ON messages BEGIN\n"
        "    INSERT INTO messages_fts(messages_fts, rowid, content) "
        "VALUES('delete', old.id, old.content);\n"
        "    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);\nEND"
    ),
}


def columns_at(table: str, version: int) -> tuple[Column, ...]:
    """The columns `table` has at schema `version`."""
    return tuple(c for c in TABLE_COLUMNS[table] if c.since <= version)


def create_table_sql(table: str, version: int = SCHEMA_VERSION) -> str:
    """The CREATE TABLE statement of `table` as Hermes wrote it at `version`."""
    lines = [f"    {c.name} {c.decl}" for c in columns_at(table, version)]
    if table == "sessions":
        lines.append("    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)")
    body = ",\n".join(lines)
    return f"CREATE TABLE IF NOT EXISTS {table} (\n{body}\n)"


def schema_statements(version: int = SCHEMA_VERSION) -> list[str]:
    """Every statement that creates an empty database at `version` (version row excluded)."""
    return [
        SCHEMA_VERSION_SQL,
        create_table_sql("sessions", version),
        create_table_sql("messages", version),
        *(i.sql for i in INDEXES if i.since <= version),
        FTS_TABLE_SQL,
        *TRIGGERS.values(),
    ]


def create_schema(conn: sqlite3.Connection, version: int = SCHEMA_VERSION) -> None:
    """Create a whole schema at `version` inside the caller's transaction."""
    for statement in schema_statements(version):
        conn.execute(statement)
    conn.execute("DELETE FROM schema_version")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    """Names of the columns `table` has in this file (empty when the table is missing); the file's own
    table, not a read connection's v6 view of it (opening.as_version_6)."""
    return {row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")}


def object_names(conn: sqlite3.Connection, kind: str) -> set[str]:
    """Names of the schema objects of one kind ('table', 'index', 'trigger')."""
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,))
    return {row[0] for row in rows}


def read_version(conn: sqlite3.Connection) -> int | None:
    """The stored schema version: the version row, or None when the table is missing, empty or holds garbage."""
    if "schema_version" not in object_names(conn, "table"):
        return None
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    value = row[0] if row else None
    return value if isinstance(value, int) else None


def _normalized(sql: str | None) -> str:
    return " ".join((sql or "").replace("IF NOT EXISTS ", "").split())


def describe(conn: sqlite3.Connection) -> dict[str, object]:
    """A comparable description of the Hermes schema: columns by name (order is history, not
    meaning), indexes, triggers and the FTS definition, whitespace-normalised."""
    tables = {
        table: {row[1]: (row[2].upper(), bool(row[3]), row[4], row[5]) for row in
                conn.execute(f"PRAGMA main.table_info({table})")}
        for table in ("schema_version", *TABLE_COLUMNS)
    }
    objects = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL"
    ).fetchall()
    fts = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (FTS_TABLE,)).fetchone()
    return {
        "tables": tables,
        "indexes": {name: _normalized(sql) for kind, name, sql in objects if kind == "index"},
        "triggers": {name: _normalized(sql) for kind, name, sql in objects if kind == "trigger"},
        "fts": _normalized(fts[0] if fts else None),
    }
