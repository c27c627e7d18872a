"""How a file is opened to be read without leaving anything behind or writing a byte.

SQLite's ordinary read-only open (`mode=ro`) of a database with no -wal creates an empty -wal
and a 32 KiB -shm beside it, and in a read-only folder it fails ("attempt to write a readonly
database"). The rule here, measured on 3.40.1:

* no -wal, or an empty -wal with no -shm: nothing can be waiting in a WAL and nobody has the
  file open in WAL mode, so `immutable=1` (no locks, no files created, works on read-only media);
* a -wal and a -shm: someone may be writing; `mode=ro` shares their WAL index (no files created);
* a non-empty -wal without -shm (a writer crashed), a hot -journal (a rollback-journal write was
  interrupted), or `mode=ro` failing in a read-only folder: the database and its WAL/journal are
  copied into a private temporary folder and the copy is read (SQLite replays the WAL or rolls
  the journal back there), because `immutable` would silently drop the committed rows still in
  the WAL, or read the half-written pages a hot journal would undo.

A file whose sqlite_master holds an entry twice ("malformed database schema") makes every
statement fail; reading around it with `PRAGMA writable_schema=ON` is harmless on a read-only
connection, and the connection says so (`schema_damaged`).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

from hermes_state_tools.core import scratch
from hermes_state_tools.core.connection import (
    SQLITE_CANTOPEN,
    SQLITE_IOERR,
    SQLITE_PERM,
    SQLITE_READONLY,
    is_corrupt,
)
from hermes_state_tools.core.paths import file_identity, sidecar_paths
from hermes_state_tools.store.wal_frames import mend_copy

_BUSY_TIMEOUT_S = 1.0
# mode=ro cannot share the -shm (a read-only folder, a stray -shm a failed writer left): read a copy
_CANNOT_READ_IN_PLACE = {SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM, SQLITE_IOERR}


class ReadConnection(sqlite3.Connection):
    """A read-only connection that knows how it was opened and removes its private snapshot on close."""

    snapshot_dir: Path | None = None
    schema_damaged: str | None = None  # the parse error read around with writable_schema, if any
    how: str = "immutable"
    opened_as: tuple[int, int, int] | None = None  # the main file's size, mtime and inode before an immutable look
    reads: Path | None = None  # the file this connection reads: the database itself, or its private copy

    def close(self) -> None:
        super().close()
        if self.snapshot_dir is not None:
            shutil.rmtree(self.snapshot_dir, ignore_errors=True)
            self.snapshot_dir = None


def _hot_journal(path: Path) -> bool:
    journal = path.with_name(path.name + "-journal")
    return journal.exists() and journal.stat().st_size > 0


def _plan(path: Path) -> str:
    wal, shm = sidecar_paths(path)
    if _hot_journal(path):
        return "snapshot"  # an interrupted rollback-journal write: only a rollback (on a copy) reads it right
    if not wal.exists():
        return "immutable"
    if shm.exists():
        return "ro"
    return "immutable" if wal.stat().st_size == 0 else "snapshot"


def _connect(uri: str) -> ReadConnection:
    conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, check_same_thread=False,
                           isolation_level=None, factory=ReadConnection)
    conn.row_factory = sqlite3.Row
    return conn


def snapshot(path: Path, folder: Path | None = None) -> tuple[Path, Path]:
    """db + its WAL copied into a private folder (a new temp folder unless given); SQLite replays
    the WAL there, on the copy. Returns (folder, copy)."""
    if folder is None:
        folder = scratch.make_dir("read")
    else:
        folder.mkdir(mode=0o700)
    copy = folder / path.name
    try:
        shutil.copyfile(path, copy)
        for suffix in ("-wal", "-journal"):
            side = path.with_name(path.name + suffix)
            if side.exists():
                shutil.copyfile(side, copy.with_name(copy.name + suffix))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder, copy


def _open(path: Path, how: str) -> ReadConnection:
    if how == "copy":  # `path` is already a private copy: read it (and replay its WAL) in place
        conn = _connect(path.resolve().as_uri())
    elif how == "snapshot":
        folder, copy = snapshot(path)
        try:
            conn = _connect(copy.resolve().as_uri())
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        conn.snapshot_dir, path = folder, copy
    else:
        identity = file_identity(path)  # before the look: a checkpoint during it changes the file under it
        conn = _connect(f"{path.resolve().as_uri()}?mode=ro" + ("&immutable=1" if how == "immutable" else ""))
        conn.opened_as = identity
    conn.how, conn.reads = how, path
    return conn


def _first_read(conn: ReadConnection) -> None:
    conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()


def open_checked(path: Path, how: str, tolerate_schema_damage: bool) -> ReadConnection:
    conn = _open(path, how)
    try:
        _first_read(conn)
        return conn
    except sqlite3.DatabaseError as exc:
        conn.close()
        if not (tolerate_schema_damage and is_corrupt(exc) and "malformed database schema" in str(exc)):
            raise
        damage = " ".join(str(exc).split())
    conn = _open(path, how)
    try:
        conn.execute("PRAGMA writable_schema=ON")  # parse errors in sqlite_master are tolerated
        conn.schema_damaged = damage
        _first_read(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def open_for_reading(path: Path, *, tolerate_schema_damage: bool = True, stable: bool = False) -> ReadConnection:
    """A read-only connection that creates no file beside `path` and never writes to it.

    Raises sqlite3 errors as SQLite gives them (the caller maps them); a malformed schema is read
    around (writable_schema) unless `tolerate_schema_damage` is False. `stable`: a long read that
    must see one state of the file (export, backup, merge's other file) never reads it immutable in
    place, where a writer that comes, checkpoints and leaves meanwhile tears what it reads: the file
    is copied into a private folder while it does not change, and the copy is read.
    """
    how = _plan(path)
    if stable and how == "immutable":
        conn = _stable_copy(path, tolerate_schema_damage)
        if conn is not None:
            return conn
        how = _plan(path)  # a writer stayed (read in place with it), or no room for a copy
    try:
        return open_checked(path, how, tolerate_schema_damage)
    except sqlite3.DatabaseError as exc:
        code = (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF
        if how != "ro" or code not in _CANNOT_READ_IN_PLACE:
            raise
    return open_checked(path, "snapshot", tolerate_schema_damage)  # a read-only folder: read a copy


_STABLE_TRIES = 4
_STABLE_SLACK = 64 << 20  # left free in the temp folder beyond the copy


def _stable_copy(path: Path, tolerate_schema_damage: bool) -> ReadConnection | None:
    """A connection to a private copy of `path` made while no writer changed it (its size, time and
    inode the same before and after the copy), or None: it changed under every try, or there is no
    room for a copy in the temp folder (a file of gigabytes on a small /tmp is read in place)."""
    try:
        wal = sidecar_paths(path)[0]
        needed = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
        if shutil.disk_usage(tempfile.gettempdir()).free < needed * 1.1 + _STABLE_SLACK:
            return None
    except OSError:
        return None
    for _attempt in range(_STABLE_TRIES):
        before = file_identity(path)
        try:
            folder, copy = snapshot(path)
        except OSError:
            return None
        if before is not None and file_identity(path) == before:
            try:
                conn = open_checked(copy, "copy", tolerate_schema_damage)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            conn.snapshot_dir = folder
            return conn
        shutil.rmtree(folder, ignore_errors=True)
    return None


def open_own_pages(path: Path, folder: Path, mend: bool = False) -> tuple[ReadConnection, Path, Path | None]:
    """A read-only connection whose file holds every committed page (a page scan reads that file
    itself): `path` read immutable when nothing waits in a WAL or hot journal, else db + WAL/journal
    copied into the new `folder`, replayed there and checkpointed into the copy's main file.
    With `mend` (the caller found the WAL damaged: wal_frames.find_break), the committed frames past
    the damage are read too.
    Returns (connection, the file to scan, the snapshot folder or None). The caller removes `folder`."""
    wal = sidecar_paths(path)[0]
    if _plan(path) != "snapshot" and not (wal.exists() and wal.stat().st_size > 0):
        return open_checked(path, "immutable", True), path, None
    folder, copy = snapshot(path, folder)
    copied_wal = sidecar_paths(copy)[0]
    if mend and copied_wal.exists():  # (checkpointed away since the caller looked: nothing to mend)
        mend_copy(copied_wal)  # committed frames past a damaged one: the copy's SQLite reads them too
    conn = open_checked(copy, "copy", True)
    try:  # the private copy: its WAL folded into its main file, which the page scan reads
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.DatabaseError:
        pass
    return conn, copy, folder


def writer_arrived(conn: ReadConnection, path: Path) -> bool:
    """True when `conn` was an immutable look and a writer has opened the file since: a -wal exists
    now, or the main file changed under the look (a writer came, checkpointed and left, removing its
    -wal). What the look read may have been torn, so a problem it saw is looked at again."""
    return conn.how == "immutable" and (sidecar_paths(path)[0].exists() or file_identity(path) != conn.opened_as)
