"""Write import plans in short transactions, indexing each batch's messages in one FTS pass.

Per-row FTS triggers cost about 2.5x a bulk load, so inside each write transaction the
insert trigger is dropped, the batch's rows go in, the FTS index gets them in one
INSERT ... SELECT, and the trigger is recreated before COMMIT. Other connections never
see the trigger missing (the change is part of the transaction), and a kill at any point
rolls back rows, index and trigger together.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.connection import is_corrupt, is_io_error, is_lock_error
from hermes_state_tools.core.layouts import FileLayout, SearchIndex, normalized, read_layout
from hermes_state_tools.core.records import Problem
from hermes_state_tools.core.surrogates import without_surrogates
from hermes_state_tools.core.words import plural
from hermes_state_tools.ingest.copies.merge import MASKED_KEY
from hermes_state_tools.ingest.copies.session_row import IMPORTED_END_REASON
from hermes_state_tools.ingest.copies.stored import fingerprint
from hermes_state_tools.ingest.planning.prepared import StagedRows
from hermes_state_tools.ingest.writing.rows import insert_rows, session_values
from hermes_state_tools.ingest.writing.staging import insert_staged, insert_staged_sessions
from hermes_state_tools.tables import counters, extras, foreign_rows, later_columns, lineage, titles

if TYPE_CHECKING:
    from hermes_state_tools.ingest.planning.batches import StagedCreates
    from hermes_state_tools.ingest.planning.prepared import Prepared, Shell



class _StagedRun:
    """Staged rows of consecutive sessions, copied in one INSERT ... SELECT instead of one per session
    (a statement per session is most of the cost of a batch of short sessions). Copied before
    anything else adds messages or reads a session they belong to: ids and plans see the rows in
    batch order."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn, self.rows, self.sessions = conn, StagedRows(1, 0), set[str]()

    def add(self, session_id: str, rows: StagedRows) -> None:
        if self.rows.count and rows.first != self.rows.first + self.rows.count:
            self.copy()  # not contiguous: a session between was planned again or failed
        self.rows = StagedRows(self.rows.first, self.rows.count + rows.count) if self.rows.count else rows
        self.sessions.add(session_id)

    def copy(self) -> None:
        if self.rows.count:
            insert_staged(self.conn, self.rows)
        self.rows, self.sessions = StagedRows(1, 0), set()


@dataclass(frozen=True)
class Written:
    """What writing one prepared session did (or, for a dry run, would do)."""

    session_id: str
    created: bool
    updated: bool
    messages: int
    duplicates: int
    problems: tuple[Problem, ...]
    parent_parked: bool = False  # its parent link waits in the extra data for the final pass
    stored: bool = True  # False: SQLite refused a value and the session was rolled back alone
    enriched: int = 0  # stored messages that gained NULL columns or extra data from the files

    @classmethod
    def planned(cls, item: Prepared, problems: tuple[Problem, ...] = (), parked: bool = False) -> Written:
        return cls(item.session_id, item.create, (not item.create) and item.changes, item.message_count,
                   item.duplicates, item.problems + problems, parked, enriched=len(item.enrich))


@dataclass(frozen=True)
class BatchResult:
    """A write transaction's outcome: what each session wrote, and the sessions that changed since they
    were planned (another process wrote to them, or an earlier copy in this batch did), as units to
    read and plan again outside the transaction and write in a later batch."""

    written: tuple[Written, ...]
    stale: tuple[Shell, ...]


def _unique_title(conn: sqlite3.Connection, session_id: str, title: str, problems: list[Problem]) -> str:
    holder = conn.execute("SELECT id FROM sessions WHERE title = ? AND id != ?", (title, session_id)).fetchone()
    if holder is None:
        return title
    renamed = titles.next_title_in_lineage_unchecked(conn, title)
    problems.append(Problem(f"session {session_id}", None, "title_renamed",
                            f"title {title!r} is held by session {holder[0]}; stored as {renamed!r}"))
    return renamed


def _write_session_row(conn: sqlite3.Connection, plan: Prepared, problems: list[Problem]) -> dict[str, Any]:
    """Insert or fill the sessions row; returns the session's extra data to merge."""
    row, extra = dict(plan.row), plan.session_extra
    if row.get("title"):
        row["title"] = _unique_title(conn, plan.session_id, row["title"], problems)
    parent = row.get("parent_session_id")
    if parent is not None and (not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchone()
                               or lineage.closes_cycle(conn, plan.session_id, parent)):
        # The parent may come later in this import, or the link would close a cycle: it is kept in extra
        # data, and the final pass restores it (or a re-run, which fills NULL fields) or says why not.
        row["parent_session_id"], extra = None, {"parent_session_id": parent, **extra}
    row = session_values(plan, row)
    if plan.create:
        names = ", ".join(row)
        conn.execute(f"INSERT INTO sessions ({names}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    elif row:
        sets = ", ".join(f"{name} = COALESCE(NULLIF({name}, ''), ?)" for name in row)  # '' is no value
        conn.execute(f"UPDATE sessions SET {sets} WHERE id = ?", (*row.values(), plan.session_id))
    return extra


def _next_message_id(conn: sqlite3.Connection) -> int:
    """The id the next message insert gets: AUTOINCREMENT goes on after the highest id ever used,
    which is above MAX(id) once the newest messages were deleted (a pruned or deleted session)."""
    highest: int = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
        used = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
        highest = max(highest, used[0] if used else 0)
    return highest + 1


def retimed_notice(item: Prepared) -> tuple[Problem, ...]:
    """The notice that stored rows are moved forward (a dry run says it too)."""
    if not item.retimed:
        return ()
    return (Problem(
        f"session {item.session_id}", None, "retimed",
        f"{plural(len(item.retimed), 'stored message')} moved forward by microseconds so the imported messages "
        f"sit in their place (ids {', '.join(str(mid) for mid, _ in item.retimed[:5])}"
        + (", ...)" if len(item.retimed) > 5 else ")")),)


def _retime(conn: sqlite3.Connection, item: Prepared, problems: list[Problem]) -> None:
    """Move stored rows forward where inserted messages reached their time (reported, never silent)."""
    if not item.retimed:
        return
    conn.executemany("UPDATE messages SET timestamp = ? WHERE id = ?", [(t, mid) for mid, t in item.retimed])
    problems += retimed_notice(item)


def _enrich(conn: sqlite3.Connection, item: Prepared) -> None:
    """Fill stored messages' NULL (or '') columns and add the extra keys they lack; never overwrite,
    but a text with secrets masked (a redacted snapshot's) by the same text unmasked."""
    for enrichment in item.enrich:
        if enrichment.columns:
            values = {k: _json_text(v) for k, v in enrichment.columns.items()}
            sets = ", ".join(f"{name} = COALESCE(NULLIF({name}, ''), ?)" for name in values)
            conn.execute(f"UPDATE messages SET {sets} WHERE id = ? AND session_id = ?",
                         (*(without_surrogates(v) for v in values.values()), enrichment.message_id, item.session_id))
        extra = enrichment.extra
        if enrichment.content is not None:  # a masked text, as its unmasked copy has it (the FTS trigger follows)
            replaced = conn.execute(
                "UPDATE messages SET content = ? WHERE id = ? AND session_id = ? AND content = ?",
                (without_surrogates(enrichment.content), enrichment.message_id, item.session_id,
                 enrichment.masked_content)).rowcount
            if not replaced:  # changed since it was read: its text stays, and no masked text was replaced
                extra = {key: value for key, value in extra.items() if key != MASKED_KEY}
        extras.add_message_extra(conn, enrichment.message_id, item.session_id, extra)


def _json_text(value: Any) -> Any:
    return jsonutil.dumps(value) if isinstance(value, (dict, list)) else value


def _write_session(conn: sqlite3.Connection, item: Prepared, next_id: int) -> Written:
    """Write one session inside a savepoint: a value SQLite refuses fails that session alone (reported).
    Staged rows are left for the caller's run of staged rows; rows in memory go in here."""
    problems: list[Problem] = []
    conn.execute("SAVEPOINT import_session")
    try:
        extra = _write_session_row(conn, item, problems)
        _retime(conn, item, problems)
        _enrich(conn, item)
        if item.foreign_ids:  # the February 2026 gateway's session_meta rows: into the extra data
            foreign_rows.move_foreign_rows(conn, [item.session_id])
        extras.merge_session_extra(conn, item.session_id, extra)
        # Ids are consecutive: this transaction holds the write lock and AUTOINCREMENT never reuses one.
        if not isinstance(item.rows, StagedRows):
            problems += insert_rows(conn, "messages", item.rows)
        extras.put_message_extras(conn, [(next_id + n, item.session_id, extra) for n, extra in item.message_extras])
    except (sqlite3.Error, OverflowError) as exc:  # OverflowError: an integer no SQLite column holds
        # A lock, a full disk or damage is the whole write's failure, not this session's: SQLite may have
        # rolled the transaction back already (SQLITE_FULL does), and the savepoint with it.
        if is_lock_error(exc) or is_io_error(exc) or is_corrupt(exc) or not conn.in_transaction:
            raise
        conn.execute("ROLLBACK TO import_session")
        conn.execute("RELEASE import_session")
        problem = Problem(f"session {item.session_id}", None, "not_stored",
                          f"the session could not be written ({exc}); nothing of it was stored")
        return Written(item.session_id, False, False, 0, item.duplicates, (*item.problems, problem), stored=False)
    conn.execute("RELEASE import_session")
    return Written.planned(item, tuple(problems), "parent_session_id" in extra)


class _BatchWriter:
    """One batch's writes inside the caller's transaction, in batch order."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.first_id = self.next_id = _next_message_id(conn)
        self.written: list[Written] = []
        self.stale: list[Shell] = []
        self.recount: list[str] = []  # created sessions counted from their rows
        self.changed: list[str] = []  # stored sessions written
        self.extended: list[str] = []  # stored sessions that gained messages
        self.staged = _StagedRun(conn)
        self.creates: dict[str, Prepared] = {}  # plain creates not written yet, in batch order

    def add(self, item: Prepared) -> None:
        if item.session_id in self.creates:
            self.flush_creates()  # an earlier copy of this session is about to be written: it counts
        if item.session_id in self.staged.sessions:
            self.staged.copy()  # an earlier copy of this session waits in the run: its rows count
        if item.plain_create:
            if self.creates and _staged(next(iter(self.creates.values()))) != _staged(item):
                self.flush_creates()  # a run's rows are all staged or all in memory: ids follow batch order
            self.creates[item.session_id] = item
            return
        self.flush_creates()
        if fingerprint(self.conn, item.session_id) != item.fingerprint:
            self.stale.append(item.unit)
            return
        if not (item.changes or item.session_extra):
            self.written.append(Written.planned(item))
            return
        self._one(item)

    def _one(self, item: Prepared) -> None:
        """Write one session on its own (in a savepoint: a value SQLite refuses fails it alone)."""
        if not isinstance(item.rows, StagedRows):
            self.staged.copy()  # rows in memory take the next ids: every staged row before them goes first
        outcome = _write_session(self.conn, item, self.next_id)
        self.written.append(outcome)
        if outcome.stored:
            self._stored(item)

    def _stored(self, item: Prepared) -> None:
        self.next_id += item.message_count
        if isinstance(item.rows, StagedRows):
            self.staged.add(item.session_id, item.rows)
        # Created sessions carry counters from their plan, unless it held tool calls as text (only
        # SQLite's own JSON functions count those exactly as the recount does).
        if not item.create:
            self.changed.append(item.session_id)
        elif item.tool_calls is None:
            self.recount.append(item.session_id)
        if not item.create and item.message_count:
            self.extended.append(item.session_id)

    def flush_creates(self) -> None:
        """Write the pending plain creates: one query finds those another process created meanwhile
        (stale, as their fingerprint check would), one statement inserts the rest. A value SQLite
        refuses sends the run down the per-session path, which fails that session alone."""
        if not self.creates:
            return
        items, self.creates = list(self.creates.values()), {}
        taken = self._taken([item.session_id for item in items])
        self.stale += [item.unit for item in items if item.session_id in taken]
        fresh = [item for item in items if item.session_id not in taken]
        if not fresh:
            return
        if not _staged(fresh[0]):  # rows in memory take the next ids: staged rows before them go first
            self.staged.copy()
        self.conn.execute("SAVEPOINT import_creates")
        try:
            staged = [item for item in fresh if item.staged_session is not None]
            insert_staged_sessions(self.conn, [item.staged_session for item in staged if item.staged_session],
                                   any(item.session_extra for item in staged))
            _insert_sessions(self.conn, [item for item in fresh if item.staged_session is None])
            if not _staged(fresh[0]):
                insert_rows(self.conn, "messages", [row for item in fresh for row in item.rows])  # type: ignore[union-attr]
        except (sqlite3.Error, OverflowError) as exc:
            if is_lock_error(exc):
                raise
            self.conn.execute("ROLLBACK TO import_creates")
            self.conn.execute("RELEASE import_creates")
            for item in fresh:
                self._one(item)
            return
        self.conn.execute("RELEASE import_creates")
        for item in fresh:
            # A parent link kept aside in the extra data (its parent was missing) waits for the final
            # pass, as _write_session reports it.
            self.written.append(Written.planned(item, parked="parent_session_id" in item.session_extra))
            self._stored(item)

    def _taken(self, session_ids: list[str]) -> set[str]:
        """Those of these new sessions another process created since they were planned."""
        return {row[0] for row in self.conn.execute(
            "SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?))", (jsonutil.dumps(session_ids),))}

    def add_block(self, block: StagedCreates) -> None:
        """Write a block of staged new sessions in SQL alone: their sessions rows (and extra data) in one
        statement, their messages in the run of staged rows. One taken meanwhile is planned again; when
        SQLite refuses the block, every session of it is, and then goes the per-session way."""
        self.flush_creates()
        ids = block.session_ids
        taken = self._taken(ids)
        fresh, first = [], 1
        for number, (session_id, count) in enumerate(zip(ids, block.counts, strict=True)):
            if session_id in taken:
                self.stale.append(block.unit(number))
            else:
                fresh.append((number, session_id, StagedRows(first, count)))
            first += count
        self.conn.execute("SAVEPOINT import_block")
        try:
            insert_staged_sessions(self.conn, [number + 1 for number, _, _ in fresh], block.extra)
        except (sqlite3.Error, OverflowError) as exc:
            if is_lock_error(exc):
                raise
            self.conn.execute("ROLLBACK TO import_block")
            self.conn.execute("RELEASE import_block")
            self.stale += [block.unit(number) for number, _, _ in fresh]
            return
        self.conn.execute("RELEASE import_block")
        for _, session_id, rows in fresh:
            self.written.append(Written(session_id, True, False, rows.count, 0, (), session_id in block.parked))
            self.next_id += rows.count
            self.staged.add(session_id, rows)

    def finish(self) -> BatchResult:
        self.flush_creates()
        self.staged.copy()
        return BatchResult(tuple(self.written), tuple(self.stale))


def _staged(item: Prepared) -> bool:
    return isinstance(item.rows, StagedRows)


def _insert_sessions(conn: sqlite3.Connection, items: list[Prepared]) -> None:
    """Insert new sessions' rows that travelled in memory (runs of one column set) and their extra data."""
    rows = [session_values(item, dict(item.row)) for item in items]
    start = 0
    for end in range(1, len(rows) + 1):
        if end == len(rows) or rows[end].keys() != rows[start].keys():  # the same names, in any order
            names = list(rows[start])
            conn.executemany(f"INSERT INTO sessions ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                             [[row[name] for name in names] for row in rows[start:end]])
            start = end
    extras.put_session_extras(conn, [(item.session_id, item.session_extra) for item in items if item.session_extra])


def write_batch(conn: sqlite3.Connection, batch: tuple[Prepared, ...],
                block: StagedCreates | None = None) -> BatchResult:
    """Write prepared sessions (and a block of staged new ones) inside the caller's transaction; one
    FTS pass indexes all their rows.

    The plans are only read, so an attempt rolled back on a lock and run again starts from them as
    they came and reports each problem once. A session that changed since it was planned is not
    written: it comes back in `stale`.
    """
    created = [item.session_id for item in batch if item.create]
    created += block.session_ids if block else []
    if created:
        # Extra data left by sessions deleted since (Hermes knows no hst_ tables) is stale.
        extras.delete_for_sessions(conn, ",".join("?" * len(created)), created)
    layout = read_layout(conn)
    # A batch that only confirms what is stored (a re-run) leaves the triggers, and so the schema, alone.
    writes = block is not None or any(item.changes or item.session_extra for item in batch)
    deferred = _deferred_indexing(conn, layout) if writes else []
    for _index, name, _ in deferred:
        conn.execute(f"DROP TRIGGER {name}")
    writer = _BatchWriter(conn)
    for item in batch:
        writer.add(item)
    if block is not None:
        writer.add_block(block)
    result = writer.finish()
    for index, _, sql in deferred:
        index.index_from(conn, writer.first_id)
        conn.execute(sql)
    written = [w.session_id for w in result.written if w.created and w.stored]  # not one another writer made
    kept = later_columns.settle(conn, layout, writer.first_id, written)
    _count(conn, layout, writer)
    _end_imported_at_their_last_message(conn, writer.extended)
    return _with_notices(result, kept)


def _count(conn: sqlite3.Connection, layout: FileLayout, writer: _BatchWriter) -> None:
    """The counters of the sessions the batch wrote: a created one counted from its rows; a stored one
    in a layout that hides rewound rows adds what the batch appended, as that Hermes does."""
    if not layout.hides_rewound:
        counters.recount(conn, writer.recount + writer.changed)
        return
    counters.recount(conn, writer.recount)
    counters.add_new_rows(conn, writer.extended, writer.first_id)
    counters.heal(conn, writer.changed)  # a count no Hermes keeps (NULL, out of range) is recounted


def _with_notices(result: BatchResult, notices: dict[str, tuple[Problem, ...]]) -> BatchResult:
    """The batch's result with each session's notices (values kept in the extra data) added to it."""
    if not notices:
        return result
    written = tuple(replace(w, problems=(*w.problems, *notices[w.session_id])) if w.session_id in notices else w
                    for w in result.written)
    return BatchResult(written, result.stale)


def _deferred_indexing(conn: sqlite3.Connection, layout: FileLayout) -> list[tuple[SearchIndex, str, str]]:
    """The search indexes a batch indexes in one pass after its rows are in, with the insert trigger it
    drops meanwhile and puts back as the file had it: those whose trigger is the layout's own (a trigger
    of any other body keeps firing row by row, as it would for Hermes)."""
    stored = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").fetchall())
    deferred = []
    for index in layout.search:
        name, sql = next(((n, q) for n, q in index.triggers if n.endswith("_insert")), ("", ""))
        if name in stored and normalized(stored[name]) == normalized(sql):
            deferred.append((index, name, stored[name]))
    return deferred


def _end_imported_at_their_last_message(conn: sqlite3.Connection, session_ids: list[str]) -> None:
    """A session an earlier import created ended at its last message then; messages a later import
    adds after it move its end there too. Any other session keeps its end (an import never closes
    or reopens a live one)."""
    conn.executemany(
        "UPDATE sessions SET ended_at = (SELECT MAX(timestamp) FROM messages WHERE session_id = ?1) "
        "WHERE id = ?1 AND end_reason = ?2 AND ended_at < (SELECT MAX(timestamp) FROM messages WHERE session_id = ?1)",
        ((sid, IMPORTED_END_REASON) for sid in session_ids))


def restore_parent_links(conn: sqlite3.Connection, session_ids: list[str]) -> list[Problem]:
    """Set the parents this import kept aside (their parent came later in the run).

    Only sessions this run wrote are touched, and a link that would close a lineage cycle is
    refused: an old parked link must never undo a repair. What cannot be linked is reported and
    stays in the extra data.
    """
    problems: list[Problem] = []
    for session_id in session_ids:
        data = extras.session_extra(conn, session_id)
        parent = data.get("parent_session_id")
        row = conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if parent is None or row is None or row[0] is not None:
            continue
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchone() is None:
            problems.append(Problem(f"session {session_id}", None, "missing_parent",
                                    f"parent session {parent} is not in the database; the link is kept in extra data"))
        elif lineage.closes_cycle(conn, session_id, parent):
            problems.append(Problem(f"session {session_id}", None, "parent_cycle",
                                    f"linking to parent {parent} would close a lineage cycle; kept in extra data"))
        else:
            conn.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ?", (parent, session_id))
            extras.drop_session_extra_key(conn, session_id, "parent_session_id")
    return problems
