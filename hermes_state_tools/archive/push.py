"""`archive push`: stream this host's state.db (only read) into the archive, incrementally and idempotently.

Each batch is one transaction. In order:

1. messages at or below the host's high-water mark (the highest local message id archived) of
   sessions whose row changed since the last push (a rewind, a compaction), those whose hash differs
   from the archived one: COPYed into a temporary staging table and merged in one statement;
2. messages above the mark, in id order: COPYed straight into the table with the mark moved in the
   same transaction (no archive holds rows above its mark; one that does gets the merge);
3. session rows whose hash differs from the archived one (new, ended, retitled, counters, flags):
   staged and merged; a slice of which the archive holds none (a first push) COPYed straight in.

A session's row is written last, so a push killed at any moment leaves its hash old and the next
push does steps 1-3 again: it leaves what one clean push leaves. Two pushes of one host wait for each
other (an advisory lock). Local deletions never delete from the archive.
"""

from __future__ import annotations

import itertools
import socket
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_state_tools.archive import rows
from hermes_state_tools.archive.connect import connected, driver
from hermes_state_tools.archive.schema import MESSAGE_COLUMNS, NAMESPACE, SESSION_COLUMNS, migrate
from hermes_state_tools.core.reports import Report
from hermes_state_tools.errors import ArchiveHostMismatchError
from hermes_state_tools.store.opening import reading
from hermes_state_tools.tables import extras

BATCH_ROWS = 20_000
BATCH_BYTES = 32 << 20  # a batch of long tool outputs ends early: memory stays flat
_SESSIONS_PER_LOOK = 500  # a slice's messages are looked up with its ids as SQLite parameters
_SESSIONS_PER_WRITE = 5000  # session rows: fewer, larger transactions

SESSION_COPY = ("host", *(c.name for c in SESSION_COLUMNS), "extra", "hst_extra", "row_hash")
MESSAGE_COPY = ("host", "local_id", *(c.name for c in MESSAGE_COLUMNS), "extra", "hst_extra", "row_hash", "cjk")


def default_host() -> str:
    """This machine's name: the host a push is filed under unless --host says otherwise."""
    return socket.gethostname() or "localhost"


@dataclass(frozen=True)
class PushReport(Report):
    """What one push wrote into the archive."""

    host: str
    archive: str
    sessions_pushed: int  # new or changed session rows written
    messages_pushed: int  # new or changed message rows written
    messages_skipped_present: int  # read and already in the archive, identical
    message_mark: int  # the highest local message id archived
    batches: int


@dataclass
class _Counts:
    sessions: int = 0
    messages: int = 0
    present: int = 0
    batches: int = 0


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _merge_sql(table: str, names: Sequence[str], key: str) -> str:
    updates = ", ".join(f'"{n}" = EXCLUDED."{n}"' for n in names if n not in ("host", key))
    return (f"WITH merged AS (INSERT INTO {NAMESPACE}.{table} ({_quoted(names)}) SELECT {_quoted(names)} "
            f"FROM pg_temp.stage_{table} ON CONFLICT (host, {key}) DO UPDATE SET {updates} "
            f"WHERE {table}.row_hash IS DISTINCT FROM EXCLUDED.row_hash RETURNING 1) SELECT count(*) FROM merged")


_MERGE = {"sessions": _merge_sql("sessions", SESSION_COPY, "id"),
          "messages": _merge_sql("messages", MESSAGE_COPY, "local_id")}
_COPY = {"sessions": f"COPY pg_temp.stage_sessions ({_quoted(SESSION_COPY)}) FROM STDIN",
         "messages": f"COPY pg_temp.stage_messages ({_quoted(MESSAGE_COPY)}) FROM STDIN"}
_APPEND = {"sessions": f"COPY {NAMESPACE}.sessions ({_quoted(SESSION_COPY)}) FROM STDIN",
           "messages": f"COPY {NAMESPACE}.messages ({_quoted(MESSAGE_COPY)}) FROM STDIN"}
_MOVE_MARK = f"UPDATE {NAMESPACE}.hosts SET message_mark = greatest(message_mark, %s) WHERE host = %s"


def _prepare_staging(pg: Any) -> None:
    with pg.cursor() as cur:
        for table in ("sessions", "messages"):
            cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS stage_{table} (LIKE {NAMESPACE}.{table}) "
                        "ON COMMIT DELETE ROWS")


def write_batch(pg: Any, table: str, records: Iterable[tuple[Any, ...]], host: str | None = None,
                mark: int | None = None) -> tuple[int, int]:
    """COPY `records` into staging and merge them, in one transaction with the host's mark (when
    given); returns (rows read, rows written)."""
    with pg.transaction(), pg.cursor() as cur:
        read = 0
        with cur.copy(_COPY[table]) as copy:
            for record in records:
                copy.write_row(record)
                read += 1
        if not read:
            return 0, 0
        if table == "messages":
            _require_same_store(cur)
        cur.execute(_MERGE[table])
        written = int(cur.fetchone()[0])
        if mark is not None:
            cur.execute(_MOVE_MARK, (mark, host))
    return read, written


# A message id names one message for good in a Hermes file (AUTOINCREMENT: never reused), and a
# message's session, time and role never change: a staged row whose id the archive holds with others
# comes from another file filed under the same host name, and merging it would overwrite that message.
_OTHER_STORE = (f"SELECT s.host, s.local_id FROM pg_temp.stage_messages s JOIN {NAMESPACE}.messages m "
                "ON m.host = s.host AND m.local_id = s.local_id WHERE (m.session_id, m.timestamp, m.role) "
                "IS DISTINCT FROM (s.session_id, s.timestamp, s.role) LIMIT 1")


def _require_same_store(cur: Any) -> None:
    """Refuse (the batch rolls back) a batch whose message ids the archive holds for other messages."""
    cur.execute(_OTHER_STORE)
    if (clash := cur.fetchone()) is not None:
        host, local_id = clash
        raise ArchiveHostMismatchError(
            f"the archive's host {host!r} holds another message under message id {local_id}: this file is not "
            f"the store archived as {host!r} (another machine of that name, or a store rebuilt since); nothing "
            "was written; push it under a name of its own with --host")


def append_batch(pg: Any, records: Iterator[tuple[Any, ...]], host: str, mark: int,
                 rows_per_batch: int = BATCH_ROWS) -> tuple[int, int, int]:
    """The next batch of `records` (messages above the host's mark): no archive holds them (the mark
    moves with its rows in one transaction, and one push of a host runs at a time), so they are
    COPYed straight into the table, each row sent as soon as it is encoded: the server indexes the
    rows already sent while this thread reads and encodes the next ones. An archive that holds some
    anyway (edited by hand) gets the staging merge. Returns (rows read, rows written, the new mark)."""
    batch: list[tuple[Any, ...]] = []
    try:
        with pg.transaction(), pg.cursor() as cur:
            with cur.copy(_APPEND["messages"]) as copy:
                for record in _take(records, _CONTENT_AT, rows_per_batch):
                    batch.append(record)
                    copy.write_row(record)
            mark = max(mark, int(batch[-1][1])) if batch else mark
            cur.execute(_MOVE_MARK, (mark, host))
    except driver().errors.UniqueViolation:
        mark = max(mark, int(batch[-1][1]))
        return (*write_batch(pg, "messages", batch, host, mark), mark)
    return len(batch), len(batch), mark


def append_sessions(pg: Any, records: list[tuple[Any, ...]]) -> tuple[int, int]:
    """Session rows the archive lacks (looked up in this push, which holds the host's lock): COPYed
    straight into the table; one it holds anyway gets the staging merge. Returns (read, written)."""
    try:
        with pg.transaction(), pg.cursor() as cur, cur.copy(_APPEND["sessions"]) as copy:
            for record in records:
                copy.write_row(record)
    except driver().errors.UniqueViolation:
        return write_batch(pg, "sessions", records)
    return len(records), len(records)


class LocalFile:
    """The local file's read connection and its layout: its own columns, its hst_ extra tables."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.session_names = rows.read_names(conn, "sessions")
        self.message_names = rows.read_names(conn, "messages")
        self.sessions = rows.session_shape(self.session_names)
        self.messages = rows.message_shape(self.message_names)
        self.content_at = self.message_names.index("content") if "content" in self.message_names else None
        self.session_extra = rows.has_table(conn, extras.SESSION_TABLE)
        self.message_extra = rows.has_table(conn, extras.MESSAGE_TABLE)

    def session_rows(self, where: str = "", params: Sequence[Any] = ()) -> Iterator[tuple[Any, ...]]:
        """(row..., hst extra text) of every session (of `where`), in id order."""
        join = (f" LEFT JOIN main.{extras.SESSION_TABLE} x ON x.session_id = s.id" if self.session_extra else "")
        data = "x.data" if self.session_extra else "NULL"
        sql = f"SELECT s.*, {data} FROM main.sessions s{join}{where} ORDER BY s.id"
        yield from self._tuples(sql, params)

    def message_rows(self, where: str, params: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        """(row..., hst extra text) of the messages of `where`, in id order; `id` first (checked)."""
        join = (f" LEFT JOIN main.{extras.MESSAGE_TABLE} x ON x.message_id = m.id" if self.message_extra else "")
        data = "x.data" if self.message_extra else "NULL"
        yield from self._tuples(f"SELECT m.id, m.*, {data} FROM main.messages m{join} WHERE {where} ORDER BY m.id",
                                params)

    def _tuples(self, sql: str, params: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        cursor = self.conn.cursor()
        cursor.row_factory = None  # plain tuples: a million sqlite3.Row objects cost more than the push's encoding
        yield from cursor.execute(sql, params)

    def session_record(self, host: str, row: tuple[Any, ...]) -> tuple[Any, ...]:
        return rows.session_record(host, self.sessions, row[:-1], row[-1])

    def message_record(self, host: str, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """An archive record of a message_rows row: (id, the file's columns..., hst extra text)."""
        return rows.message_record(host, self.messages, row[0], row[1:-1], row[-1], self.content_at)


def _session_chunks(local: LocalFile, host: str, pg: Any, size: int = _SESSIONS_PER_LOOK,
                    ) -> Iterator[tuple[list[tuple[Any, ...]], dict[str, bytes]]]:
    """The local sessions' archive records in slices, with the hashes the archive holds of each slice
    (a slice at a time: memory stays flat however many sessions a host has)."""
    records = (local.session_record(host, row) for row in local.session_rows())
    while chunk := list(itertools.islice(records, size)):
        with pg.cursor() as cur:
            cur.execute(f"SELECT id, row_hash FROM {NAMESPACE}.sessions WHERE host = %s AND id = ANY(%s)",
                        (host, [record[1] for record in chunk]))
            yield chunk, {row[0]: bytes(row[1]) for row in cur}


def _take(records: Iterator[tuple[Any, ...]], size_at: int, rows_per_batch: int) -> Iterator[tuple[Any, ...]]:
    """The next records of `records` that make one batch: at most `rows_per_batch` rows and about
    BATCH_BYTES of text at `size_at` (memory stays flat); the rest stay in `records`."""
    size = 0
    for count, record in enumerate(records, 1):
        yield record
        value = record[size_at]
        size += len(value) if isinstance(value, str) else 0
        if count >= rows_per_batch or size >= BATCH_BYTES:
            return


def _batches(records: Iterator[tuple[Any, ...]], size_at: int, rows_per_batch: int = BATCH_ROWS,
             ) -> Iterator[list[tuple[Any, ...]]]:
    """Records in lists of one batch each (_take)."""
    while batch := list(_take(records, size_at, rows_per_batch)):
        yield batch


_CONTENT_AT = MESSAGE_COPY.index("content")
_HASH_AT = MESSAGE_COPY.index("row_hash")


def _resend_changed(pg: Any, local: LocalFile, host: str, mark: int, counts: _Counts) -> None:
    """Step 1: messages at or below the mark of changed sessions, those the archive holds otherwise."""
    if mark <= 0:
        return  # nothing of this host was archived yet
    for chunk, archived in _session_chunks(local, host, pg):
        ids = [record[1] for record in chunk if archived.get(record[1]) != record[-1]]
        if not ids:
            continue
        with pg.cursor() as cur:
            cur.execute(f"SELECT local_id, row_hash FROM {NAMESPACE}.messages WHERE host = %s AND "
                        "session_id = ANY(%s) AND local_id <= %s", (host, ids, mark))
            held = {row[0]: bytes(row[1]) for row in cur}
        marks = ",".join("?" * len(ids))
        records = (local.message_record(host, row)
                   for row in local.message_rows(f"m.id <= ? AND m.session_id IN ({marks})", (mark, *ids)))
        for batch in _batches(_not_held(records, held, counts), _CONTENT_AT):
            _read, written = write_batch(pg, "messages", batch)
            counts.messages += written
            counts.batches += 1


def _not_held(records: Iterator[tuple[Any, ...]], held: dict[int, bytes], counts: _Counts) -> Iterator[tuple[Any, ...]]:
    """The message records the archive does not hold identically; the others counted as present."""
    for record in records:
        if held.get(record[1]) == record[_HASH_AT]:
            counts.present += 1
        else:
            yield record


def _push_new_messages(pg: Any, local: LocalFile, host: str, mark: int, counts: _Counts,
                       on_batch: Callable[[int], None] | None, rows_per_batch: int) -> int:
    """Step 2: messages above the mark, one batch per transaction, the mark moving with each. One
    thread reads, encodes and sends: while it encodes, the server works on the rows already sent
    (a second thread sending would wait for the GIL after each block it sends, and the server idle)."""
    records = (local.message_record(host, row) for row in local.message_rows("m.id > ?", (mark,)))
    for first in records:  # each batch takes the records after `first` it holds from the same iterator
        read, written, mark = append_batch(pg, itertools.chain((first,), records), host, mark, rows_per_batch)
        _count_appended((read, written), counts, on_batch)
    return mark


def _count_appended(result: tuple[int, int], counts: _Counts, on_batch: Callable[[int], None] | None) -> None:
    read, written = result
    counts.messages += written
    counts.present += read - written
    counts.batches += 1
    if on_batch is not None:
        on_batch(read)


def _push_sessions(pg: Any, local: LocalFile, host: str, counts: _Counts) -> None:
    """Step 3: the session rows the archive lacks or holds otherwise (a slice none of whose sessions
    the archive holds, as on a first push, is COPYed straight in)."""
    for chunk, archived in _session_chunks(local, host, pg, _SESSIONS_PER_WRITE):
        differing = [record for record in chunk if archived.get(record[1]) != record[-1]]
        if differing:
            _read, written = write_batch(pg, "sessions", differing) if archived else append_sessions(pg, differing)
            counts.sessions += written
            counts.batches += 1


def _register_host(pg: Any, host: str, local: LocalFile) -> int:
    """The host's row (created on its first push), its layout recorded; returns its mark. Holds the
    host's advisory lock for the rest of the session: a second push of the host waits."""
    with pg.cursor() as cur:
        cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"hermes-archive-push:{host}",))
        with pg.transaction():
            cur.execute(f"INSERT INTO {NAMESPACE}.hosts (host) VALUES (%s) ON CONFLICT (host) DO NOTHING", (host,))
            cur.execute(f"UPDATE {NAMESPACE}.hosts SET session_columns = %s, message_columns = %s WHERE host = %s "
                        "RETURNING message_mark", (list(local.session_names), list(local.message_names), host))
            return int(cur.fetchone()[0])


def push_file(path: Path, url: str | None, host: str | None = None,
              on_batch: Callable[[int], None] | None = None, rows_per_batch: int = BATCH_ROWS) -> PushReport:
    """Push the database at `path` (read in one read transaction, never the write lock) into the archive.
    `on_batch(messages)` after each batch of new messages commits."""
    host = host or default_host()
    with reading(path, allow_newer=True, stable=True) as conn, connected(url) as (pg, server):
        conn.execute("BEGIN")  # one state of the file for the whole push while Hermes keeps writing
        local = LocalFile(conn)
        migrate(pg, server)
        _prepare_staging(pg)
        mark = _register_host(pg, host, local)
        counts = _Counts()
        _resend_changed(pg, local, host, mark, counts)
        mark = _push_new_messages(pg, local, host, mark, counts, on_batch, rows_per_batch)
        _push_sessions(pg, local, host, counts)
        with pg.transaction(), pg.cursor() as cur:
            cur.execute(f"UPDATE {NAMESPACE}.hosts SET last_push = now() WHERE host = %s", (host,))
    return PushReport(host, server, counts.sessions, counts.messages, counts.present, mark, counts.batches)
