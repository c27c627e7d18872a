"""`status`: what a database holds, read without taking any lock."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core.layouts import read_layout
from hermes_state_tools.core.paths import sidecar_paths
from hermes_state_tools.core.reports import Report
from hermes_state_tools.core.schema import is_newer
from hermes_state_tools.core.sqlite_info import sqlite_notes, sqlite_version
from hermes_state_tools.store.opening import open_hermes
from hermes_state_tools.upgrade.steps import detect_schema_version


def _fts_bytes(conn: sqlite3.Connection) -> int | None:
    """Bytes the FTS index occupies, or None where SQLite was built without the dbstat table."""
    try:
        row = conn.execute(
            "SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'messages\\_fts%' ESCAPE '\\'"
        ).fetchone()
    except sqlite3.OperationalError:
        return None
    return int(row[0] or 0)


def _journal_mode(conn: sqlite3.Connection, path: Path) -> str:
    """The file's journal mode. An immutable look reports 'delete' for any file: the header's
    read/write version bytes (2 = WAL) say what SQLite would use."""
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    if getattr(conn, "how", None) != "ro":
        with open(path, "rb") as handle:
            header = handle.read(20)
        if header[18:20] == b"\x02\x02":
            return "wal"
    return str(mode)


@dataclass(frozen=True)
class StatusReport(Report):
    path: str
    schema_version: int
    schema_version_recorded: bool
    journal_mode: str
    sessions: int
    messages: int
    db_bytes: int
    wal_bytes: int
    fts_bytes: int | None
    oldest_session_started: float | None
    newest_session_started: float | None
    schema_newer: bool
    sqlite_version: str
    # What a later Hermes' file holds that Hermes keeps out of view: `sessions` counts as Hermes'
    # session_count does (archived ones left out), `messages` every row, as its message_count does.
    sessions_archived: int
    messages_rewound: int
    messages_compacted: int
    notes: tuple[str, ...]
    ok: bool = True


@dataclass(frozen=True)
class _Hidden:
    archived: int = 0
    rewound: int = 0
    compacted: int = 0


def _hidden(conn: sqlite3.Connection) -> _Hidden:
    """How many sessions and messages the file's Hermes keeps out of its lists and conversations."""
    file = read_layout(conn)
    archived = conn.execute("SELECT COUNT(*) FROM sessions WHERE archived != 0").fetchone()[0] if file.has(
        "sessions", "archived") else 0
    if not file.hides_rewound:
        return _Hidden(archived)
    compacted = "COALESCE(compacted, 0)" if file.has("messages", "compacted") else "0"
    rewound, gone = conn.execute(f"SELECT COALESCE(SUM({compacted} = 0), 0), COALESCE(SUM({compacted} != 0), 0) "
                                 "FROM messages WHERE active = 0").fetchone()
    return _Hidden(archived, rewound, gone)


def read_status(path: Path) -> StatusReport:
    """Schema version, journal mode, counts, file sizes and the oldest/newest session."""
    conn, version = open_hermes(path, allow_newer=True)
    try:
        oldest, newest = conn.execute("SELECT MIN(started_at), MAX(started_at) FROM sessions").fetchone()
        hidden = _hidden(conn)
        wal = sidecar_paths(path)[0]
        return StatusReport(
            path=str(path),
            schema_version=version if version is not None else detect_schema_version(conn),
            schema_version_recorded=version is not None,
            journal_mode=_journal_mode(conn, path),
            sessions=conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] - hidden.archived,
            messages=conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0],
            sessions_archived=hidden.archived,
            messages_rewound=hidden.rewound,
            messages_compacted=hidden.compacted,
            db_bytes=path.stat().st_size,
            wal_bytes=wal.stat().st_size if wal.exists() else 0,
            fts_bytes=_fts_bytes(conn),
            oldest_session_started=oldest,
            newest_session_started=newest,
            schema_newer=is_newer(version) and not read_layout(conn).known,
            sqlite_version=sqlite_version(),
            notes=tuple(sqlite_notes()),
        )
    finally:
        conn.close()
