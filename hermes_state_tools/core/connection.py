"""Connections and the write discipline every process sharing state.db follows.

Writes run in `BEGIN IMMEDIATE` so lock contention surfaces at the start of the
transaction; on `locked`/`busy` they are retried after a random 20-150 ms sleep (the
jitter breaks the convoy of writers that all wake at once), up to 15 times.
"""

from __future__ import annotations

import errno
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hermes_state_tools.errors import DatabaseLockedError

T = TypeVar("T")

_BUSY_TIMEOUT_S = 1.0
_WRITE_MAX_RETRIES = 15
_WRITE_RETRY_MIN_S = 0.020
_WRITE_RETRY_MAX_S = 0.150
_CHECKPOINT_EVERY_N_WRITES = 50

_SQLITE_HEADER = b"SQLite format 3\x00"

# SQLite's primary result codes (stable across versions; Python names them only from 3.11 on).
SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_IOERR = 3, 5, 6, 8, 10
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_AUTH, SQLITE_NOTADB = 11, 13, 14, 23, 26
_LOCK_CODES = {SQLITE_BUSY, SQLITE_LOCKED}


def result_code(exc: BaseException) -> int | None:
    """The primary SQLite result code of an error (None where Python does not say, before 3.11)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


# What a failing disk looks like to the OS (full, quota, hardware, a file too large, mounted read-only).
_OS_IO = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG, errno.EROFS}


def is_corrupt(exc: BaseException) -> bool:
    """True for SQLITE_CORRUPT and its extended codes (a damaged page, a malformed schema)."""
    code = result_code(exc)
    if code is not None:
        return code == SQLITE_CORRUPT
    return isinstance(exc, sqlite3.DatabaseError) and "malformed" in str(exc)  # pragma: no cover - Python < 3.11


def is_undecodable(exc: BaseException) -> bool:
    """True for the error Python's sqlite3 raises on reading TEXT that is not UTF-8: no Hermes writes
    such bytes (a destroyed overflow page, or another program wrote them)."""
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith("Could not decode to UTF-8")


def is_io_error(exc: BaseException) -> bool:
    """True when the disk failed under SQLite or the OS: full, quota, an I/O error (exit 74)."""
    if isinstance(exc, OSError):
        return exc.errno in _OS_IO
    return isinstance(exc, sqlite3.Error) and result_code(exc) in (SQLITE_FULL, SQLITE_IOERR)


def is_disk_full(exc: BaseException) -> bool:
    """True when there was no room to write: SQLITE_FULL, or the OS's no space / over quota."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return isinstance(exc, sqlite3.Error) and result_code(exc) == SQLITE_FULL


def is_lock_error(exc: BaseException) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED, judged by the error code rather than the message text."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = result_code(exc)
    if code is not None:
        return code in _LOCK_CODES
    return "locked" in str(exc) or "busy" in str(exc)  # pragma: no cover - Python < 3.11


def looks_like_sqlite(path: Path) -> bool:
    """True when the file is empty or starts with the SQLite header."""
    with open(path, "rb") as handle:
        head = handle.read(len(_SQLITE_HEADER))
    return head in (b"", _SQLITE_HEADER)


def connect(path: Path, *, readonly: bool = False, immutable: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with dict-friendly rows.

    `immutable` (read-only, for one short look) takes no locks and creates no -wal/-shm
    files, so the folder is left exactly as it was.
    """
    if readonly or immutable:
        uri = f"{path.resolve().as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")
        conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, check_same_thread=False,
                               isolation_level=None)
    else:
        conn = sqlite3.connect(str(path), timeout=_BUSY_TIMEOUT_S, check_same_thread=False,
                               isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


_lock_wait_notice: Callable[[], None] | None = None


def on_lock_wait(notice: Callable[[], None] | None) -> None:
    """What to do when a write finds the database locked and starts retrying: the CLI says on stderr
    that it is waiting (instead of seconds of silence before exit 75); None, the default, is silent."""
    global _lock_wait_notice
    _lock_wait_notice = notice


def retry_on_lock(fn: Callable[[], T], failed: sqlite3.OperationalError | None = None) -> T:
    """Call `fn`, retrying on locked/busy after a random 20-150 ms sleep, up to 15 retries.

    `failed`: the caller's own first try of `fn` already met this lock error, so the retries start.
    """
    last_error = failed
    for attempt in range(0 if failed is None else 1, _WRITE_MAX_RETRIES + 1):
        if attempt == 1 and _lock_wait_notice is not None:
            _lock_wait_notice()
        if attempt:
            time.sleep(random.uniform(_WRITE_RETRY_MIN_S, _WRITE_RETRY_MAX_S))
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _retryable(exc):
                raise
            last_error = exc
    cause = "" if str(last_error) == "database is locked" else f" ({last_error})"  # say it once
    raise DatabaseLockedError(
        f"database is locked: gave up after {_WRITE_MAX_RETRIES} retries{cause}"
    ) from last_error


def _retryable(exc: sqlite3.OperationalError) -> bool:
    return is_lock_error(exc) and not isinstance(exc, DatabaseLockedError)


class WriteRunner:
    """Runs write transactions on one connection with the shared retry and checkpoint rules."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self._conn = conn
        self._lock = lock
        self._writes = 0

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(conn, *args)` inside `BEGIN IMMEDIATE`; commit, or roll back whole and re-raise.

        The first try is made here and only a lock error enters `retry_on_lock`: the live path
        (`append_message`, once per message) pays no closure or retry frame for the common case.
        """
        try:
            result = self._attempt(fn, args)
        except sqlite3.OperationalError as exc:
            if not _retryable(exc):
                raise
            result = retry_on_lock(lambda: self._attempt(fn, args), failed=exc)
        self._writes += 1
        if self._writes % _CHECKPOINT_EVERY_N_WRITES == 0:
            self._checkpoint()
        return result

    def _attempt(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")  # inside: an interrupt right after it still rolls back
                result = fn(conn, *args)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return result

    def _checkpoint(self) -> None:
        with self._lock:
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.OperationalError:
                pass  # a checkpoint is housekeeping; a busy reader must not fail the write
