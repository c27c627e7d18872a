"""Online backups: SQLite's backup API from a read-only snapshot into a temporary file beside DEST,
verified, fsynced and only then linked into place (store/files.py), so a killed or failed backup
leaves no DEST, no journal and no empty `.bak` — at most a clearly named temporary file that the
next run removes."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core import paths
from hermes_state_tools.core.connection import is_corrupt, is_io_error
from hermes_state_tools.core.reports import Report
from hermes_state_tools.errors import BackupError, DamagedDatabaseError, DestinationExistsError, StorageIOError
from hermes_state_tools.store.files import dated_name, place, remove_stale_temps, remove_with_sidecars, temp_beside
from hermes_state_tools.store.opening import open_readonly, reading
from hermes_state_tools.store.read_open import open_for_reading

__all__ = ["BackupError", "BackupResult", "backup_before_schema_change", "backup_database", "backup_into_folder",
           "timestamped_path", "verify"]

BACKUP_PREFIX = ".bak-"


@dataclass(frozen=True)
class BackupResult:
    path: Path
    sessions: int
    messages: int
    bytes: int


def _counts(conn: sqlite3.Connection) -> tuple[int, int]:
    return (conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])


def timestamped_path(db_path: Path, folder: Path | None = None) -> Path:
    """`state.db.bak-<UTC timestamp>` next to the database (or in `folder`), never an existing file."""
    return dated_name(db_path, BACKUP_PREFIX.strip(".-"), folder)


def verify(dest: Path, expected: tuple[int, int]) -> None:
    """Reopen the copy: it must pass `integrity_check` and hold the same row counts."""
    try:
        conn = open_for_reading(dest, tolerate_schema_damage=False)
        try:
            result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            counts = _counts(conn)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        if is_corrupt(exc):  # the copy holds the source's pages as they are: the source is damaged
            raise DamagedDatabaseError(dest, f"the copy does not verify: {' '.join(str(exc).split())}") from exc
        raise BackupError(f"{dest}: backup does not open ({exc})") from exc
    if result != ["ok"]:
        raise DamagedDatabaseError(dest, f"the copy failed integrity_check: {' '.join(result[0].split())[:200]}")
    if counts != expected:
        raise BackupError(f"{dest}: backup holds {counts} sessions/messages, source had {expected}")


def _io_error(source: Path, dest: Path, exc: BaseException) -> Exception:
    """The library error for a failure while copying: the disk (74), damage (65), or else BackupError."""
    if is_io_error(exc):
        return StorageIOError(f"{dest}: backup of {source} failed, nothing was left behind ({exc})")
    if isinstance(exc, sqlite3.DatabaseError) and is_corrupt(exc):
        return DamagedDatabaseError(source, f"the backup could not read it: {' '.join(str(exc).split())}")
    return BackupError(f"{source}: backup to {dest} failed ({exc})")


def _copy(source: Path, tmp: Path) -> tuple[int, int]:
    """The backup API from one read snapshot of `source` into `tmp`; returns the snapshot's counts."""
    src = open_readonly(source)
    try:
        src.execute("BEGIN")  # one read snapshot for the counts and the copy
        expected = _counts(src)
        paths.create_private_file(tmp)
        target = sqlite3.connect(str(tmp))
        try:
            src.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")  # a backup is one self-contained file
        finally:
            target.close()
        src.execute("COMMIT")
        return expected
    finally:
        src.close()


def backup_database(source: Path, dest: Path) -> BackupResult:
    """Copy `source` to `dest` (0600) while other processes keep using it; verified before it appears."""
    if dest.exists():
        raise DestinationExistsError(f"{dest}: destination exists; refusing to overwrite it")
    dest.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(dest.parent)
    tmp = temp_beside(dest, "backup")
    remove_with_sidecars(tmp)
    try:
        expected = _copy(source, tmp)
        verify(tmp, expected)
        size = tmp.stat().st_size
        place(tmp, dest)
    except DamagedDatabaseError as exc:  # the copy holds the source's pages: name the source
        raise DamagedDatabaseError(source, exc.detail) from exc
    except (sqlite3.Error, OSError) as exc:
        raise _io_error(source, dest, exc) from exc
    finally:
        remove_with_sidecars(tmp)
    return BackupResult(dest, expected[0], expected[1], size)


def backup_before_schema_change(path: Path) -> Path:
    """The verified `state.db.bak-<timestamp>` taken before anything changes a file's schema
    (upgrade, an import that upgrades, repair of the schema), so the file as it was can come back."""
    return backup_database(path, timestamped_path(path)).path


def _dated_backups(source: Path, folder: Path) -> list[Path]:
    """The dated backups of `source` in `folder`, oldest first (the timestamp sorts as text)."""
    return sorted(p for p in folder.glob(f"{source.name}{BACKUP_PREFIX}*") if "hermes-tmp" not in p.name
                  and p.is_file())


def backup_into_folder(source: Path, folder: Path, keep: int | None) -> tuple[BackupResult, list[Path]]:
    """A dated, verified copy in `folder`; then the oldest beyond `keep` removed (only after it verified)."""
    result = backup_database(source, timestamped_path(source, folder))
    removed: list[Path] = []
    if keep is not None:
        dated = _dated_backups(source, folder)
        for old in dated[:max(len(dated) - keep, 0)]:
            old.unlink(missing_ok=True)
            removed.append(old)
    return result, removed


@dataclass(frozen=True)
class BackupReport(Report):
    source: str
    path: str
    sessions: int
    messages: int
    bytes: int
    removed: tuple[str, ...]  # older dated backups removed by --keep, after the new one verified
    ok: bool = True


def backup_file(source: Path, dest: Path, keep: int | None = None) -> BackupReport:
    """Online copy of `source` to `dest` (a file that must not exist, or a folder for a dated copy), verified."""
    with reading(source, allow_newer=True):
        pass  # a missing or foreign source is refused before `dest` is created
    removed: list[Path] = []
    if dest.is_dir() or keep is not None:
        dest.mkdir(parents=True, exist_ok=True)
        result, removed = backup_into_folder(source, dest, keep)
    else:
        result = backup_database(source, dest)
    return BackupReport(str(source), str(result.path), result.sessions, result.messages, result.bytes,
                        tuple(str(p) for p in removed))
