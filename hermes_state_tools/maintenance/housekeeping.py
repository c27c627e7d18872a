"""Housekeeping on an existing database: rebuild the index, vacuum, back up, prune, and the scheduled `maintain`.

Every write here follows the store's discipline (BEGIN IMMEDIATE, retried on lock), so it is
safe while Hermes keeps using the file; VACUUM and checkpoints cannot run in a transaction and
are retried on their own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_state_tools.core.connection import WriteRunner, retry_on_lock
from hermes_state_tools.core.paths import sidecar_paths
from hermes_state_tools.core.schema import FTS_TABLE, object_names
from hermes_state_tools.maintenance.checks import check_file
from hermes_state_tools.maintenance.repair import repair_file
from hermes_state_tools.store.backup import backup_database
from hermes_state_tools.store.opening import reading, writing
from hermes_state_tools.tables import deleting, extras, fts

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


def _optimize(conn: sqlite3.Connection, runner: WriteRunner) -> bool:
    """Merge the FTS index segments; False when the file has no FTS table."""
    if FTS_TABLE not in object_names(conn, "table"):
        return False
    runner.run(fts.optimize)
    return True


def _vacuum(conn: sqlite3.Connection, runner: WriteRunner) -> None:
    """Checkpoint, VACUUM, ANALYZE, and checkpoint again so the smaller file is what is on disk."""
    _checkpoint(conn)
    retry_on_lock(lambda: conn.execute("VACUUM"))
    runner.run(lambda c: c.execute("ANALYZE"))
    _checkpoint(conn)


def free_bytes(conn: sqlite3.Connection) -> tuple[int, float]:
    """Bytes held by free pages, and their share of the file."""
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    return free * size, (free / pages if pages else 0.0)


def vacuum_file(path: Path) -> dict[str, Any]:
    """Checkpoint the WAL, optimize FTS, VACUUM and ANALYZE; bytes on disk before and after."""
    with writing(path) as (conn, runner):
        before = file_bytes(path)
        _checkpoint(conn)
        optimized = _optimize(conn, runner)
        _vacuum(conn, runner)
    return {"ok": True, "path": str(path), "optimized": optimized, "vacuumed": True,
            "bytes_before": before, "bytes_after": file_bytes(path)}


def rebuild_fts_file(path: Path) -> dict[str, Any]:
    """Rebuild messages_fts from `messages`, recreating the FTS table or triggers first if missing."""

    def rebuild(conn: sqlite3.Connection) -> tuple[list[str], int]:
        missing = fts.missing_objects(conn)
        fts.recreate(conn)
        return missing, conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]

    with writing(path) as (_conn, runner):
        recreated, count = runner.run(rebuild)
    return {"ok": True, "path": str(path), "messages_indexed": count, "recreated": recreated}


def backup_file(source: Path, dest: Path) -> dict[str, Any]:
    """Online copy of `source` to `dest`, verified; `dest` must not exist."""
    with reading(source):
        pass  # a missing, foreign or newer source is refused before `dest` is created
    result = backup_database(source, dest)
    return {"ok": True, "source": str(source), "path": str(result.path), "sessions": result.sessions,
            "messages": result.messages, "bytes": result.bytes}


def maintain_file(path: Path) -> dict[str, Any]:
    """The scheduled job: check, repair what is safe, optimize FTS, vacuum when the free space is worth it."""
    problems = tuple(check_file(path))  # first: it refuses a missing, foreign or newer file
    before = file_bytes(path)
    report: dict[str, Any] = {"check": {"ok": not problems, "problems": [f.as_dict() for f in problems]},
                              "repairs": [], "unfixed": [f.as_dict() for f in problems],
                              "extra_rows_dropped": 0, "optimized": False, "vacuumed": False}
    if any(f.kind == "integrity" for f in problems):
        # Writing into a damaged b-tree can spread the damage: leave the file for a restore.
        report["note"] = "the file fails integrity_check: nothing was written; restore a backup"
    else:
        if problems:
            repaired = repair_file(path, problems=problems)
            report["backup"] = repaired.backup
            report["repairs"] = [c.as_dict() for c in repaired.changes]
            report["unfixed"] = [f.as_dict() for f in repaired.unfixed]
        report.update(_optimize_and_vacuum(path))
    return {"ok": not report["unfixed"], "path": str(path), **report,
            "bytes_before": before, "bytes_after": file_bytes(path)}


def _optimize_and_vacuum(path: Path) -> dict[str, Any]:
    """Drop extra data left by sessions deleted elsewhere, optimize FTS, then VACUUM only when the
    free pages are worth a rewrite."""
    with writing(path) as (conn, runner):
        dropped = runner.run(extras.drop_orphans)
        optimized = _optimize(conn, runner)
        free, ratio = free_bytes(conn)
        vacuumed = ratio > VACUUM_FREE_RATIO or free > VACUUM_FREE_BYTES
        if vacuumed:
            _vacuum(conn, runner)
    return {"extra_rows_dropped": dropped, "optimized": optimized, "vacuumed": vacuumed, "free_bytes": free}


@dataclass(frozen=True)
class PrunePlan:
    """What a prune would delete: ended sessions started before the cutoff, and their messages."""

    older_than_days: float
    source: str | None
    session_ids: tuple[str, ...]
    messages: int


def _prune_report(plan: PrunePlan, ids: list[str] | tuple[str, ...], messages: int, dry_run: bool) -> dict[str, Any]:
    """The prune report; `ids` are the sessions deleted (or that would be, on a dry run)."""
    return {"ok": True, "sessions_deleted": len(ids), "messages_deleted": messages, "dry_run": dry_run,
            "older_than_days": plan.older_than_days, "source": plan.source, "session_ids": list(ids)}


def prune_file(path: Path, older_than_days: float, source: str | None = None, *, dry_run: bool = False,
               confirm: Callable[[PrunePlan], None] | None = None) -> dict[str, Any]:
    """Delete ended sessions older than the cutoff with their messages (children orphaned), in one transaction."""
    with reading(path) as conn:
        ids = tuple(deleting.prunable_ids(conn, older_than_days, source))
        plan = PrunePlan(older_than_days, source, ids, deleting.count_messages(conn, list(ids)))
    if dry_run:
        return _prune_report(plan, plan.session_ids, plan.messages, True)
    if confirm is not None:
        confirm(plan)  # sees the plan before anything is deleted; raises to cancel
    if not ids:
        return _prune_report(plan, (), 0, False)
    with writing(path) as (_conn, runner):
        deleted, messages = runner.run(lambda c: deleting.prune_confirmed(c, list(ids), older_than_days, source))
    return _prune_report(plan, deleted, messages, False)
