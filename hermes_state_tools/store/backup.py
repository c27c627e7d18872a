"""Online backups: SQLite's backup API from a read-only snapshot into a temporary file beside DEST,
verified, fsynced and only then linked into place (store/files.py), so a killed or failed backup
leaves no DEST, no journal and no empty `.bak` — at most a clearly named temporary file that the
next run removes."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core import paths, scratch
from hermes_state_tools.core.connection import is_corrupt, is_io_error
from hermes_state_tools.core.progress import Steps, step
from hermes_state_tools.core.reports import Report
from hermes_state_tools.errors import (
    BackupError,
    DamagedDatabaseError,
    DatabaseLockedError,
    DestinationExistsError,
    DestinationUnwritableError,
    HermesStateError,
    NotAHermesDatabaseError,
    StorageIOError,
)
from hermes_state_tools.store.files import (
    dated_name,
    place,
    remove_stale_temps,
    remove_with_sidecars,
    require_new_destination,
    temp_beside,
)
from hermes_state_tools.store.opening import (
    copy_as_is,
    look_at_schema,
    map_open_error,
    open_read_connection,
    open_readonly,
    refuse_long_lock_while_open,
    require_supported,
    schema_change_pending,
)
from hermes_state_tools.store.wal_frames import SCAN_BEFORE_WRITE, find_break

__all__ = [
    "BackupError",
    "BackupResult",
    "backup_database",
    "backup_if_schema_changes",
    "backup_into_folder",
    "scratch_copy",
    "timestamped_path",
    "verify",
]

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


def _read_copy(dest: Path) -> tuple[list[str], tuple[int, int]]:
    """integrity_check and the row counts of the copy, sqlite3 errors mapped by the opener."""
    conn = open_read_connection(dest, tolerate_schema_damage=False)
    try:
        return [row[0] for row in conn.execute("PRAGMA integrity_check")], _counts(conn)
    except sqlite3.DatabaseError as exc:
        raise map_open_error(dest, exc) from exc
    finally:
        conn.close()


def verify(dest: Path, expected: tuple[int, int]) -> None:
    """Reopen the copy: it must pass `integrity_check` and hold the same row counts."""
    try:
        result, counts = _read_copy(dest)
    except DamagedDatabaseError as exc:  # the copy holds the source's pages as they are: the source is damaged
        raise DamagedDatabaseError(dest, f"the copy does not verify: {exc.detail}") from exc
    except (NotAHermesDatabaseError, StorageIOError, DatabaseLockedError) as exc:
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
    if isinstance(exc, PermissionError):  # the user's folder, not a fault of the database: exit 2, not 1
        return DestinationUnwritableError(f"{dest}: cannot write the backup there ({exc.strerror}); "
                                          "nothing was left behind")
    return BackupError(f"{source}: backup to {dest} failed ({exc})")


def _copy(source: Path, tmp: Path) -> tuple[int, int]:
    """The backup API from one read snapshot of `source` into `tmp`; returns the snapshot's counts."""
    src = open_readonly(source, stable=True)
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
    require_new_destination(dest)
    if (hidden := find_break(source, SCAN_BEFORE_WRITE)) is not None:  # a copy would silently lack them
        raise DamagedDatabaseError(source, f"{hidden.detail()}; `recover` reads past the damage")
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


def backup_if_schema_changes(path: Path, progress: Steps | None = None) -> str | None:
    """THE decision to back up before a schema change, taken by whatever is about to open `path` as a
    store (upgrade, an import that writes, repair of the schema): the verified `state.db.bak-<timestamp>`
    when opening it would change its schema (an upgrade step or a structure repair is due), so the
    file as it was can come back; else None and nothing is copied. Call it only once it is certain
    the file will be written."""
    if not (path.exists() and path.stat().st_size) or not schema_change_pending(path):
        return None
    return _backup_before_change(path, progress)


def _backup_before_change(path: Path, progress: Steps | None) -> str:
    step(progress, "backup")
    return str(backup_database(path, timestamped_path(path)).path)


@contextmanager
def changing_schema(path: Path, what: str, *, backup: bool = True,
                    progress: Steps | None = None) -> Iterator[str | None]:
    """The work in the `with` block opens `path` as a store (an upgrade, an import's first write), which
    may change its schema; one look at it first decides:
    - a change that recreates the search index of a big file Hermes has open is refused (75, as
      rebuild-fts is: the rebuild holds the write lock longer than Hermes' appends wait);
    - a change gets the verified backup first (unless not `backup`): what the block is given;
    - when the block fails before it committed a step (the lock turned it away, exit 75: nothing was
      changed), the backup it no longer needs is removed. After a partial upgrade it stays."""
    if not (path.exists() and path.stat().st_size):
        yield None
        return
    before = look_at_schema(path)
    if before.rebuilds_index:
        refuse_long_lock_while_open(path, f"{what} (it rebuilds the search index first)")
    made = _backup_before_change(path, progress) if backup and before.pending else None
    try:
        yield made
    except BaseException:
        if made is not None and _state_now(path) == before.state:
            Path(made).unlink(missing_ok=True)
        raise


def _state_now(path: Path) -> tuple[object, ...] | None:
    """The schema state of a look (None when the file cannot be looked at: the backup then stays)."""
    try:
        return look_at_schema(path).state
    except (HermesStateError, OSError, sqlite3.Error):
        return None


@contextmanager
def scratch_copy(path: Path, *, as_is: bool = False, purpose: str = "dry-run") -> Iterator[Path]:
    """A private copy of `path` for a dry run (the same work on the copy makes the report exact and
    leaves the file untouched), removed afterwards. The backup API makes a consistent, verified copy
    of a live file; `as_is` copies the bytes with the WAL instead, for a damaged file the backup's
    verification would refuse."""
    folder = scratch.make_dir(purpose)
    try:
        if as_is:
            yield copy_as_is(path, folder / "copy")
        else:
            copy = folder / path.name
            backup_database(path, copy)
            yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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


def names_a_folder(dest: str | Path) -> bool:
    """DEST is a folder when it is one, or when it ends in a slash: that folder is then created (as
    rsync reads `DEST/`), so that the first `backup ~/backups/` does not make a file named `backups`."""
    return Path(dest).is_dir() or str(dest).endswith(("/", os.sep))


def backup_file(source: Path, dest: str | Path, keep: int | None = None) -> BackupReport:
    """Online copy of `source` to `dest` (a file that must not exist, or a folder for a dated copy), verified."""
    require_supported(source, allow_newer=True)  # a missing or foreign source is refused before `dest` is created
    folder, removed = Path(dest), list[Path]()
    if (keep is not None or names_a_folder(dest)) and folder.exists() and not folder.is_dir():
        needs = "--keep needs DEST to be a folder for dated backups" if keep is not None \
            else "DEST ends in a slash, a folder"
        raise DestinationExistsError(f"{folder}: {needs}; this is a file")
    if names_a_folder(dest) or keep is not None:
        folder.mkdir(exist_ok=True)
        result, removed = backup_into_folder(source, folder, keep)
    else:
        result = backup_database(source, folder)
    return BackupReport(str(source), str(result.path), result.sessions, result.messages, result.bytes,
                        tuple(str(p) for p in removed))
