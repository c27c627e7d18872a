"""A plain-SQL text dump of a Hermes database that rebuilds it exactly, FTS index included.

`sqlite3.Connection.iterdump()` cannot restore FTS5 tables (it writes their shadow
tables by hand), so this dump writes the schema objects in creation order and the rows
of the real tables, and lets `CREATE VIRTUAL TABLE` and the triggers rebuild the index
as the rows go in. A file whose triggers are missing therefore loads with the same
out-of-sync index it had: the traps survive the round trip.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from hermes_state_tools.core import paths

_KIND_ORDER = {"table": 0, "index": 1, "trigger": 2, "view": 3}
_SHADOW_SUFFIXES = ("_data", "_idx", "_content", "_docsize", "_config")


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, bytes):
        return f"X'{value.hex()}'"
    text = str(value)
    if "\x00" in text:  # a NUL would end the script early: spell the bytes out
        return f"CAST(X'{text.encode('utf-8', 'surrogatepass').hex()}' AS TEXT)"
    return "'" + text.replace("'", "''") + "'"


def _is_shadow(name: str, virtual: set[str]) -> bool:
    return any(name == v + suffix for v in virtual for suffix in _SHADOW_SUFFIXES)


def _objects(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    virtual = {name for kind, name, sql in rows if kind == "table" and sql.upper().startswith("CREATE VIRTUAL")}
    kept = [(kind, name, sql) for kind, name, sql in rows if not _is_shadow(name, virtual)]
    return sorted(kept, key=lambda r: (_KIND_ORDER.get(r[0], 9), r[1] in virtual, r[1]))


def _row_tables(conn: sqlite3.Connection, objects: list[tuple[str, str, str]]) -> list[str]:
    """The tables that hold rows, each after the tables its foreign keys name (sessions before
    messages): a later Hermes' triggers read the session of a message as it goes in."""
    names = [name for kind, name, sql in objects if kind == "table" and not sql.upper().startswith("CREATE VIRTUAL")]
    parents = {name: {row[2] for row in conn.execute(f'PRAGMA foreign_key_list("{name}")')} & set(names) - {name}
               for name in names}
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [n for n in names if n not in ordered and parents[n] <= set(ordered)]
        ordered.append(ready[0] if ready else next(n for n in names if n not in ordered))  # a cycle: as listed
    return ordered


def dump_sql(conn: sqlite3.Connection) -> str:
    """The whole database as SQL text: tables, rows (with triggers live), indexes, sequence."""
    objects = _objects(conn)
    tables = _row_tables(conn, objects)
    out = ["BEGIN;"]
    out += [f"{sql};" for kind, _, sql in objects if kind == "table"]
    out += [f"{sql};" for kind, _, sql in objects if kind == "trigger"]
    for table in tables:
        for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid'):
            out.append(f'INSERT INTO "{table}" VALUES({",".join(_literal(v) for v in row)});')
    out += [f"{sql};" for kind, _, sql in objects if kind in ("index", "view")]
    for name, seq in conn.execute("SELECT name, seq FROM sqlite_sequence") if _has_sequence(conn) else []:
        out.append(f"UPDATE sqlite_sequence SET seq = {int(seq)} WHERE name = {_literal(name)};")
    out.append("COMMIT;")
    return "\n".join(out) + "\n"


def _has_sequence(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone() is not None


def load_sql(script: str, db_path: Path) -> None:
    """Create `db_path` (0600, WAL) from a dump made by `dump_sql`."""
    if db_path.exists():
        raise FileExistsError(f"{db_path} already exists")
    paths.create_private_file(db_path)
    conn = sqlite3.connect(str(db_path))
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(script)
    finally:
        conn.close()


def table_rows(conn: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    """Every row of a table as a dict, in rowid order."""
    conn_rows = conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid')
    names = [d[0] for d in conn_rows.description]
    return [dict(zip(names, row, strict=True)) for row in conn_rows]


def content_digest(conn: sqlite3.Connection, tables: tuple[str, ...] = ("sessions", "messages")) -> str:
    """sha256 of the rows of `tables`, columns in name order, so column order does not matter."""
    digest = hashlib.sha256()
    for table in tables:
        for row in table_rows(conn, table):
            digest.update(orjson.dumps(row, option=orjson.OPT_SORT_KEYS))
    return digest.hexdigest()
