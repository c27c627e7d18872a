"""The import pipeline: files -> per-session units -> plans -> short write transactions -> stats."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Any, Protocol

from importers import discover, read_file
from importers.discover import file_shape
from importers.records import LegacySession, Problem

from ..database import refuse_newer
from ..readonly import open_readonly
from ..store import SessionDB
from .merge import SessionPlan, plan_session
from .writer import apply_plans, load_existing, restore_parent_links

BATCH_MESSAGES = 4000  # rows per write transaction: long enough to amortise a commit, short enough
BATCH_SESSIONS = 400   # that a concurrent Hermes writer waits a fraction of a second at most


class Progress(Protocol):
    def start(self, files: int) -> None: ...
    def advance(self, files: int = 0, messages: int = 0) -> None: ...


@dataclass
class ImportStats:
    """What an import did (or, with dry_run, would do); the CLI report is `as_dict()`."""

    dry_run: bool = False
    sessions_created: int = 0
    sessions_updated: int = 0
    messages_imported: int = 0
    messages_skipped_duplicate: int = 0
    files_read: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """True when some record could not be stored (exit code 1)."""
        return any(p.failure for p in self.problems)

    def count(self, plan: SessionPlan) -> None:
        self.sessions_created += plan.create
        self.sessions_updated += (not plan.create) and plan.changes
        self.messages_imported += len(plan.inserts)
        self.messages_skipped_duplicate += plan.duplicates
        self.problems += plan.problems

    def as_dict(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for problem in self.problems:
            kinds[problem.kind] = kinds.get(problem.kind, 0) + 1
        return {
            "ok": not self.failed, "dry_run": self.dry_run, "sessions_created": self.sessions_created,
            "sessions_updated": self.sessions_updated, "messages_imported": self.messages_imported,
            "messages_skipped_duplicate": self.messages_skipped_duplicate, "files_read": self.files_read,
            "problem_counts": kinds, "problems": [p.as_dict() for p in self.problems],
        }


@dataclass
class _Unit:
    """Every copy of one session read in this run, plus the file time used when nothing has a time."""

    session_id: str
    copies: list[LegacySession]
    fallback_start: float


def _named_id(path: Path) -> str | None:
    """The session id a transcript's file name gives, when it gives one."""
    shape = file_shape(path)
    if shape == "jsonl":
        return path.stem
    if shape == "snapshot" and path.name.startswith("session_"):
        return path.stem[len("session_"):]
    return None


def _mtime(path: Path) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


class _Planner:
    """Turns discovered files into units, session by session, keeping memory to one session's copies."""

    def __init__(self, files: list[Path], tz: tzinfo | None, source: str | None, stats: ImportStats,
                 progress: Progress | None) -> None:
        self.tz, self.source, self.stats, self.progress = tz, source, stats, progress
        self.index: dict[str, LegacySession] = {}
        self.groups: dict[str, list[Path]] = {}
        self.singles: list[Path] = []
        for path in files:
            if file_shape(path) == "index":
                self._read_index(path)
            elif (sid := _named_id(path)) is not None:
                self.groups.setdefault(sid, []).append(path)
            else:
                self.singles.append(path)

    def _records(self, path: Path) -> Iterator[LegacySession]:
        self.stats.files_read += 1
        for record in read_file(path, self.tz, self.source):
            if isinstance(record, Problem):
                self.stats.problems.append(record)
            else:
                yield record
        if self.progress:
            self.progress.advance(files=1)

    def _read_index(self, path: Path) -> None:
        for record in self._records(path):
            self.index.setdefault(record.session_id, record)

    def units(self) -> Iterator[_Unit]:
        for sid in sorted(self.groups):
            paths = self.groups[sid]
            copies = [record for path in paths for record in self._records(path)]
            by_id: dict[str, list[LegacySession]] = {}
            for copy in copies:
                by_id.setdefault(copy.session_id, []).append(copy)
            for session_id, found in by_id.items():
                yield self._unit(session_id, found, max(_mtime(p) for p in paths))
        for path in self.singles:
            for record in self._records(path):
                yield self._unit(record.session_id, [record], _mtime(path))
        for session_id, entry in self.index.items():  # index entries no transcript named
            yield _Unit(session_id, [entry], 0.0)
        self.index = {}

    def _unit(self, session_id: str, copies: list[LegacySession], mtime: float) -> _Unit:
        entry = self.index.pop(session_id, None)
        return _Unit(session_id, copies + ([entry] if entry else []), mtime)


def _plan(conn: Any, unit: _Unit) -> SessionPlan | None:
    """The unit's plan, or None when nothing should be written (an empty transcript with no index entry)."""
    existing = load_existing(conn, unit.session_id) if conn is not None else None
    kinds = {c.kind for c in unit.copies}
    # An empty transcript becomes a session only with an index entry to describe it; an index
    # entry alone (its transcript gone) or an empty file alone has nothing to build one from.
    # An exported session is always a session, messages or not.
    empty = existing is None and not any(c.messages for c in unit.copies)
    if empty and "export" not in kinds and (kinds == {"index"} or "index" not in kinds):
        return None
    return plan_session(unit.session_id, unit.copies, existing, unit.fallback_start)


def _batches(units: Iterable[_Unit]) -> Iterator[list[_Unit]]:
    batch: list[_Unit] = []
    size = 0
    for unit in units:
        batch.append(unit)
        size += sum(len(c.messages) for c in unit.copies)
        if size >= BATCH_MESSAGES or len(batch) >= BATCH_SESSIONS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _write_batch(db: SessionDB, batch: list[_Unit], stats: ImportStats, progress: Progress | None) -> None:
    def transaction(conn: Any) -> list[SessionPlan]:
        plans = [p for p in (_plan(conn, unit) for unit in batch) if p is not None]
        apply_plans(conn, [p for p in plans if p.changes or p.session_extra])
        return plans

    for plan in db._writer.run(transaction):
        stats.count(plan)
    if progress:
        progress.advance(messages=sum(len(c.messages) for unit in batch for c in unit.copies))


def _dry_run(db_path: Path, units: Iterable[_Unit], stats: ImportStats) -> None:
    conn = open_readonly(db_path) if db_path.exists() and db_path.stat().st_size else None
    try:
        for unit in units:
            plan = _plan(conn, unit)
            if plan is not None:
                stats.count(plan)
    finally:
        if conn is not None:
            conn.close()


def import_paths(db_path: Path, paths: list[Path], *, tz: tzinfo | None = None, source: str | None = None,
                 dry_run: bool = False, progress: Progress | None = None) -> ImportStats:
    """Import legacy transcripts under `paths` into the store at `db_path` (created if missing or empty)."""
    stats = ImportStats(dry_run=dry_run)
    if db_path.exists() and db_path.stat().st_size:
        refuse_newer(db_path)
        open_readonly(db_path).close()  # a non-empty file must already be a Hermes database
    files, found = discover(paths)
    stats.problems += found
    if progress:
        progress.start(len(files))
    planner = _Planner(files, tz, source, stats, progress)
    if dry_run:
        _dry_run(db_path, planner.units(), stats)
        return stats
    with SessionDB(db_path) as db:
        for batch in _batches(planner.units()):
            _write_batch(db, batch, stats, progress)
        waiting = db._writer.run(restore_parent_links)
    stats.problems += [Problem(f"session {sid}", None, "missing_parent",
                               "parent session is not in the database; the link is kept in extra data")
                       for sid in waiting]
    return stats
