"""`vacuum`: checkpoint the WAL, optimize FTS, VACUUM and ANALYZE; and when `maintain` thinks a VACUUM is worth it.

VACUUM and checkpoints cannot run in a transaction: they are retried on lock on their own, so this
is safe while Hermes keeps using the file.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core.connection import WriteRunner, retry_on_lock
from hermes_state_tools.core.paths import sidecar_paths
from hermes_state_tools.core.progress import Steps, expect, step
from hermes_state_tools.core.reports import Report
from hermes_state_tools.core.schema import FTS_TABLE, object_names
from hermes_state_tools.store.opening import writing
from hermes_state_tools.tables import fts

# VACUUM rewrites the whole file: only worth it when a fifth of it, or 64 MiB, is free pages.
VACUUM_FREE_RATIO = 0.2
VACUUM_FREE_BYTES = 64 * 1024 * 1024


def file_bytes(path: Path) -> int:
    """Bytes on disk: the database file plus its WAL."""
    wal = sidecar_paths(path)[0]
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def _checkpoint(conn: sqlite3.Connection) -> None:
    """Copy the WAL into the file and truncate it (readers still using it just make it partial)."""
    retry_on_lock(lambda: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())


def optimize_fts(conn: sqlite3.Connection, runner: WriteRunner) -> bool:
    """Merge the FTS index segments; False when the file has no FTS table."""
    if FTS_TABLE not in object_names(conn, "table"):
        return False
    runner.run(fts.optimize)
    return True


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


@dataclass(frozen=True)
class VacuumReport(Report):
    path: str
    optimized: bool
    bytes_before: int
    bytes_after: int
    vacuumed: bool = True
    ok: bool = True


def vacuum_file(path: Path, progress: Steps | None = None) -> VacuumReport:
    """Checkpoint the WAL, optimize FTS, VACUUM and ANALYZE; bytes on disk before and after."""
    with writing(path, full=True) as (conn, runner):
        before = file_bytes(path)
        expect(progress, 2)
        step(progress, "checkpoint")
        _checkpoint(conn)
        step(progress, "optimizing the search index")
        optimized = optimize_fts(conn, runner)
        vacuum_now(conn, runner, progress)
    return VacuumReport(str(path), optimized, before, file_bytes(path))


