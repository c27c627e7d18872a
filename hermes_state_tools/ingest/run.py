"""The import pipeline: files -> per-session units -> prepared plans -> short write transactions -> stats."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from pathlib import Path
from typing import Protocol

from hermes_state_tools.core.paths import unclaimed
from hermes_state_tools.core.records import Problem
from hermes_state_tools.core.schema import SCHEMA_VERSION, is_newer
from hermes_state_tools.errors import DestinationExistsError, LayoutMismatchError, NotAHermesDatabaseError
from hermes_state_tools.importers.discover import discover_names
from hermes_state_tools.ingest.copies.merge import Existing
from hermes_state_tools.ingest.copies.stored import load_existing, texts_wanted
from hermes_state_tools.ingest.planning.batches import Batch, local_batches
from hermes_state_tools.ingest.planning.dry_run import as_written, with_stored_texts
from hermes_state_tools.ingest.planning.prepared import Prepared, left_out, prepare
from hermes_state_tools.ingest.planning.units import ReadLog, Unit, UnitReader, parent_links
from hermes_state_tools.ingest.reader.channel import Find
from hermes_state_tools.ingest.reader.launch import AskedReader, ReaderProcess, start_reader, stop_reader
from hermes_state_tools.ingest.reader.remote import found_by, remote_batches
from hermes_state_tools.ingest.stats import ImportStats, ImportTally
from hermes_state_tools.ingest.writing.staging import attached
from hermes_state_tools.ingest.writing.writer import (
    BatchResult,
    Written,
    restore_parent_links,
    retimed_notice,
    write_batch,
)
from hermes_state_tools.store.backup import changing_schema
from hermes_state_tools.store.files import remove_stale_temps
from hermes_state_tools.store.fresh import build_new_store
from hermes_state_tools.store.opening import (
    open_read_connection,
    require_sound,
    require_supported,
    require_writable,
    schema_change_pending,
)
from hermes_state_tools.store.session_db import SessionDB

# Below this many files a second process costs more to start than it saves.
PARALLEL_FROM_FILES = 64


class Progress(Protocol):
    def start(self, files: int) -> None: ...  # may come again: counting starts over
    def advance(self, files: int = 0, messages: int = 0) -> None: ...


# A session another process keeps writing to is planned again after each batch that found it changed;
# past this many rounds it is left for a re-run (reported), so the import always ends.
REPLAN_ROUNDS = 20
PLAN_LOCKED_AFTER = 3

Replan = Callable[[sqlite3.Connection, Unit], "Prepared | None"]


def _replanner(tz: tzinfo | None, source: str | None) -> Replan:
    """Re-read a unit's files and plan it against the database as it is now (outside any write)."""
    def replan(conn: sqlite3.Connection, shell: Unit) -> Prepared | None:
        # A private log: these problems were reported once.
        reader = UnitReader([], tz, source, ReadLog(), parent_links(conn))
        copies = [c for path in shell.files for c in reader.records(Path(path), shell.session_id)]
        return prepare(conn, shell.with_copies(copies))

    return replan


def write_all(db: SessionDB, source_batches: Generator[Batch, None, None], stats: ImportTally, log: ReadLog,
              replan: Replan, progress: Progress | None) -> list[str]:
    """Write every batch; returns the ids of sessions whose parent link was kept aside."""
    files_seen = 0
    parked: list[str] = []
    # Closed however this ends, so a reader process and its staging files never outlive the import
    # (a caller holding on to an exception would otherwise keep the generator alive).
    with contextlib.closing(source_batches) as batches:
        for batch in batches:
            _write_one(db, batch, stats, replan, parked)
            if progress:
                progress.advance(files=log.files_read - files_seen, messages=batch.messages)
                files_seen = log.files_read
    return parked


def _write_one(db: SessionDB, batch: Batch, stats: ImportTally, replan: Replan, parked: list[str]) -> None:
    """Write one batch, then the sessions it found changed, planned again, in batches of their own.
    Planned again outside the write lock (a live Hermes keeps writing meanwhile); a session found
    changed PLAN_LOCKED_AFTER times is planned inside a write transaction of its own, where nothing
    can change it before it is written (Hermes appending every few milliseconds made every plan made
    outside stale), one session at a time so the lock is held for one session's planning only."""
    changed: dict[str, int] = {}
    for _round in range(REPLAN_ROUNDS):
        stale = _write_batch(db, batch, stats, parked)
        again = []
        for unit in stale:
            changed[unit.session_id] = changed.get(unit.session_id, 0) + 1
            if changed[unit.session_id] < PLAN_LOCKED_AFTER:
                again.append(unit)
            else:
                _write_batch(db, Batch(()), stats, parked, functools.partial(_plan_locked, replan, unit))
        batch = Batch(tuple(p for unit in again if (p := replan(db.handle.conn, unit)) is not None))
        if not batch.items:
            return
    for item in batch.items:
        stats.problems.append(Problem(f"session {item.session_id}", None, "not_stored",
                                      "the session kept changing while it was imported (another process writes "
                                      "to it); nothing of this copy was stored, re-run to finish"))


def _plan_locked(replan: Replan, unit: Unit, conn: sqlite3.Connection) -> Prepared | None:
    return replan(conn, unit)


def _write_batch(db: SessionDB, batch: Batch, stats: ImportTally, parked: list[str],
                 plan: Callable[[sqlite3.Connection], Prepared | None] | None = None) -> tuple[Unit, ...]:
    """One write transaction of `batch` (or of what `plan` makes, inside it); returns the sessions it
    found changed since they were planned."""
    def write(conn: sqlite3.Connection) -> BatchResult:
        if plan is None:
            return write_batch(conn, batch.items, batch.creates)
        return write_batch(conn, tuple(p for p in (plan(conn),) if p is not None))

    with attached(db.handle.conn, batch.staging):
        result = db.handle.runner.run(write)
    for written in result.written:
        stats.count(written)
        if written.parent_parked:
            parked.append(written.session_id)
    return result.stale


def _dry_run(db_path: Path, files: list[str], tz: tzinfo | None, source: str | None, stats: ImportTally,
             log: ReadLog) -> None:
    """Plan everything without writing (see plan_without_writing)."""
    plan_without_writing(db_path, stats, lambda conn: UnitReader(files, tz, source, log, parent_links(conn)).units(),
                         log.problems)


def plan_without_writing(db_path: Path, stats: ImportTally,
                         units_of: Callable[[sqlite3.Connection | None], Iterable[Unit]],
                         said: list[Problem] | None = None) -> None:
    """A dry run: every unit planned, nothing written; a session met again (a /save file, an export
    line) is planned against what the run would already have written for it, so the counts match a
    real run. The units come from `units_of`, given the database's read connection (None: none yet).
    What a unit gave nothing to write is said in `said` (the read log, so in the order a real run says
    it), else in the stats."""
    # A dry run is a read command: it leaves no -wal/-shm beside the database (store/read_open.py).
    conn = open_read_connection(db_path) if db_path.exists() and db_path.stat().st_size else None
    written: dict[str, Existing] = {}
    try:
        for unit in units_of(conn):
            before = written.get(unit.session_id)
            texts = texts_wanted(unit.copies)
            if before is None and conn is not None:
                before = load_existing(conn, unit.session_id, texts)
            elif texts and before is not None and conn is not None:  # met again, with masks: stored texts compared
                before = with_stored_texts(before, load_existing(conn, unit.session_id, True))
            item = prepare(None, unit, before)  # planned against `before`, read once here
            if item is None and (problem := left_out(unit)) is not None:
                (stats.problems if said is None else said).append(problem)
            if item is not None:
                stats.count(Written.planned(item, retimed_notice(item)))
                written[unit.session_id] = as_written(item, before)
    finally:
        if conn is not None:
            conn.close()


def prepare_schema(db_path: Path, stats: ImportTally, schema: int | None = None) -> bool:
    """Refuse a foreign, newer or damaged file (nothing writes into one; a dry run says what the real
    run would), whether or not anything is found to import, and one of another layout than `schema`
    asks for. True: the file was proven sound for a real run (open_target need not prove it again)."""
    if db_path.exists() and not db_path.is_file():  # a folder, a pipe, a device: never a store
        raise NotAHermesDatabaseError(f"{db_path}: not a file")
    if not (db_path.exists() and db_path.stat().st_size):
        return False
    # supported and sound (integrity_check: rows go in beside damage), in one look
    version = require_sound(db_path, full=True)
    if schema is not None and (version if is_newer(version) else SCHEMA_VERSION) != schema:
        raise LayoutMismatchError(f"{db_path}: --schema {schema} creates a new database, and this one exists at "
                                  f"schema {version}; it keeps its own layout (leave --schema out to import into it)")
    if stats.dry_run:
        return False
    require_writable(db_path)
    remove_stale_temps(db_path.parent)  # a killed run's leftovers (a build placed, then killed before unlinking)
    return True


def note_upgrade(db_path: Path, stats: ImportTally) -> None:
    """A dry run that found something to write says the real run would upgrade the file first."""
    if db_path.exists() and db_path.stat().st_size and schema_change_pending(db_path):
        stats.would_upgrade = {"from": require_supported(db_path), "to": SCHEMA_VERSION,
                               "backup_first": f"{db_path}.bak-<timestamp>"}


def open_target(db_path: Path, stats: ImportTally, proven: bool = False, what: str = "import-jsonl") -> SessionDB:
    """The store a real run writes into, opened (created, upgraded) only once something will be
    written; when the opening changes the schema, the file as it was is backed up first, and when it
    would rebuild the search index of a big file Hermes has open, `what` (the command) is refused.
    `proven`: what prepare_schema returned for this file."""
    with changing_schema(db_path, what) as stats.backup:
        return SessionDB(db_path, _proven=proven)


@dataclass(frozen=True)
class _Job:
    """What a real run reads and how: the same for a new file built aside and for an existing one."""

    files: list[str]  # as discovery found them: the paths as text
    found: list[Problem]  # what discovery reported
    tz: tzinfo | None
    source: str | None
    progress: Progress | None
    # A reader process started as soon as the files were known (its start overlaps opening the
    # store); the first run that reads takes it.
    spare: list[ReaderProcess] = field(default_factory=list)
    proven: bool = False  # the existing file passed require_sound before the files were read
    ahead: bool = False  # the spare reader found the files itself and reads them, planned against no database
    schema: int | None = None  # --schema: the layout a new file is created in (None: 6, the contract's)


def _write_into(db: SessionDB, plan_against: Path | None, job: _Job, stats: ImportTally, log: ReadLog) -> None:
    """Every batch, then the parked parents' pass, written into `db` (its batches planned against
    the file `plan_against`; None: against no database)."""
    db.handle.conn.execute("PRAGMA cache_size=-65536")  # 64 MiB: FTS merges and b-tree inserts stay in memory
    if len(job.files) >= PARALLEL_FROM_FILES:
        child = job.spare.pop() if job.spare else None
        batches = remote_batches(plan_against, job.files, job.tz, job.source, log, child, job.ahead and bool(child))
    else:
        batches = local_batches(plan_against, job.files, job.tz, job.source, log)
    parked = write_all(db, batches, stats, log, _replanner(job.tz, job.source), job.progress)
    log.problems += db.handle.runner.run(lambda conn: restore_parent_links(conn, parked))


def _into_existing(db_path: Path, job: _Job, stats: ImportTally, log: ReadLog) -> None:
    with open_target(db_path, stats, job.proven) as db:
            # Durable against a crash of this process at any point (WAL); only a power cut could
        # undo the last few batches, and a re-run imports them again. Saves an fsync per batch.
        db.handle.conn.execute("PRAGMA synchronous=NORMAL")
        # Checkpoint every ~32 MiB of WAL instead of every 4 MiB: pages the batches rewrite (FTS
        # segments, b-tree interiors) are copied back far less often; measured ~4% of the import.
        db.handle.conn.execute("PRAGMA wal_autocheckpoint=8192")
        _write_into(db, db_path, job, stats, log)


def _real_run(db_path: Path, job: _Job) -> tuple[ImportTally, ReadLog]:
    """Write everything. A file that does not exist yet is built aside and placed whole (store/fresh.py);
    when another process creates it meanwhile, the import runs again into that file, as if it had been
    there from the start (the private build is thrown away)."""
    if unclaimed(db_path):
        stats, log = ImportTally(), ReadLog(list(job.found))
        try:
            # Planned against no database: the new file holds only what this run writes.
            build_new_store(db_path, lambda db: _write_into(db, None, job, stats, log), job.schema or SCHEMA_VERSION)
            stats.database_created = str(db_path)  # said, so a typo'd --db is seen at once
            return stats, log
        except DestinationExistsError:
            if job.progress:
                job.progress.start(len(job.files))  # the files are read again
            # The file that appeared is held to the usual rules.
            job = replace(job, proven=prepare_schema(db_path, ImportTally(), job.schema))
    stats, log = ImportTally(), ReadLog(list(job.found))
    empty = db_path.exists() and db_path.stat().st_size == 0  # a 0-byte file is made a store, as a missing one
    _into_existing(db_path, job, stats, log)
    if empty:
        stats.database_created = str(db_path)
    return stats, log


def import_paths(db_path: Path, paths: list[Path], *, tz: tzinfo | None = None, source: str | None = None,
                 dry_run: bool = False, progress: Progress | None = None,
                 reader: AskedReader | None = None, schema: int | None = None) -> ImportStats:
    """Import legacy transcripts under `paths` into the store at `db_path` (created if missing or empty).

    `reader`: a reader process the caller started beforehand with the same arguments
    (ingest/reader/launch.py:finding_reader), so its interpreter started and it found the files (and, for a
    new file, read them) while the import's modules loaded; taken if the import reads in a reader
    process, stopped if not."""
    stats, log = ImportTally(dry_run=dry_run), ReadLog()
    # A real run with enough files reads them in a reader process, started as soon as that many are
    # found (unless one was started already): its start overlaps the rest of the search and opening the store.
    asked = reader is not None and not dry_run and reader.request == Find(db_path, [os.fspath(p) for p in paths],
                                                                         tz, source)
    if reader is not None and not asked:  # a dry run, or a reader asked something else: of no use here
        stop_reader(reader.process, given_work=True)
    spare: list[ReaderProcess] = [reader.process] if reader is not None and asked else []

    def start_early() -> None:
        if (child := start_reader(tz)) is not None:
            spare.append(child)

    try:  # from the first look at the file on: a reader given is stopped however this ends
        new_file = not (db_path.exists() and db_path.stat().st_size)  # a dry run says it would make it
        # A non-empty file must already be a Hermes database of a supported schema (refused otherwise,
        # dry run or not, files found or not); the store is opened (and upgraded) only to write.
        proven = prepare_schema(db_path, stats, schema)
        # The files, discovery's notices, and whether the reader reads them already: found by the
        # reader when it was asked to; here when it was not, or failed (it is then stopped, and one
        # started anew once enough files are found).
        if asked and (answer := found_by(spare[0])) is not None:
            files, found, ahead = answer
        else:
            if asked:
                stop_reader(spare.pop(), given_work=True)
                asked = False
            files, found = discover_names(paths, None if dry_run or spare else (PARALLEL_FROM_FILES, start_early))
            ahead = False
        log.problems += found
        if not files:  # nothing to write: the database is not created or opened for it
            stats.problems = [*log.problems, Problem(", ".join(map(str, paths)), None, "nothing_found",
                                                     "no legacy transcript files found here")]
            return stats.report()
        if progress:
            progress.start(len(files))
        if dry_run:
            note_upgrade(db_path, stats)
            _dry_run(db_path, files, tz, source, stats, log)
        else:
            stats, log = _real_run(db_path, _Job(files, found, tz, source, progress, spare, proven, ahead, schema))
    finally:
        for child in spare:  # not taken: the run failed before it read (or found fewer files once counted)
            stop_reader(child, given_work=asked)
    stats.problems = log.problems + stats.problems
    stats.files_read = log.files_read
    if dry_run and new_file:
        stats.database_created = str(db_path)
    return stats.report()
