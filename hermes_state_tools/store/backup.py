"""Online backups: SQLite's backup API from a read-only snapshot, then reopen and verify."""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_state_tools.core import paths
from hermes_state_tools.core.connection import connect
from hermes_state_tools.errors import BackupError, DestinationExistsError
from hermes_state_tools.store.opening import open_readonly, reading

__all__ = ["BackupError", "BackupResult", "backup_before_schema_change", "backup_database", "timestamped_path",
           "verify"]


@dataclass(frozen=True)
class BackupResult:
    path: Path
    sessions: int
    messages: int
    bytes: int


def _counts(conn: sqlite3.Connection) -> tuple[int, int]:
    return (conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])


def timestamped_path(db_path: Path) -> Path:
    """`state.db.bak-<UTC timestamp>` next to the database, never an existing file."""
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    candidate = db_path.with_name(f"{db_path.name}.bak-{stamp}")
    counter = 1
    while candidate.exists():
        counter += 1
        candidate = db_path.with_name(f"{db_path.name}.bak-{stamp}-{counter}")
    return candidate


def verify(dest: Path, expected: tuple[int, int]) -> None:
    """Reopen the copy: it must pass `integrity_check` and hold the same row counts."""
    conn = connect(dest, readonly=True)
    try:
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
        counts = _counts(conn)
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{dest}: backup does not open ({exc})") from exc
    finally:
        conn.close()
    if result != "ok":
        raise BackupError(f"{dest}: backup failed integrity_check ({result})")
    if counts != expected:
        raise BackupError(f"{dest}: backup holds {counts} sessions/messages, source had {expected}")


def backup_database(source: Path, dest: Path) -> BackupResult:
    """Copy `source` to `dest` (0600) while other processes keep using it, then verify the copy."""
    if dest.exists():
        raise DestinationExistsError(f"{dest}: destination exists; refusing to overwrite it")
    dest.parent.mkdir(parents=True, exist_ok=True)
    src = open_readonly(source)
    try:
        src.execute("BEGIN")  # one read snapshot for the counts and the copy
        expected = _counts(src)
        paths.create_private_file(dest)
        target = sqlite3.connect(str(dest))
        try:
            src.backup(target)
            # A backup is a single self-contained file: no WAL beside it.
            target.execute("PRAGMA journal_mode=DELETE")
        finally:
            target.close()
        src.execute("COMMIT")
    except sqlite3.Error as exc:
        dest.unlink(missing_ok=True)
        raise BackupError(f"{source}: backup to {dest} failed ({exc})") from exc
    finally:
        src.close()
    try:
        verify(dest, expected)
    except BackupError:
        dest.unlink(missing_ok=True)
        raise
    return BackupResult(dest, expected[0], expected[1], dest.stat().st_size)


def backup_before_schema_change(path: Path) -> Path:
    """The verified `state.db.bak-<timestamp>` taken before anything changes a file's schema
    (upgrade, an import that upgrades, repair of the schema), so the file as it was can come back."""
    return backup_database(path, timestamped_path(path)).path


def backup_file(source: Path, dest: Path) -> dict[str, Any]:
    """Online copy of `source` to `dest`, verified; `dest` must not exist."""
    with reading(source, allow_newer=True):
        pass  # a missing, foreign or newer source is refused before `dest` is created
    result = backup_database(source, dest)
    return {"ok": True, "source": str(source), "path": str(result.path), "sessions": result.sessions,
            "messages": result.messages, "bytes": result.bytes}
