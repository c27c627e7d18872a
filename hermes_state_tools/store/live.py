"""Working beside a live writer (a running Hermes keeps its connection open and appends): the files'
sizes with the -wal counted, a pause between short transactions that lets its appends in, and a
-wal left empty once the writers allow it.

SQLite's rules behind this: every write transaction holds the one write lock, so a writer waits for
the whole of the longest one; a checkpoint cannot reset the WAL while another connection reads an
older snapshot; and a WAL that was fully copied back is written over from its start by the next
transaction, so it stays the size of the largest stretch written between two checkpoints.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core.paths import sidecar_paths
from hermes_state_tools.store.files import others_have_open

# SQLite's busy handler sleeps at most 100 ms between two tries for the lock (Hermes' writers wait
# in it): a pause a little longer than that lets every waiting writer take its turn.
YIELD_S = 0.11
YIELD_MOST_S = 0.5
# A TRUNCATE checkpoint holds the write lock while it waits for readers: each try waits this long at
# most, so an append waits no longer; a few tries, a pause between them.
_TRUNCATE_WAIT_MS = 100
_TRUNCATE_TRIES = 20


# How long one transaction of a long job may hold the write lock: beside another process (a running
# Hermes, whose appends wait for it), and with the file to itself (bounded only to keep memory and the
# WAL small: fewer, larger transactions are faster).
LIVE_TARGET_S = 0.2
ALONE_TARGET_S = 2.0


class Pace:
    """How many rows the next transaction of a long job should delete or write: scaled after each one so
    it holds the write lock about the target time, whatever the machine and the size of the rows; at
    most doubled a step, from a first guess small enough for a slow machine (a thousand 50-word messages
    took over a second on a loaded 2-core one)."""

    def __init__(self, first: int = 200, fewest: int = 50, most: int = 50_000) -> None:
        self.rows, self.fewest, self.most = first, fewest, most

    def __call__(self) -> int:
        return self.rows

    def took(self, seconds: float, target_s: float) -> None:
        scaled = int(self.rows * target_s / max(seconds, 1e-3))
        self.rows = max(self.fewest, min(self.most, 2 * self.rows, scaled))


@dataclass(frozen=True)
class FileSizes:
    """Bytes on disk of the database file and of its -wal (0 when there is none)."""

    database: int
    wal: int

    @property
    def total(self) -> int:
        return self.database + self.wal


def file_sizes(path: Path) -> FileSizes:
    """The database file's size and its -wal's, as they are now."""
    wal = sidecar_paths(path)[0]
    try:
        wal_bytes = wal.stat().st_size
    except FileNotFoundError:
        wal_bytes = 0
    return FileSizes(path.stat().st_size, wal_bytes)


def passive_checkpoint(conn: sqlite3.Connection) -> None:
    """Copy what the WAL holds into the file without waiting for anyone (what no reader needs)."""
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.OperationalError:
        pass  # housekeeping: a busy file must not fail the work between whose steps it runs


def yield_to_writers(path: Path, took: float = 0.0) -> bool:
    """Between two short write transactions (the last one `took` seconds): while another process has the
    file open, pause as long as it held the lock (at least YIELD_S, at most YIELD_MOST_S), so a writer
    that waited for it, woken late on a loaded machine, still finds the lock free; True then. (No
    checkpoint here: SQLite's automatic one at each commit past 1,000 WAL pages keeps the WAL short, and
    every extra checkpoint beside a writer is one more chance for the WAL-reset bug of SQLite before
    3.51.3.)"""
    if not others_have_open(path):
        return False
    time.sleep(min(max(YIELD_S, took), YIELD_MOST_S))
    return True


def settle_wal(conn: sqlite3.Connection) -> bool:
    """Copy the WAL into the file and truncate it to nothing, waiting at most 100 ms each try so that
    live writers' appends are never held longer; True when the -wal was emptied."""
    passive_checkpoint(conn)  # the copying, while writers go on
    waited = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute(f"PRAGMA busy_timeout = {_TRUNCATE_WAIT_MS}")
    try:
        for _ in range(_TRUNCATE_TRIES):
            try:
                if conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0:
                    return True
            except sqlite3.OperationalError:
                pass  # locked: a writer is in the middle of a transaction; try again after it
            time.sleep(YIELD_S)
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(waited)}")
