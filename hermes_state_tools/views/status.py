"""`status`: what a database holds, read without taking any lock."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core.paths import sidecar_paths
from hermes_state_tools.core.reports import Report
from hermes_state_tools.core.schema import is_newer
from hermes_state_tools.core.sqlite_info import has_wal_reset_bug, sqlite_version, wal_reset_notes
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
    sqlite_wal_reset_bug: bool
    notes: tuple[str, ...]
    ok: bool = True


def read_status(path: Path) -> StatusReport:
    """Schema version, journal mode, counts, file sizes and the oldest/newest session."""
    conn, version = open_hermes(path, allow_newer=True)
    try:
        oldest, newest = conn.execute("SELECT MIN(started_at), MAX(started_at) FROM sessions").fetchone()
        wal = sidecar_paths(path)[0]
        return StatusReport(
            path=str(path),
            schema_version=version if version is not None else detect_schema_version(conn),
            schema_version_recorded=version is not None,
            journal_mode=_journal_mode(conn, path),
            sessions=conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            messages=conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0],
            db_bytes=path.stat().st_size,
            wal_bytes=wal.stat().st_size if wal.exists() else 0,
            fts_bytes=_fts_bytes(conn),
            oldest_session_started=oldest,
            newest_session_started=newest,
            schema_newer=is_newer(version),
            sqlite_version=sqlite_version(),
            sqlite_wal_reset_bug=has_wal_reset_bug(),
            notes=tuple(wal_reset_notes()),
        )
    finally:
        conn.close()
