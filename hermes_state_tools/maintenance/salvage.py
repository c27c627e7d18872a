"""Rebuilding a database into a fresh file: `recover` (salvage what a damaged file still holds) and
`repair` of derived damage (the same rebuild, exact, swapped in place of the original).

SQLite refuses DROP INDEX, REINDEX and DROP TABLE on a b-tree whose pages are destroyed, so damage
is never fixed in place: the canonical rows are read around the damage (salvage_read, then the
leaf-page scan for rows under a destroyed interior page), written into a new file built beside
the destination under a temporary name, in the source's own layout (rebuilt_layout.py), the
indexes and the search indexes created there, the result verified, and only then put in place
(store/files.py). The source is only ever read.
"""

from __future__ import annotations

import bisect
import math
import re
import shutil
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hermes_state_tools.core.connection import is_corrupt, is_io_error, looks_like_sqlite
from hermes_state_tools.core.file_header import only_header_damaged
from hermes_state_tools.core.layouts import Layout, layout
from hermes_state_tools.core.schema import FTS_TABLE, INDEXES, SCHEMA_VERSION, TABLE_COLUMNS, TRIGGERS, read_version
from hermes_state_tools.errors import DamagedDatabaseError, HermesStateError, NotAHermesDatabaseError
from hermes_state_tools.maintenance import layout_rules, other_tables, page_scan, rebuilt_layout
from hermes_state_tools.maintenance.locate_damage import stray_zero
from hermes_state_tools.maintenance.salvage_read import (
    TableRead,
    index_values,
    indexed_rowids,
    literal,
    read_table,
    table_info,
)
from hermes_state_tools.store.opening import ReadConnection, open_pages, open_read_connection, refuse_newer
from hermes_state_tools.store.wal_frames import WalBreak, find_break
from hermes_state_tools.tables import counters, fts

PLACEHOLDER_SOURCE = "unknown"
PLACEHOLDER_END_REASON = "recovered"


@dataclass
class SalvageReport:
    """What came back from the source and what could not be read."""

    source: str
    sessions_recovered: int = 0
    messages_recovered: int = 0
    sessions_lost: int = 0  # session rowids that could not be read
    sessions_lost_ids: list[str] = field(default_factory=list)  # their ids, where an index still knows them
    messages_lost: int = 0
    messages_lost_ranges: list[tuple[int, int]] = field(default_factory=list)
    placeholder_sessions: list[str] = field(default_factory=list)
    rows_from_page_scan: int = 0
    rows_rejected: int = 0  # read, but not a valid row (garbage that decoded, a duplicate id)
    # Rows that came back with destroyed text (stray zero bytes, bytes that are not UTF-8, shown as U+FFFD):
    # kept as read, named ("messages 2401", "sessions abc"), and the recovery is not called complete.
    rows_damaged: list[str] = field(default_factory=list)
    titles_cleared: int = 0
    parents_cleared: int = 0
    counters_recounted: int = 0
    other_tables: list[str] = field(default_factory=list)
    other_tables_lost: list[str] = field(default_factory=list)
    columns_not_kept: list[str] = field(default_factory=list)  # table.column a v6 file has no place for
    pages_missing: int = 0  # the file ends before the pages its header counts: what they held is lost
    # Committed transactions the -wal held past a damaged frame (SQLite alone never reads them; they
    # were read here), and the damaged frames' pages no later frame held again (lost).
    wal_transactions_past_damage: int = 0
    wal_pages_lost: int = 0
    # ... or not read: something wrote after the damage, and those frames are another history
    # (they stay in the source's WAL; the report says so and the recovery is incomplete).
    wal_transactions_not_applied: int = 0
    schema_damage: str | None = None
    schema_unreadable: bool = False  # SQLite could not read the schema: rows came from the pages alone
    used_wal_snapshot: bool = False
    verified: bool = False

    @property
    def complete(self) -> bool:
        """Every canonical row came back as it was."""
        return not (self.sessions_lost or self.messages_lost or self.rows_rejected or self.rows_damaged
                    or self.placeholder_sessions
                    or self.other_tables_lost or self.titles_cleared or self.pages_missing or self.columns_not_kept
                    or self.wal_pages_lost or self.wal_transactions_not_applied)

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["messages_lost_ranges"] = [list(r) for r in self.messages_lost_ranges]
        return doc


@dataclass
class _Source:
    conn: ReadConnection
    scan_path: Path  # the file whose pages hold every committed row (the snapshot when a WAL was copied)
    snapshot_dir: Path | None


def _open_source(source: Path, workdir: Path, mend: bool = False) -> _Source:
    """Read in place when nothing waits in a WAL; else a replayed copy in `workdir` (store/opening.py)."""
    conn, scan_path, folder = open_pages(source, workdir, mend)
    src = _Source(conn, scan_path, folder)
    src.conn.row_factory = None
    src.conn.text_factory = _decoded  # undecodable text must not end a range
    return src


@dataclass
class _Read:
    sessions: TableRead
    messages: TableRead
    session_columns: list[str]
    message_columns: list[str]
    known: dict[str, dict[int, Any]]  # what the sessions indexes still hold: column -> rowid -> value
    others: other_tables.Others
    sequence: int | None
    # Every message id the session index holds, read whole (None: it could not be): a gap between ids
    # that came back is a lost message only if the index names it, else a message deleted long ago.
    indexed_messages: frozenset[int] | None = None


def _sequence(conn: sqlite3.Connection) -> int | None:
    try:
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").fetchone()
    except sqlite3.DatabaseError:
        return None
    return int(row[0]) if row and row[0] is not None else None


def _warn_if_newer(source: Path, conn: sqlite3.Connection) -> None:
    """A newer schema is read like every read command reads it: the one warning line (store/opening)."""
    try:
        version = read_version(conn)
        refuse_newer(source, conn, version, allow_newer=True)
    except (sqlite3.DatabaseError, DamagedDatabaseError):
        return  # a damaged version table or schema: the rows are still read


def _read_source(src: _Source, dest_columns: dict[str, list[str]], target: Layout) -> _Read:
    conn = src.conn
    have = {t: {c for c, _d in table_info(conn, t)} for t in ("sessions", "messages")}
    if not have["sessions"] or not have["messages"]:
        raise NotAHermesDatabaseError("holds no Hermes schema (no sessions/messages tables)")
    s_cols = [c for c in dest_columns["sessions"] if c in have["sessions"]]
    m_cols = [c for c in dest_columns["messages"] if c in have["messages"]]
    known = {column: index_values(conn, "sessions", index, column) for column, index in
             (("id", "sqlite_autoindex_sessions_1"), ("source", "idx_sessions_source"),
              ("started_at", "idx_sessions_started"))}
    return _Read(read_table(conn, "sessions", s_cols), read_table(conn, "messages", m_cols), s_cols, m_cols,
                 known, other_tables.read(conn, rebuilt_layout.search_tables(target)), _sequence(conn),
                 indexed_rowids(conn, "messages", "idx_messages_session"))


def _columns_not_kept(conn: sqlite3.Connection, dest_columns: dict[str, list[str]]) -> list[str]:
    """Columns of the source's sessions/messages that the v6 file lacks (added by a newer Hermes, or by
    another tool): their values cannot come along, so the copy is not everything the source holds."""
    return [f"{table}.{column}" for table, kept in dest_columns.items()
            for column, _default in table_info(conn, table) if column not in kept]


def _declared_default(decl: str) -> Any:
    match = re.search(r"DEFAULT\s+('[^']*'|\S+)", decl, re.IGNORECASE)
    return literal(match.group(1)) if match else None


def _read_by_pages(path: Path, dest_columns: dict[str, list[str]], report: SalvageReport) -> _Read:
    """When SQLite cannot read the schema at all (page 1 or sqlite_master destroyed, a truncated file):
    every leaf page is decoded and rows of the shape of Hermes' sessions and messages (columns in
    their schema order, older rows padded with the declared defaults) are kept."""
    cells = page_scan.scan_table_leaves(path)
    found: dict[str, TableRead] = {}
    for table, plausible in (("sessions", page_scan.plausible_session), ("messages", page_scan.plausible_message)):
        layout = TABLE_COLUMNS[table]
        names = [c.name for c in layout]
        rows = page_scan.candidates(cells, names, {c.name: _declared_default(c.decl) for c in layout}, plausible)
        got = TableRead({rowid: {c: row.get(c) for c in dest_columns[table]} for rowid, row in rows.items()})
        found[table] = got
    if found["sessions"].rows:  # a session id twice (a stale copy on a leaf): the first one read is kept
        unique: dict[str, int] = {}
        for rowid, row in sorted(found["sessions"].rows.items()):
            unique.setdefault(row["id"], rowid)
        found["sessions"].rows = {r: found["sessions"].rows[r] for r in unique.values()}
    for rowid, row in found["messages"].rows.items():
        row["id"] = rowid
    ids = sorted(found["messages"].rows)
    # Only the gaps between ids that came back can be told; AUTOINCREMENT ids of deleted messages look alike.
    found["messages"].lost = _ranges(sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))) if ids else []
    report.schema_unreadable = True
    report.rows_from_page_scan = len(found["sessions"].rows) + len(ids)
    empty: dict[str, dict[int, Any]] = {"id": {}, "source": {}, "started_at": {}}
    return _Read(found["sessions"], found["messages"], dest_columns["sessions"], dest_columns["messages"], empty,
                 other_tables.Others([], []), None)


def _from_pages(read: _Read, src: _Source, report: SalvageReport) -> None:
    """Rows the b-tree no longer reaches, from the leaf pages, for the rowids still lost."""
    cells = page_scan.scan_table_leaves(src.scan_path)
    for table, columns, plausible in (("sessions", read.session_columns, page_scan.plausible_session),
                                      ("messages", read.message_columns, page_scan.plausible_message)):
        got: TableRead = getattr(read, table)
        if not got.lost:
            continue
        info = table_info(src.conn, table)
        found = page_scan.candidates(cells, [c for c, _d in info], dict(info), plausible)
        lost = {r for a, b in got.lost for r in range(a, b + 1)}
        for rowid in sorted(lost & found.keys()):
            row = {c: found[rowid].get(c) for c in columns}
            if table == "messages":
                row["id"] = rowid
            got.rows[rowid] = row
            report.rows_from_page_scan += 1
        got.lost = _ranges(sorted(lost - found.keys()))


def _ranges(ids: list[int]) -> list[tuple[int, int]]:
    """Sorted ids as (first, last) runs."""
    out: list[tuple[int, int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


class _Mended(str):
    """Text that was not UTF-8 as stored, decoded with U+FFFD in place of its stray bytes."""


def _decoded(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return _Mended(raw.decode("utf-8", "replace"))


def _as_written(table: str, key: object, row: dict[str, Any], report: SalvageReport) -> dict[str, Any]:
    """The row with plain text values; one whose text was destroyed (not UTF-8, or a stray zero byte:
    locate_damage.written_text) is named in the report."""
    destroyed = False
    for name, value in row.items():
        if isinstance(value, _Mended):
            row[name], destroyed = str(value), True
        elif isinstance(value, str) and stray_zero(value):
            destroyed = True
    if destroyed:
        report.rows_damaged.append(f"{table} {key}")
    return row


def _insert(dest: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    columns = list(row)
    dest.execute(f'INSERT INTO "{table}" ({", ".join(columns)}) VALUES ({", ".join("?" * len(columns))})',
                 [row[c] for c in columns])


def _write_sessions(dest: sqlite3.Connection, read: _Read, report: SalvageReport, exact: bool) -> None:
    for row in read.sessions.rows.values():
        row = _as_written("sessions", row.get("id"), row, report)
        try:
            _insert(dest, "sessions", row)
        except sqlite3.IntegrityError:
            if exact or row.get("title") is None:
                report.rows_rejected += 1
                continue
            _insert(dest, "sessions", {**row, "title": None})  # a title another session holds too
            report.titles_cleared += 1
    report.sessions_recovered = dest.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
    lost = {r for a, b in read.sessions.lost for r in range(a, b + 1)}
    report.sessions_lost = len(lost)
    report.sessions_lost_ids = sorted(str(read.known["id"][r]) for r in lost if r in read.known["id"])


def _write_messages(dest: sqlite3.Connection, read: _Read, report: SalvageReport) -> None:
    for rowid, row in read.messages.rows.items():
        row = _as_written("messages", row.get("id", rowid), row, report)
        try:
            _insert(dest, "messages", row)
            report.messages_recovered += 1
        except sqlite3.DatabaseError as exc:
            if is_io_error(exc) or not dest.in_transaction:
                raise  # a full disk is no fault of the row, and SQLite has rolled the whole build back
            report.rows_rejected += 1
    lost = read.messages.lost
    if read.indexed_messages is not None:
        lost = _ranges(sorted(i for i in read.indexed_messages if _within(i, lost)))
    report.messages_lost_ranges = list(lost)
    report.messages_lost = sum(b - a + 1 for a, b in lost)


def _within(value: int, ranges: list[tuple[int, int]]) -> bool:
    """Whether `value` lies in one of the sorted, disjoint (first, last) ranges."""
    at = bisect.bisect_right(ranges, (value, math.inf)) - 1
    return at >= 0 and ranges[at][0] <= value <= ranges[at][1]


def _placeholders(dest: sqlite3.Connection, read: _Read, report: SalvageReport) -> None:
    """Messages whose session row was lost keep their rows under a placeholder session; its source and
    start come from the sessions indexes where they still hold them."""
    rowid_of = {value: rowid for rowid, value in read.known["id"].items()}
    orphans = dest.execute("SELECT session_id, MIN(timestamp), MAX(timestamp) FROM messages m WHERE NOT EXISTS "
                           "(SELECT 1 FROM sessions s WHERE s.id = m.session_id) GROUP BY session_id").fetchall()
    for session_id, first, last in orphans:
        rowid = rowid_of.get(session_id, 0)  # rowid 0: nothing known (sessions rowids start at 1)
        source = read.known["source"].get(rowid) or PLACEHOLDER_SOURCE
        started = read.known["started_at"].get(rowid) or first
        layout_rules.add_placeholder_session(dest, session_id, source, started, last, PLACEHOLDER_END_REASON)
        report.placeholder_sessions.append(session_id)


def _normalize(dest: sqlite3.Connection, report: SalvageReport) -> None:
    """recover only (repair keeps every canonical value): no link to a session that is not there, and
    counters true to the messages that came back."""
    report.parents_cleared = dest.execute(
        "UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IS NOT NULL "
        "AND parent_session_id NOT IN (SELECT id FROM sessions)").rowcount
    wrong = [row[0] for row in layout_rules.counter_mismatches(dest)]  # tool calls too: lost ones lower it
    counters.recount(dest, wrong)
    report.counters_recounted = len(wrong)


def _sequence_floor(dest: sqlite3.Connection, read: _Read) -> None:
    """AUTOINCREMENT stays past every id ever handed out, the lost ones too."""
    highest = max([dest.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0], read.sequence or 0,
                   *(b for _a, b in read.messages.lost)])
    dest.execute("DELETE FROM sqlite_sequence WHERE name = 'messages'")
    dest.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('messages', ?)", (highest,))


def _columns(dest: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in dest.execute(f"PRAGMA table_info({table})")]


def _build(dest: sqlite3.Connection, read: _Read, report: SalvageReport, exact: bool, target: Layout) -> None:
    indexing = rebuilt_layout.insert_triggers(target)
    for name in indexing:  # the search indexes are built once, at the end
        dest.execute(f"DROP TRIGGER {name}")
    dest.execute("BEGIN")
    _write_sessions(dest, read, report, exact)
    _write_messages(dest, read, report)
    if not exact:  # repair leaves orphans to its own placeholder fix, which reports each one
        _placeholders(dest, read, report)
        _normalize(dest, report)
    _sequence_floor(dest, read)
    other_tables.write(dest, read.others, report.other_tables, report.other_tables_lost,
                       rebuilt_layout.made_tables(target))
    dest.execute("COMMIT")
    for sql in indexing.values():
        dest.execute(sql)
    fts.rebuild(dest)


def verify_rebuilt(dest: sqlite3.Connection, path: Path, report: SalvageReport, check_links: bool) -> None:
    """The new file must pass integrity_check, the FTS integrity-check, (for recover) the foreign
    key check, and hold exactly the rows written."""
    problems = [row[0] for row in dest.execute("PRAGMA integrity_check")]
    if problems != ["ok"]:
        raise DamagedDatabaseError(path, f"the rebuilt file failed integrity_check: {problems[0]}")
    if check_links and any(dest.execute(f"PRAGMA foreign_key_check({table})").fetchall()
                           for table in ("sessions", "messages")):  # Hermes' links, not another tool's
        raise DamagedDatabaseError(path, "the rebuilt file failed foreign_key_check")
    for index in fts.search_indexes(dest):
        dest.execute(f"INSERT INTO {index.name}({index.name}, rank) VALUES ('integrity-check', 1)")
    if dest.execute("SELECT COUNT(*) FROM messages").fetchone()[0] != report.messages_recovered:
        raise DamagedDatabaseError(path, "the rebuilt file does not hold the messages written")
    report.verified = True


def _rebuild_from_pages(source: Path, tmp: Path, report: SalvageReport) -> SalvageReport:
    dest = sqlite3.connect(tmp, isolation_level=None)
    try:
        target = layout(SCHEMA_VERSION)  # no schema to tell another layout by
        rebuilt_layout.create(dest, dest, target)
        read = _read_by_pages(source, {t: _columns(dest, t) for t in ("sessions", "messages")}, report)
        if not read.sessions.rows and not read.messages.rows:
            raise DamagedDatabaseError(source, "no session or message could be read from it")
        _build(dest, read, report, False, target)
        verify_rebuilt(dest, tmp, report, check_links=True)
    finally:
        dest.close()
    return report


def _past_damage(source: Path, mended: _Source, workdir: Path, hidden: WalBreak, report: SalvageReport) -> _Source:
    """The mended view (commits past a damaged WAL frame read too) when it keeps every row SQLite's own
    view holds; else SQLite's own view. Something wrote after the damage then (Hermes, restarted after
    a power cut): SQLite appended at the damaged frame, and the older frames past it are another
    history, whose pages would replace the newer rows. Those commits stay in the source's WAL, counted
    in wal_transactions_not_applied."""
    if _keeps_every_row(source, mended.conn):
        report.wal_transactions_past_damage, report.wal_pages_lost = hidden.commits_after, hidden.pages_lost
        return mended
    _close(mended)
    report.wal_transactions_not_applied = hidden.commits_after
    return _open_source(source, workdir)  # the mended copy was removed with its folder


def _keeps_every_row(source: Path, mended: sqlite3.Connection) -> bool:
    """Whether every session SQLite reads in `source` is in `mended`, and every message as it is there
    (a session row may have changed since: counters, ended_at, a title; a message's does not, Hermes
    appends). Read from the tables themselves (NOT INDEXED): a mended view that mixed two histories
    can hold an index page that names a row its table page lacks."""
    try:
        own = open_read_connection(source)
    except HermesStateError:
        return True  # SQLite cannot read it either: the mended view is all there is
    try:
        sessions = {row[0] for row in mended.execute("SELECT id FROM sessions NOT INDEXED")}
        if any(row[0] not in sessions for row in own.execute("SELECT id FROM sessions")):
            return False
        columns = "session_id, role, content, timestamp"
        for row in own.execute(f"SELECT id, {columns} FROM messages"):
            found = mended.execute(f"SELECT {columns} FROM messages NOT INDEXED WHERE id = ?", (row[0],)).fetchone()
            if found is None or tuple(found) != tuple(row)[1:]:
                return False
    except sqlite3.DatabaseError:
        return True  # SQLite's own view is damaged too: the mended one reads more
    finally:
        own.close()
    return True


def rebuild_into(source: Path, tmp: Path, workdir: Path, *, exact: bool) -> SalvageReport:
    """Read every canonical row `source` still holds and write a verified v6 file at `tmp` (a
    self-contained rollback-journal file, ready to be renamed). `exact` (repair): every row must
    come back as it was, or DamagedDatabaseError and `tmp` removed."""
    report = SalvageReport(str(source))
    try:
        report.pages_missing = page_scan.pages_missing(source)  # what neither the file nor its WAL holds
        hidden = find_break(source)
        src = _open_source(source, workdir, mend=hidden is not None)
        if not exact and _tables_unreadable(src.conn):
            _close(src)
            return _rebuild_from_pages(source, tmp, report)
        if hidden is not None:  # src's copy read past it, unless that loses rows
            src = _past_damage(source, src, workdir, hidden, report)
    except sqlite3.DatabaseError as exc:
        # corrupt, no header at all, or a header field no SQLite writes (SQLite: "not a database")
        if exact or not (is_corrupt(exc) or not looks_like_sqlite(source) or only_header_damaged(source)):
            raise
        return _rebuild_from_pages(source, tmp, report)
    try:
        report.schema_damage, report.used_wal_snapshot = src.conn.schema_damaged, src.snapshot_dir is not None
        if not exact:
            _warn_if_newer(source, src.conn)
        dest = sqlite3.connect(tmp, isolation_level=None)
        try:
            target = rebuilt_layout.source_layout(src.conn)
            rebuilt_layout.create(dest, src.conn, target)
            dest_columns = {t: _columns(dest, t) for t in ("sessions", "messages")}
            read = _read_source(src, dest_columns, target)
            report.columns_not_kept = _columns_not_kept(src.conn, dest_columns)
            if exact and report.columns_not_kept:
                raise DamagedDatabaseError(source, "a rebuilt file would drop the columns "
                                                   f"{', '.join(report.columns_not_kept)}: run `recover`")
            if not exact and (read.sessions.lost or read.messages.lost):
                _from_pages(read, src, report)
            _build(dest, read, report, exact, target)
            if exact and not report.complete:
                raise DamagedDatabaseError(source, f"canonical rows cannot be read ({report.messages_lost} "
                                                   f"messages, {report.sessions_lost} sessions): run `recover`")
            verify_rebuilt(dest, tmp, report, check_links=not exact)
        finally:
            dest.close()
    finally:
        _close(src)
    return report


HERMES_OBJECTS = frozenset({FTS_TABLE, "schema_version", *TRIGGERS, *(index.name for index in INDEXES)})


def _tables_unreadable(conn: sqlite3.Connection) -> bool:
    """Whether the schema no longer says what sessions or messages is while the file is Hermes' (its
    schema was read around damage, or other Hermes objects are there): a damaged CREATE statement hides
    a table whose rows are all still on their pages, and those are read instead. A foreign file is not."""
    if all(table_info(conn, table) for table in ("sessions", "messages")):
        return False
    names = {str(row[0]) for row in conn.execute("SELECT name FROM sqlite_master")}
    return bool(getattr(conn, "schema_damaged", None)) or bool(names & HERMES_OBJECTS)


def _close(src: _Source) -> None:
    src.conn.close()
    if src.snapshot_dir is not None:
        shutil.rmtree(src.snapshot_dir, ignore_errors=True)
