"""`vacuum`: checkpoint the WAL, optimize FTS, VACUUM and ANALYZE; and when `maintain` thinks a VACUUM is worth it.

VACUUM rewrites the whole file under the write lock, and in WAL mode writes all of it into the WAL:
beside a process that keeps the file open (a running Hermes) its appends would wait for the whole
rewrite and the -wal would stay the size of the database. So a VACUUM runs only when no other process
has the file open; `vacuum` refuses otherwise (exit 75, nothing changed) and `maintain` skips it and
says why, and leaves the search index's merging (another rewrite under the write lock) for then too.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core.connection import WriteRunner, retry_on_lock
from hermes_state_tools.core.progress import Steps, expect, step
from hermes_state_tools.core.reports import Report
from hermes_state_tools.core.schema import FTS_TABLE, object_names
from hermes_state_tools.errors import DatabaseInUseError
from hermes_state_tools.store.files import others_have_open
from hermes_state_tools.store.live import FileSizes, file_sizes
from hermes_state_tools.store.opening import require_supported, writing
from hermes_state_tools.tables import fts

# VACUUM rewrites the whole file: only worth it when a fifth of it, or 64 MiB, is free pages.
VACUUM_FREE_RATIO = 0.2
VACUUM_FREE_BYTES = 64 * 1024 * 1024

IN_USE = ("another process has the database open (Hermes?): VACUUM rewrites the whole file under the write "
          "lock, which would hold its writes for seconds and leave a -wal the size of the database")
DEFERRED = ("another process has the database open (Hermes?): optimizing the search index and VACUUM rewrite "
            "large parts of the file under the write lock, which would hold its writes for seconds; they run "
            "when it is stopped")


def _checkpoint(conn: sqlite3.Connection) -> None:
    """Copy the WAL into the file and truncate it (readers still using it just make it partial)."""
    retry_on_lock(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())


def optimize_fts(conn: sqlite3.Connection, runner: WriteRunner) -> bool:
    """Merge the FTS index segments into one; False when the file has no FTS table."""
    if FTS_TABLE not in object_names(conn, "table"):
        return False
    runner.run(fts.optimize)
    return True


def refuse_while_open(path: Path) -> None:
    """DatabaseInUseError (exit 75) when another process has the file open: no VACUUM beside it."""
    if others_have_open(path):
        raise DatabaseInUseError(f"{path}: {IN_USE}; nothing was changed; run vacuum while Hermes is stopped "
                                 "(maintain skips the vacuum meanwhile)")


def vacuum_now(conn: sqlite3.Connection, runner: WriteRunner, progress: Steps | None = None) -> None:
    """Checkpoint, VACUUM, ANALYZE, and checkpoint again so the smaller file is what is on disk."""
    expect(progress, 4)
    step(progress, "checkpoint")
    _checkpoint(conn)
    step(progress, "VACUUM")
    retry_on_lock(lambda: conn.execute("VACUUM"))
    step(progress, "ANALYZE")
    runner.run(lambda c: c.execute("ANALYZE"))
    step(progress, "checkpoint")
    _checkpoint(conn)


def free_bytes(conn: sqlite3.Connection) -> tuple[int, float]:
    """Bytes held by free pages, and their share of the file."""
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    return free * size, (free / pages if pages else 0.0)


def worth_vacuuming(free: int, ratio: float) -> bool:
    """maintain's vacuum decision: rewrite the file only when enough of it is free pages."""
    return ratio > VACUUM_FREE_RATIO or free > VACUUM_FREE_BYTES


def size_fields(before: FileSizes, after: FileSizes) -> dict[str, int]:
    """A report's sizes: the totals (database file and -wal) and each file's, before and after."""
    return {"bytes_before": before.total, "bytes_after": after.total,
            "database_bytes_before": before.database, "database_bytes_after": after.database,
            "wal_bytes_before": before.wal, "wal_bytes_after": after.wal}


@dataclass(frozen=True)
class VacuumReport(Report):
    """What vacuum did to the files: bytes on disk before and after, the -wal counted and also shown apart."""

    path: str
    optimized: bool
    bytes_before: int
    bytes_after: int
    database_bytes_before: int = 0
    database_bytes_after: int = 0
    wal_bytes_before: int = 0
    wal_bytes_after: int = 0
    vacuumed: bool = True
    ok: bool = True


def vacuum_file(path: Path, progress: Steps | None = None) -> VacuumReport:
    """Checkpoint the WAL, optimize FTS, VACUUM and ANALYZE; the files' sizes before and after.
    Refused (DatabaseInUseError) while another process has the file open."""
    require_supported(path)  # a missing or foreign file is said as such, before the refusal
    refuse_while_open(path)
    with writing(path, full=True) as (conn, runner):
        refuse_while_open(path)  # again: the integrity check before took a while
        before = file_sizes(path)
        expect(progress, 2)
        step(progress, "checkpoint")
        _checkpoint(conn)
        step(progress, "optimizing the search index")
        optimized = optimize_fts(conn, runner)
        vacuum_now(conn, runner, progress)
    after = file_sizes(path)
    return VacuumReport(str(path), optimized, before.total, after.total, before.database, after.database,
                        before.wal, after.wal)
