"""Putting a new file in place atomically, and the temporary files that make it so.

Every file this tool creates beside a database (a backup, a rebuilt or recovered database, a
restore) is first written as `<dest>.hermes-tmp-<purpose>-<pid>` in the destination's folder,
verified, fsynced, and only then linked or renamed into place: a killed run leaves at most such
a clearly named temporary file (and its -journal), which the next run removes once its process
is gone.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import os
import re
import shutil
import sqlite3
import struct
from pathlib import Path

from hermes_state_tools.core.paths import SIDECAR_SUFFIXES, file_identity, sidecar_paths
from hermes_state_tools.core.scratch import alive
from hermes_state_tools.errors import DestinationExistsError, UnsafeDestinationError
from hermes_state_tools.store.wal_frames import find_break

TEMP_MARK = ".hermes-tmp-"
_TEMP = re.compile(re.escape(TEMP_MARK) + r"[a-z]+-(\d+)(?:-journal|-wal|-shm)?$")
_NO_LINKS = {errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK}
_SHM_DMS_BYTE = 128  # SQLite's "dead man switch" lock byte in -shm: every WAL connection holds it shared


def dated_name(db: Path, label: str, folder: Path | None = None) -> Path:
    """`<db name>.<label>-<UTC timestamp>` beside `db` (or in `folder`), never an existing file: the name
    of every copy kept (`bak` backups, `pre-restore` and `pre-repair` originals)."""
    folder = db.parent if folder is None else folder
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    candidate, counter = folder / f"{db.name}.{label}-{stamp}", 1
    while candidate.exists():
        counter += 1
        candidate = folder / f"{db.name}.{label}-{stamp}-{counter}"
    return candidate


# What SQLite keeps beside a database `x`: a file named so is taken for x's and deleted or replayed.
_SQLITE_SIDE_FILES = (*SIDECAR_SUFFIXES, "-journal")


def require_new_destination(dest: Path) -> None:
    """A new file may be written at `dest`: it does not exist, and its name is not one SQLite takes
    for a database's own (`x-wal` beside `x`: the next program that opens x would delete it)."""
    if dest.exists() or dest.is_symlink():
        raise DestinationExistsError(f"{dest}: destination exists; refusing to overwrite it")
    _refuse_side_name(dest)


def require_replaceable(dest: Path) -> None:
    """A file that is no database (an export) may replace `dest`: it is no SQLite database (the one
    exported included, under any name or link) and not named as one's own file."""
    _refuse_side_name(dest)
    if _head(dest) == _SQLITE_HEADER:
        raise UnsafeDestinationError(f"{dest}: is an SQLite database; refusing to write over it "
                                     "(choose another name, or delete it first)")


_SQLITE_HEADER = b"SQLite format 3\x00"


def _head(path: Path) -> bytes | None:
    """The first 16 bytes of a regular file (b"" when empty); None for anything else."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            return handle.read(16)
    except OSError:
        return None


def _refuse_side_name(dest: Path) -> None:
    for suffix in _SQLITE_SIDE_FILES:
        base = dest.with_name(dest.name[:-len(suffix)]) if dest.name.endswith(suffix) else None
        # An empty file counts: SQLite creates a database as one.
        if base is not None and base.name and _head(base) in (b"", _SQLITE_HEADER):
            raise UnsafeDestinationError(f"{dest}: SQLite would take this for a file of the database {base} "
                                         "(and delete or replay it); choose another name")


def temp_beside(dest: Path, purpose: str) -> Path:
    """The temporary name `dest` is built under, in `dest`'s folder (same filesystem: rename is atomic)."""
    return dest.with_name(f"{dest.name}{TEMP_MARK}{purpose}-{os.getpid()}")


def remove_stale_temps(folder: Path) -> list[Path]:
    """Remove the temporary files of earlier runs that were killed (their process is gone)."""
    removed: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP.search(entry.name)
        if match is None or alive(int(match.group(1))):
            continue
        if f"{TEMP_MARK}swap-" in entry.name:
            _finish_swap(entry)
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def remove_with_sidecars(path: Path) -> None:
    """A temporary database and whatever journal SQLite left beside it."""
    for candidate in (path, *sidecar_paths(path), path.with_name(path.name + "-journal")):
        candidate.unlink(missing_ok=True)


def fsync_path(path: Path) -> None:
    """Flush a file (or a folder's entries) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def place(tmp: Path, dest: Path) -> None:
    """Move the verified `tmp` to `dest`, which must not exist; atomic, never overwriting a racing DEST."""
    fsync_path(tmp)
    try:
        os.link(tmp, dest)
    except FileExistsError as exc:
        raise DestinationExistsError(f"{dest}: destination exists; refusing to overwrite it") from exc
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        if dest.exists():  # a filesystem without hard links: rename, after checking
            raise DestinationExistsError(f"{dest}: destination exists; refusing to overwrite it") from exc
        os.rename(tmp, dest)
    else:
        tmp.unlink()
    fsync_path(dest.parent)


def others_have_open(db: Path) -> bool:
    """True when another process has the WAL database open: it holds a shared lock on the -shm's
    DMS byte. No -shm: nobody has it open in WAL mode. F_GETLK only asks; it takes no lock.
    (POSIX locks are per process: this process's own connections are not seen.)"""
    shm = sidecar_paths(db)[1]
    try:
        fd = os.open(shm, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        probe = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, _SHM_DMS_BYTE, 1, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, probe)
        kind: int = struct.unpack("hhqqi", answer)[0]
        return kind != fcntl.F_UNLCK
    finally:
        os.close(fd)


def to_wal(path: Path) -> None:
    """A file about to take the store's place, in WAL mode as Hermes keeps its store (the -wal goes away
    on close): what a restored or rebuilt store is opened in from its first reader on."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL").fetchone()
    finally:
        conn.close()


def swap_in(db: Path, new: Path, aside: Path | None) -> None:
    """Replace `db` by the verified `new`; the old file (with its -wal or hot -journal) stays as `aside`.

    The old -wal and -journal are moved away before the new file takes the name: neither may ever be
    replayed (or rolled back) onto a file it was not written for. A sound WAL is first folded into the
    old file, so that between the two renames `db` is the old database whole, not without its latest
    commits (a writer that opened it then wrote over a state the moved WAL no longer fits). A kill
    between the steps leaves either the old file or the new one under `db`, and the old one always
    under `aside`.
    """
    fsync_path(new)
    if aside is not None:
        _fold_wal(db)
    wal, shm = sidecar_paths(db)
    keep = aside if aside is not None else db.with_name(f"{db.name}.orphaned-{os.getpid()}")
    intent = temp_beside(db, "swap")
    try:  # a kill before the new file is in: the next run puts the WAL back, if nothing wrote meanwhile
        intent.write_text(f"{keep.name}\n{_identity(db)}", "utf-8")
        fsync_path(db.parent)
    except BaseException:
        intent.unlink(missing_ok=True)
        raise
    if db.exists():
        if aside is None:
            raise FileExistsError(db)
        os.link(db, keep)  # the original bytes under the new name: no copy, atomic
    for side, suffix in ((wal, "-wal"), (db.with_name(db.name + "-journal"), "-journal")):
        if side.exists():  # the old file's WAL or hot journal goes with it, never onto the new file
            os.rename(side, keep.with_name(keep.name + suffix))
    os.rename(new, db)
    shm.unlink(missing_ok=True)
    fsync_path(db.parent)
    intent.unlink()
    fsync_path(db.parent)


def _fold_wal(db: Path) -> None:
    """Checkpoint the old file's WAL into it and empty it, when every commit in it can be read (nobody else
    has the file open: the callers refused otherwise). Commits hidden past a damaged frame are left
    where they are: the WAL then goes aside byte for byte, for recover to read."""
    wal = sidecar_paths(db)[0]
    try:
        if not wal.exists() or wal.stat().st_size == 0 or find_break(db) is not None:
            return
        conn = sqlite3.connect(db, isolation_level=None, timeout=0)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        return  # (a damaged file, a reader that came): its WAL is moved aside whole, as always


def _identity(path: Path) -> str:
    """The file's identity as the swap intent records it ("" when it has none)."""
    identity = file_identity(path)
    return "" if identity is None else " ".join(map(str, identity))


def _finish_swap(intent: Path) -> None:
    """Undo a swap killed between moving the old -wal/-journal aside and renaming the new file in: the
    database is still the old file (the same inode as its kept name), so they go back, unless the file
    was written since (its size or time changed): they no longer fit it, and are kept as
    `<kept name>-wal-unapplied` (a name no SQLite replays).
    An intent file left empty (a full disk, a kill as it was written) names nothing and just goes."""
    db = intent.with_name(intent.name.split(TEMP_MARK, 1)[0])
    try:
        name, _, identity = intent.read_text("utf-8").partition("\n")
    except (OSError, UnicodeDecodeError):
        name, identity = "", ""
    keep = intent.with_name(name.strip()) if name.strip() and "/" not in name else None
    if keep is not None and keep.exists() and db.exists() and os.path.samefile(db, keep):
        kept = [(keep.with_name(keep.name + suffix), db.with_name(db.name + suffix)) for suffix in ("-wal", "-journal")]
        written = bool(identity.strip()) and identity.strip() != _identity(db)  # (none: an older tool's intent)
        for aside, side in kept:
            if not aside.exists():
                continue
            if written or side.exists():  # a writer came meanwhile: kept, under a name SQLite never replays
                os.rename(aside, aside.with_name(aside.name + "-unapplied"))
            else:
                os.rename(aside, side)
        # Only a second name of the database itself (the swap never happened): beside it, a moved WAL would
        # be replayed into the live file by whoever opened that name.
        keep.unlink()
    intent.unlink(missing_ok=True)
    fsync_path(intent.parent)
