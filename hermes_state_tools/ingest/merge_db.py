"""`hermes-state merge OTHER.db`: every session and message of another state.db into this one, with
the import's alignment, so nothing doubles and a second run adds nothing.

OTHER's sessions are read one at a time (other_db.py) as copies of kind "export", planned
against this database like any legacy file's copy and written in the import's short batches.
OTHER is only ever read, through a read-only connection, and never upgraded.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

from hermes_state_tools.core.records import LegacySession
from hermes_state_tools.errors import SameDatabaseError
from hermes_state_tools.ingest import run
from hermes_state_tools.ingest.copies.stored import stored_session_ids
from hermes_state_tools.ingest.other_db import read_session, session_ids
from hermes_state_tools.ingest.planning.batches import Batch, batches
from hermes_state_tools.ingest.planning.prepared import Prepared, prepare
from hermes_state_tools.ingest.planning.units import ReadLog, Unit
from hermes_state_tools.ingest.stats import ImportStats, ImportTally
from hermes_state_tools.ingest.writing.writer import restore_parent_links
from hermes_state_tools.store.opening import map_open_error, open_read_connection, open_readonly, require_database_file


@contextlib.contextmanager
def _reading_other(file: str) -> Iterator[None]:
    """An error met reading OTHER names OTHER: a damaged page there was reported as damage of this
    database ('<db>: database disk image is malformed'), pointing at the wrong file to recover."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise map_open_error(Path(file), exc) from exc


def _unit(other: sqlite3.Connection, session_id: str, file: str, log: ReadLog) -> Unit | None:
    with _reading_other(file):
        session, problems = read_session(other, session_id, file)
    log.problems += problems
    if session is None:
        return None
    return Unit(session_id, [session], (), _start(session))


def _start(session: LegacySession) -> float:
    started = session.fields.get("started_at")
    return float(started) if isinstance(started, (int, float)) else 0.0


def _units(other: sqlite3.Connection, file: str, log: ReadLog) -> Iterator[Unit]:
    with _reading_other(file):
        ids = session_ids(other)
    for session_id in ids:
        log.files_read = 1
        unit = _unit(other, session_id, file, log)
        if unit is not None:
            yield unit


def _local_batches(db_path: Path, units: Iterator[Unit]) -> Generator[Batch, None, None]:
    conn = open_read_connection(db_path)  # leaves no -wal/-shm beside the database
    try:
        known = stored_session_ids(conn)
        for items in batches(p for unit in units if (p := prepare(conn, unit, known=known)) is not None):
            yield Batch(tuple(items))
    finally:
        conn.close()


def _replanner(other: sqlite3.Connection, file: str) -> Callable[[sqlite3.Connection, Unit], Prepared | None]:
    """A session that changed under its plan is read from OTHER again and planned anew."""
    def replan(conn: sqlite3.Connection, shell: Unit) -> Prepared | None:
        unit = _unit(other, shell.session_id, file, ReadLog())  # its problems were reported once
        return prepare(conn, unit) if unit is not None else None

    return replan


def _same_file(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError):
        return a.exists() and b.exists() and a.samefile(b)
    return False


def merge_database(db_path: Path, other_path: Path, *, dry_run: bool = False,
                   progress: run.Progress | None = None, create: bool = True) -> ImportStats:
    """Merge every session of the database at `other_path` into the store at `db_path` (created if
    missing, unless `create` is False: then a missing or empty file is NotAHermesDatabaseError, as the
    CLI's contract has it for every command but import-jsonl)."""
    if not create:
        require_database_file(db_path)
    if _same_file(db_path, other_path):
        raise SameDatabaseError(f"{other_path} is the database being merged into")
    stats, log = ImportTally(dry_run=dry_run), ReadLog()
    other = open_readonly(other_path, stable=True)
    file = str(other_path)
    try:
        proven = run.prepare_schema(db_path, stats)
        if progress:
            progress.start(1)
        if dry_run:
            run.note_upgrade(db_path, stats)
            run.plan_without_writing(db_path, stats, lambda _conn: _units(other, file, log))
        else:
            with run.open_target(db_path, stats, proven, "merge") as db:
                parked = run.write_all(db, _local_batches(db_path, _units(other, file, log)), stats, log,
                                        _replanner(other, file), progress)
                log.problems += db.handle.runner.run(lambda conn: restore_parent_links(conn, parked))
    finally:
        other.close()
    stats.problems = log.problems + stats.problems
    stats.files_read = 1
    return stats.report()

