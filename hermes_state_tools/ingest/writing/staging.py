"""Staging files: the reader process writes each batch's message rows to a small SQLite file of
its own, and the writer copies them into the store with one INSERT ... SELECT per run of sessions.

Binding every value from Python is the largest part of writing rows, and it can run on the
reader's core: the writer then only attaches the file (outside its transaction) and copies
pages' worth of rows in C. The files live in a private temporary folder (mode 0700) that the
importing process removes at the end; each file is deleted once its batch is committed.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.message_rows import MESSAGE_COLUMNS
from hermes_state_tools.core.schema import SESSION_FIELDS, SESSIONS_COLUMNS
from hermes_state_tools.errors import ImportReaderError
from hermes_state_tools.ingest.planning.prepared import StagedRows
from hermes_state_tools.ingest.writing.rows import insert_rows, session_values
from hermes_state_tools.tables import extras

if TYPE_CHECKING:
    from hermes_state_tools.ingest.planning.prepared import Prepared

SCHEMA_NAME = "hst_staged"  # what the writer attaches a staging file as
_COLUMNS = ", ".join(MESSAGE_COLUMNS)
_SESSION_FIELDS = ", ".join(SESSION_FIELDS)
_SESSION_COLUMNS = _SESSION_FIELDS + ", hst_extra"
# The columns with a default (a row without them takes it, a staged row would hold NULL); session_values
# gives a new session's message and tool call counts.
_DEFAULTED = frozenset(c.name for c in SESSIONS_COLUMNS if "DEFAULT" in c.decl) - {"message_count", "tool_call_count"}
# Said alike whether the import writes into an existing file (the batches committed before stay) or
# builds a new one aside (nothing of it is placed): a re-run skips whatever is stored.
RERUN = "re-run the import to finish (it skips what is already stored)"


def stage_batch(path: Path, batch: tuple[Prepared, ...]) -> tuple[Prepared, ...] | None:
    """Write the batch's rows to a new staging file; the same sessions pointing at their rows there.

    None, with nothing left behind, when the file cannot be written (e.g. a full temporary disk) or
    SQLite refuses a value: the rows then travel in memory, the writer fails such a session alone,
    and the plans as they came report their problems once.
    """
    staged: list[Prepared] = []
    try:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            conn.execute("PRAGMA page_size=65536")  # big tool outputs fit a page or two, not a chain of 4 KiB
            conn.execute("PRAGMA journal_mode=MEMORY")  # not OFF: a lone surrogate's retry rolls back a savepoint
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute(f"CREATE TABLE rows ({_COLUMNS})")
            conn.execute(f"CREATE TABLE sessions ({_SESSION_COLUMNS})")
            conn.execute("BEGIN")
            first = 1  # rowids of a new table count up from 1 in insert order
            # Each session's columns that hold a value, by column set (a NULL binds slowest, and most
            # columns of a legacy session are NULL); rowids given, so they follow the batch's order.
            sessions: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
            for item in batch:
                assert not isinstance(item.rows, StagedRows)
                number = None
                if (row := _staged_session(item)) is not None:
                    number = len(staged) + 1
                    sessions.setdefault(row[0], []).append((number, *row[1]))
                staged.append(item.staged(StagedRows(first, len(item.rows)), number))
                first += len(item.rows)
            for names, values in sessions.items():
                conn.executemany(f"INSERT INTO sessions (rowid, {', '.join(names)}) VALUES "
                                 f"({', '.join('?' * (len(names) + 1))})", values)
            # One statement per run of rows of one width, not one per session: a batch of short
            # sessions would otherwise spend most of its time starting statements.
            insert_rows(conn, "rows", [row for item in batch for row in item.rows])  # type: ignore[union-attr]
            conn.execute("COMMIT")
        finally:
            conn.close()
    except (sqlite3.Error, OSError, OverflowError):  # OverflowError: an integer no SQLite column holds
        path.unlink(missing_ok=True)
        return None
    return tuple(staged)


def _staged_session(item: Prepared) -> tuple[tuple[str, ...], tuple[Any, ...]] | None:
    """A plain create's sessions row as stored, its extra data as JSON text (hst_extra): the names and
    values of the columns that hold a value (the others are NULL in the staging file too)."""
    if not item.plain_create or not item.row.keys() >= _DEFAULTED:
        return None  # a row without a column that has a default takes it: written from memory instead
    values = session_values(item, {name: value for name, value in item.row.items() if value is not None})
    if item.session_extra:
        values["hst_extra"] = jsonutil.dumps(item.session_extra)
    return tuple(values), tuple(values.values())


@contextlib.contextmanager
def attached(conn: sqlite3.Connection, path: Path | None) -> Iterator[None]:
    """Attach a batch's staging file for the batch's write transaction, then detach and delete it."""
    if path is None:
        yield
        return
    if not path.is_file():  # ATTACH would create an empty database in its place
        raise ImportReaderError(f"the import's staging file {path} is gone; {RERUN}")
    if any(name == SCHEMA_NAME for _, name, _ in conn.execute("PRAGMA database_list")):
        conn.execute(f"DETACH DATABASE {SCHEMA_NAME}")  # an interrupted batch's, its statement ended since
    conn.execute(f"ATTACH DATABASE ? AS {SCHEMA_NAME}", (str(path),))
    try:
        yield
    except BaseException:
        # An interrupt (Ctrl-C) can land between a statement and the rollback that follows it, or
        # leave a statement on the staging file unfinished: the detach must not replace it.
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.execute(f"DETACH DATABASE {SCHEMA_NAME}")
        raise
    else:
        conn.execute(f"DETACH DATABASE {SCHEMA_NAME}")
    finally:
        path.unlink(missing_ok=True)


def insert_staged(conn: sqlite3.Connection, rows: StagedRows) -> None:
    """Copy staged rows (one session's, or a run of consecutive sessions') into messages, in their
    order (ids follow it)."""
    copied = conn.execute(
        f"INSERT INTO messages ({_COLUMNS}) SELECT {_COLUMNS} FROM {SCHEMA_NAME}.rows "
        "WHERE rowid BETWEEN ? AND ? ORDER BY rowid",
        (rows.first, rows.first + rows.count - 1),
    ).rowcount
    if copied != rows.count:  # a damaged staging file: the batch rolls back whole
        raise ImportReaderError(f"the import's staging file held {copied} of {rows.count} staged messages; "
                                f"{RERUN}")


def insert_staged_sessions(conn: sqlite3.Connection, rowids: list[int], with_extra: bool) -> None:
    """Copy staged plain creates' sessions rows (and their extra data) into the store."""
    if not rowids:
        return
    chosen = f"FROM {SCHEMA_NAME}.sessions WHERE rowid IN (SELECT value FROM json_each(?))"
    wanted = jsonutil.dumps(rowids)
    copied = conn.execute(f"INSERT INTO sessions ({_SESSION_FIELDS}) SELECT {_SESSION_FIELDS} {chosen} ORDER BY rowid",
                          (wanted,)).rowcount
    if copied != len(rowids):  # a damaged staging file: the batch rolls back whole
        raise ImportReaderError(f"the import's staging file held {copied} of {len(rowids)} staged sessions; {RERUN}")
    if with_extra:
        extras.ensure_tables(conn)
        conn.execute(f"INSERT OR REPLACE INTO {extras.SESSION_TABLE} (session_id, data) "
                     f"SELECT id, hst_extra {chosen} AND hst_extra IS NOT NULL", (wanted,))
