"""Write batches: prepared sessions grouped into one write transaction's worth, and the batches an
import reads in this process (the reader process, reader/process.py, makes the same ones and stages
their rows).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from datetime import tzinfo
from pathlib import Path
from typing import NamedTuple

from hermes_state_tools.ingest.planning.prepared import Prepared, Shell, StagedRows, planned
from hermes_state_tools.ingest.planning.units import ReadLog, Unit, UnitReader, parent_links

# One write transaction's size: long enough to amortise a commit and an FTS segment, short enough
# that a concurrent Hermes writer waits a fraction of a second at most (big tool outputs count
# by their bytes, since indexing time follows the text, not the row count).
BATCH_MESSAGES = 4000
BATCH_SESSIONS = 400
BATCH_BYTES = 4 * 2**20
FIRST_BATCH_SHARE = 8


class StagedCreates(NamedTuple):
    """A batch of new sessions, each read from one plain transcript, whose sessions rows and messages
    were all staged (in batch order: the Nth session is rowid N of the staging file's sessions, its
    rows follow the rows of the one before). The writer copies them in SQL: no plan per session
    crosses the pipe, only what counting them and planning one again (should it have changed) needs."""

    shells: tuple[tuple[str, str, float, float | None], ...]  # (session id, its file, fallback_start, end_hint)
    counts: tuple[int, ...]  # each session's messages
    parked: frozenset[str]  # the sessions whose parent link waits in their extra data (writer.Written)
    extra: bool  # some session holds extra data

    @classmethod
    def of(cls, staged: tuple[Prepared, ...]) -> StagedCreates | None:
        """The block of a staged batch, when every session of it is such a create (None otherwise)."""
        if not all(item.staged_session == number and item.plain_create and isinstance(item.rows, StagedRows)
                   and not (item.problems or item.duplicates or item.unit.index_entry) and len(item.unit.files) == 1
                   for number, item in enumerate(staged, 1)) or len({item.session_id for item in staged}) < len(staged):
            return None  # (two copies of one session: the second's plan says what the first left)
        return cls(tuple((item.session_id, item.unit.files[0], item.unit.fallback_start, item.unit.end_hint)
                         for item in staged), tuple(item.message_count for item in staged),
                   frozenset(item.session_id for item in staged if "parent_session_id" in item.session_extra),
                   any(item.session_extra for item in staged))

    @property
    def session_ids(self) -> list[str]:
        return [session_id for session_id, *_ in self.shells]

    def unit(self, number: int) -> Shell:
        """The Nth session's unit without its copies (Prepared.unit), to read and plan again."""
        session_id, file, fallback, end = self.shells[number]
        return Unit(session_id, [], (file,), fallback, end)


class Batch(NamedTuple):
    """One write transaction's sessions, and the staging file holding their rows (None: in memory);
    or (`creates`, then with no items) a block of new sessions staged whole."""

    items: tuple[Prepared, ...]
    staging: Path | None = None
    creates: StagedCreates | None = None

    @property
    def messages(self) -> int:
        """The messages the batch's files held (stored or found stored already)."""
        held = sum(p.message_count + p.duplicates for p in self.items)
        return held + sum(self.creates.counts if self.creates else ())


def batches(prepared: Iterator[Prepared]) -> Iterator[tuple[Prepared, ...]]:
    """Group prepared sessions into write transactions of bounded size. The first is an eighth of
    the others, so the writer starts as soon as possible while the reader reads on."""
    batch: list[Prepared] = []
    rows = text = 0
    share = FIRST_BATCH_SHARE
    for item in prepared:
        batch.append(item)
        rows += item.message_count + item.duplicates
        text += sum(len(row[2] or "") for row in item.rows) if not isinstance(item.rows, StagedRows) else 0
        if rows * share >= BATCH_MESSAGES or text * share >= BATCH_BYTES or len(batch) * share >= BATCH_SESSIONS:
            yield tuple(batch)
            batch, rows, text, share = [], 0, 0, 1
    if batch:
        yield tuple(batch)


def prepared_batches(db_path: Path | None, files: Sequence[Path | str], tz: tzinfo | None, source: str | None,
                     log: ReadLog) -> Iterator[tuple[Prepared, ...]]:
    """Units read from `files`, planned against the database as it is (None: no database yet)."""
    conn = None
    if db_path is not None:
        # Loaded here: a reader process planning against no database (a first import) starts without them.
        from hermes_state_tools.ingest.copies.stored import stored_session_ids
        from hermes_state_tools.store.opening import open_read_connection

        conn = open_read_connection(db_path)  # the opener's read-only look: no -wal/-shm left beside it
    try:
        known = stored_session_ids(conn) if conn is not None else set()
        reader = UnitReader(files, tz, source, log, parent_links(conn), stored=known)
        yield from batches(planned(conn, reader.units(), log, known))
    finally:
        if conn is not None:
            conn.close()


def local_batches(db_path: Path | None, files: Sequence[Path | str], tz: tzinfo | None, source: str | None,
                  log: ReadLog) -> Generator[Batch, None, None]:
    """Batches read and planned in this process (small imports: a second one costs more to start)."""
    for items in prepared_batches(db_path, files, tz, source, log):
        yield Batch(items)
