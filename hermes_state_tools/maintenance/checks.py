"""`check`: independent read-only checks, each yielding findings; `run_checks` runs them all.

Every check works on any connection (a read-only one for `check`, the write transaction of
`repair` when it checks its own work) and never writes to the file: the only tables it creates
live in the temp schema. `check_file` runs FTS5's own integrity-check (the costly half of a full
check, one tokenizing pass) on a private snapshot in a second thread while SQLite's
integrity_check runs on the live file (sqlite3 releases the GIL), so a full check costs about
the larger of the two.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from hermes_state_tools.core.layouts import read_layout
from hermes_state_tools.core.progress import Steps, expect, step
from hermes_state_tools.core.reports import Report
from hermes_state_tools.core.schema import FTS_TABLE, INDEXES, SCHEMA_VERSION, object_names, table_columns
from hermes_state_tools.core.sqlite_info import has_wal_reset_bug, sqlite_version, wal_reset_notes
from hermes_state_tools.errors import DamagedDatabaseError
from hermes_state_tools.maintenance import fts_agreement, layout_rules, locate_damage, quick_pass
from hermes_state_tools.maintenance.layout_rules import expected_layout
from hermes_state_tools.store.opening import (
    LOOKS,
    last_look,
    open_hermes,
    open_read_connection,
    require_database_file,
    writer_arrived,
)
from hermes_state_tools.store.wal_frames import find_break
from hermes_state_tools.tables import foreign_rows, lineage, titles
from hermes_state_tools.upgrade.steps import detect_schema_version

KINDS = (
    "integrity", "foreign_key", "fts_out_of_sync", "missing_trigger", "missing_index", "lineage_cycle",
    "missing_parent", "counter_mismatch", "duplicate_title", "schema_version", "foreign_role", "fts_trigger_hazard",
)
_INTEGRITY_MAX_ERRORS = 100
_SAMPLE = 5


@dataclass(frozen=True)
class Finding:
    """One problem a check found: its kind, a line saying what is wrong, and the sessions involved."""

    kind: str
    detail: str
    session_ids: tuple[str, ...] = ()
    object: str | None = None  # integrity: the damaged table or index
    data: str | None = None  # integrity: "canonical" (rows only this file holds) or "derived" (rebuildable)

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"kind": self.kind, "detail": self.detail, "session_ids": list(self.session_ids)}
        if self.object is not None:
            doc.update(object=self.object, data=self.data)
        return doc


def _ids(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()) -> tuple[str, ...]:
    return tuple(row[0] for row in conn.execute(sql, params))


def _sample(ids: tuple[Any, ...]) -> str:
    """The first few ids, and how many there are in all when there are more."""
    shown = ", ".join(str(i) for i in ids[:_SAMPLE])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > _SAMPLE else "")


def integrity(conn: sqlite3.Connection, quick: bool = False) -> Iterator[Finding]:
    """SQLite's integrity_check (quick_check with `quick`) and dbstat's destroyed pages: each damaged
    table or index once, saying whether it holds canonical or derived data (see locate_damage.py)."""
    pragma = "quick_check" if quick else "integrity_check"
    for found in locate_damage.diagnose(conn, quick):
        what = "the rows only this file holds" if found.data == "canonical" else "rebuildable by `repair`"
        yield Finding("integrity", f"{pragma}: {found.name} is damaged ({found.data} data, {what}): "
                                   f"{found.detail}", (), found.name, found.data)


def orphaned_messages(conn: sqlite3.Connection) -> list[tuple[str, float, float, int]]:
    """(session id, first time, last time, count) of messages whose session does not exist."""
    # The distinct session ids come from the covering index (no table rows read); only orphans are
    # then looked at row by row.
    orphans = _ids(conn, "SELECT g.session_id FROM (SELECT DISTINCT session_id FROM messages) g "
                         "WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = g.session_id) ORDER BY 1")
    return [tuple(conn.execute("SELECT session_id, MIN(timestamp), MAX(timestamp), COUNT(*) FROM messages "
                               "WHERE session_id = ?", (session_id,)).fetchone()) for session_id in orphans]


def foreign_keys(conn: sqlite3.Connection) -> Iterator[Finding]:
    """Messages of a session that does not exist: the schema's one foreign key besides a session's
    own parent link (`missing_parent`). Answered from the session index instead of PRAGMA
    foreign_key_check, which looks up every message's session."""
    for session_id, _first, _last, count in orphaned_messages(conn):
        yield Finding("foreign_key", f"{count} messages belong to session {session_id!r}, which does not exist",
                      (session_id,))


Agreement = Callable[[], "fts_agreement.Agreements"]  # FTS5's integrity-check of each index, run elsewhere


def fts_sync(conn: sqlite3.Connection, quick: bool = False, agrees: Agreement | None = None) -> Iterator[Finding]:
    """Each search index of the file's layout against the text it indexes (ids always; tokens, and an
    inline index's stored text, too unless quick), see fts_agreement."""
    answers = agrees() if agrees is not None and not quick else {}
    for index in expected_layout(conn).search:
        drift = fts_agreement.drift(conn, index, quick, answers.get(index.name))
        if drift is not None:  # no FTS table: `missing_index` reports it
            yield from _drift_findings(conn, index.name, drift)


def _drift_findings(conn: sqlite3.Connection, name: str, drift: fts_agreement.FtsDrift) -> Iterator[Finding]:
    where = "the search index" if name == FTS_TABLE else f"the search index {name}"
    if drift.destroyed:
        yield Finding("integrity", f"{len(drift.destroyed)} messages hold stray zero bytes or bytes that are not "
                                   f"UTF-8 where {where} holds their words (ids {_sample(drift.destroyed)}): "
                                   "bytes destroyed in a page of the messages table (canonical data, the rows only "
                                   "this file holds)", fts_agreement.sessions_of(conn, drift.destroyed),
                      "messages", "canonical")
    if drift.unexplained:
        yield Finding("fts_out_of_sync", f"FTS5's integrity-check finds {where} damaged "
                                         "(no single message explains it)")
    parts = (
        (drift.unindexed, f"messages are missing from {where}"),
        (drift.changed, f"messages are indexed{'' if name == FTS_TABLE else ' in ' + name} with content "
                        "they no longer hold"),
    )
    for ids, what in parts:
        if ids:
            yield Finding("fts_out_of_sync", f"{len(ids)} {what} (ids {_sample(ids)})",
                          fts_agreement.sessions_of(conn, ids))
    if drift.stale:
        yield Finding("fts_out_of_sync", f"{where} holds {len(drift.stale)} deleted messages "
                                         f"(ids {_sample(drift.stale)})")


def missing_triggers(conn: sqlite3.Connection) -> Iterator[Finding]:
    """The triggers that keep each search index in step with `messages`, by name and body, as the file's
    layout defines them."""
    for trigger in layout_rules.trigger_drift(conn):
        if trigger.present is None:
            yield Finding("missing_trigger", f"trigger {trigger.name} is missing: message changes are not indexed")
        elif trigger.hazard:
            yield _hazard(conn, trigger)
        else:
            yield Finding("missing_trigger", f"trigger {trigger.name} is not the one "
                                             f"{layout_rules.expected_layout(conn).name} defines: message changes "
                                             "may be indexed wrongly")


def _hazard(conn: sqlite3.Connection, trigger: layout_rules.TriggerDrift) -> Finding:
    """A Hermes of schema 23 or later's inline update trigger over v6's external-content index: its plain
    DELETE reads the row's new text back and removes tokens the index never held (docs/layouts.md)."""
    what = (f"trigger {trigger.name} is the one a Hermes of schema 23 or later writes for its own inline index, "
            f"over this file's external-content {trigger.index.name}: each edit of a message's text leaves its "
            "old words searchable and the index corrupt; ")
    if read_layout(conn).known:
        return Finding("fts_trigger_hazard", what + "`repair` puts the layout's own trigger back, and a new "
                                             "file made with `--schema 17` avoids it")
    return Finding("fts_trigger_hazard", what + "this tool does not write that Hermes' layout: "
                                         "`hermes sessions optimize-storage` rebuilds the index in its current "
                                         "form; a new file made with `--schema 17` avoids it")


def missing_indexes(conn: sqlite3.Connection) -> Iterator[Finding]:
    """The indexes of the file's layout (version 6: of its schema version), and its FTS tables."""
    file, present = read_layout(conn), object_names(conn, "index")
    if file.later and file.layout is not None:
        names = [name for name in file.layout.indexes if name not in present]
    else:
        version = detect_schema_version(conn)
        names = [index.name for index in INDEXES if index.since <= version and index.name not in present]
    for name in names:
        yield Finding("missing_index", f"index {name} is missing")
    tables = object_names(conn, "table")
    for index in expected_layout(conn).search:
        if index.name not in tables:
            yield Finding("missing_index", f"full-text table {index.name} is missing: search finds nothing"
                                           f"{'' if index.name == FTS_TABLE else ' there'}")


def lineage_cycles(conn: sqlite3.Connection) -> Iterator[Finding]:
    """Parent chains that loop back on themselves."""
    for cycle in lineage.find_cycles(conn):
        yield Finding("lineage_cycle", "parent links form a cycle: " + " -> ".join([*cycle, cycle[0]]), tuple(cycle))


MISSING_PARENTS = (
    "SELECT id, parent_session_id FROM sessions c WHERE parent_session_id IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = c.parent_session_id) ORDER BY id"
)


def missing_parents(conn: sqlite3.Connection) -> Iterator[Finding]:
    """Sessions whose parent_session_id names a session that does not exist."""
    for session_id, parent in conn.execute(MISSING_PARENTS):
        yield Finding("missing_parent", f"session {session_id} names parent {parent!r}, which does not exist",
                      (session_id,))


def counter_mismatches(conn: sqlite3.Connection) -> Iterator[Finding]:
    """message_count and tool_call_count against the real rows, as the file's Hermes keeps them."""
    for session_id, stored_m, real_m, stored_t, real_t in layout_rules.counter_mismatches(conn):
        yield Finding("counter_mismatch", f"session {session_id}: message_count {stored_m} (real {real_m}), "
                                          f"tool_call_count {stored_t} (real {real_t})", (session_id,))


def duplicate_titles(conn: sqlite3.Connection) -> Iterator[Finding]:
    """Non-NULL titles held by more than one session (holders listed oldest first)."""
    if "title" not in table_columns(conn, "sessions"):
        return
    for title, holders in titles.shared_titles(conn):
        yield Finding("duplicate_title", f"title {title!r} is held by {len(holders)} sessions", tuple(holders))


def schema_version(conn: sqlite3.Connection) -> Iterator[Finding]:
    """The version row: present, one row, the current version (or the known later layout the file
    holds), and true to the columns present."""
    detected = detect_schema_version(conn)
    if "schema_version" not in object_names(conn, "table"):
        yield Finding("schema_version", f"the schema_version table is missing (the columns are version {detected})")
        return
    values = [row[0] for row in conn.execute("SELECT version FROM schema_version")]
    if len(values) != 1 or not isinstance(values[0], int):
        yield Finding("schema_version", f"the schema_version table holds {values!r} instead of one version number "
                                        f"(the columns are version {detected})")
    elif read_layout(conn).later and read_layout(conn).known:
        return  # a later Hermes' version row, of a layout this tool knows
    elif values[0] != SCHEMA_VERSION or detected != values[0]:
        yield Finding("schema_version", f"the version row says {values[0]}, the columns are version {detected}, "
                                        f"current is {SCHEMA_VERSION}")


def foreign_roles(conn: sqlite3.Connection) -> Iterator[Finding]:
    """Rows in `messages` that are no message (the February 2026 gateway's session_meta rows)."""
    found = foreign_rows.sessions_with_foreign_rows(conn)
    if found:
        total = sum(count for _, count in found)
        ids = tuple(sid for sid, _ in found)
        yield Finding("foreign_role", f"{total} rows in messages are no message (role "
                                      f"{', '.join(foreign_rows.FOREIGN_ROLES)}) in {len(found)} sessions: "
                                      f"{_sample(ids)}; replaying them sends them to the API", ids)


def quick_rows(conn: sqlite3.Connection) -> Iterator[Finding]:
    """--quick: orphaned messages, FTS ids and message counts from one pass (see quick_pass); a later
    layout's other search indexes by ids."""
    result = quick_pass.run(conn)
    for session_id, count in result.orphans:
        yield Finding("foreign_key", f"{count} messages belong to session {session_id!r}, which does not exist",
                      (session_id,))
    yield from _drift_findings(conn, FTS_TABLE, fts_agreement.FtsDrift(result.unindexed, result.stale))
    for index in expected_layout(conn).search:
        drift = fts_agreement.drift(conn, index, quick=True) if index.name != FTS_TABLE else None
        if drift is not None:
            yield from _drift_findings(conn, index.name, drift)
    for session_id, stored, real in result.counts:
        yield Finding("counter_mismatch", f"session {session_id}: message_count {stored} (real {real})",
                      (session_id,))


Check = Callable[[sqlite3.Connection], Iterator[Finding]]


Elsewhere = Callable[[], "list[Finding]"]  # a check's findings, computed on another connection


def integrity_elsewhere(_conn: sqlite3.Connection, result: Elsewhere) -> Iterator[Finding]:
    """`integrity`, run on a connection of its own in another thread (see check_file)."""
    yield from result()


def all_checks(quick: bool = False, agrees: Agreement | None = None,
               integrity_result: Elsewhere | None = None) -> tuple[Check, ...]:
    """Every check, in report order (`agrees`: FTS5's integrity-check run on a snapshot;
    `integrity_result`: --quick's quick_check run in another thread; see check_file)."""
    if quick:
        first = (partial(integrity, quick=True) if integrity_result is None
                 else partial(integrity_elsewhere, result=integrity_result))
        return (first, quick_rows, missing_triggers, missing_indexes, lineage_cycles, missing_parents,
                duplicate_titles, schema_version)
    return (
        integrity, foreign_keys, partial(fts_sync, agrees=agrees), missing_triggers, missing_indexes,
        lineage_cycles, missing_parents, counter_mismatches, duplicate_titles, schema_version,
        foreign_roles,  # a scan of the roles: not in --quick
    )


def check_name(check: Check) -> str:
    """The name a progress display shows for a check."""
    return getattr(check, "func", check).__name__.removesuffix("_elsewhere").replace("_", " ")


def _waits(check: Check) -> bool:
    """Whether the check waits for work running in another thread (see check_report)."""
    func, keywords = getattr(check, "func", None), getattr(check, "keywords", {})
    return func is integrity_elsewhere or (func is fts_sync and keywords.get("agrees") is not None)


def _name(check: Check) -> str:
    return getattr(check, "func", check).__name__.removesuffix("_elsewhere")


def run_checks(conn: sqlite3.Connection, quick: bool = False, agrees: Agreement | None = None,
               progress: Steps | None = None, integrity_result: Elsewhere | None = None,
               only: tuple[str, ...] | None = None) -> tuple[list[Finding], list[tuple[str, str]]]:
    """Every finding of every check that can run, on the caller's connection and transaction, in report
    order; and the checks that could not run, with why. A check SQLite stops (a damaged page under it)
    is reported as skipped instead of ending the report; `only` names the checks to run. The checks
    that wait for another thread's answer run last, so the others overlap with it."""
    checks = all_checks(quick, agrees, integrity_result)
    found: dict[int, list[Finding]] = {}
    skipped: list[tuple[str, str]] = []
    if quick:  # the one check --quick leaves out, not folded into its one pass over the rows (quick_rows)
        skipped.append((_name(foreign_roles), "not run by --quick: it reads every message's role"))
    expect(progress, sum(only is None or _name(check) in only for check in checks))
    for n in sorted(range(len(checks)), key=lambda n: _waits(checks[n])):
        name = _name(checks[n])
        if only is not None and name not in only:
            skipped.append((name, "not run on a layout this tool does not know"))
            continue
        step(progress, check_name(checks[n]))
        try:
            found[n] = list(checks[n](conn))
        except (sqlite3.DatabaseError, DamagedDatabaseError) as exc:
            skipped.append((name, "skipped: " + " ".join(str(exc).split())))
    return [finding for n in range(len(checks)) for finding in found.get(n, [])], skipped


def _snapshot_check(pool: ThreadPoolExecutor, path: Path, conn: sqlite3.Connection) -> Agreement | None:
    """Start FTS5's integrity-check on a private snapshot in the pool; the answer when the FTS check asks."""
    try:
        names = tuple(index.name for index in expected_layout(conn).search
                      if fts_agreement.has_index(conn, index.name))
    except sqlite3.DatabaseError:
        return None  # the version row cannot be read: `fts_sync` is skipped the same way
    if not names:
        return None
    future: Future[fts_agreement.Agreements] = pool.submit(fts_agreement.snapshot_agrees, path, names)
    return future.result


def _quick_check_elsewhere(path: Path) -> list[Finding]:
    conn = open_read_connection(path)
    try:
        return list(integrity(conn, quick=True))
    finally:
        conn.close()


@dataclass(frozen=True)
class CheckReport(Report):
    """The findings, the checks that could not run (name, why), notes that are not findings (the
    SQLite's WAL-reset bug among them only when the file is damaged: a cause to rule out, not news
    each night; `status` says it, and `sqlite_wal_reset_bug` is in every report)."""

    findings: tuple[Finding, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    schema_newer: bool = False

    @property
    def damaged(self) -> bool:
        return any(f.kind == "integrity" for f in self.findings)

    @property
    def sound(self) -> bool:
        """The integrity step ran and found nothing: what opening.prove_sound asks before a write."""
        return not self.damaged and all(name != "integrity" for name, _why in self.skipped)

    def as_dict(self) -> dict[str, Any]:
        return {"problems": [f.as_dict() for f in self.findings],
                "skipped": [{"check": name, "reason": why} for name, why in self.skipped],
                "notes": [*self.notes, *(wal_reset_notes() if self.damaged else ())], "damaged": self.damaged,
                "schema_newer": self.schema_newer, "sqlite_version": sqlite_version(),
                "sqlite_wal_reset_bug": has_wal_reset_bug()}


def check_report(path: Path, quick: bool = False, progress: Steps | None = None) -> CheckReport:
    """Check a database file read-only in one snapshot, to the end even when it is damaged; nothing is
    written and nothing is left beside it. A layout this tool does not know gets the file-level checks only."""
    try:
        require_database_file(path)
    except DamagedDatabaseError as exc:  # a destroyed header: SQLite cannot open it at all
        return _unreadable(exc)
    for attempt in range(LOOKS):  # a writer opened the file during an immutable look: a problem it saw
        # may be a torn read, so the file is checked again, the last time on a stable private copy
        report, again = _check_once(path, quick, progress, stable=last_look(attempt))
        if not again:
            break
    # Committed frames past a damaged one, which SQLite never reads: the -wal's checksums read in
    # Python (about 25 ms per MB of WAL), left to the full check.
    hidden = None if quick else find_break(path)
    if hidden is not None:
        finding = Finding("integrity", f"{hidden.detail()}: run `hermes-state recover DEST` before anything writes "
                                       "to the database (recover reads past the damage)", (), "-wal", "canonical")
        report = replace(report, findings=(*report.findings, finding))
    return report


def _check_once(path: Path, quick: bool, progress: Steps | None, stable: bool) -> tuple[CheckReport, bool]:
    try:
        # a damaged schema_version table reads as no version: `integrity` names it
        conn, version = open_hermes(path, allow_newer=True, tolerant_version=True, stable=stable)
    except DamagedDatabaseError as exc:
        return _unreadable(exc), False
    try:
        newer = _unknown_layout(conn, version)
        v6_index = newer and layout_rules.keeps_v6_search_index(conn)
        # the other thread reads what this look reads: on the last look, the stable copy
        findings, skipped = _run_in_two_threads(conn.reads or path, conn, quick, progress, newer, v6_index)
        report = CheckReport(tuple(findings), tuple(skipped), (), newer)
        return report, bool(report.findings) and writer_arrived(conn, path)
    finally:
        conn.close()


def _unknown_layout(conn: sqlite3.Connection, version: int | None) -> bool:
    """A later Hermes' file of a layout this tool does not know: only the file-level checks apply."""
    if version is None or version <= SCHEMA_VERSION:
        return False
    try:
        return not read_layout(conn).known
    except sqlite3.DatabaseError:
        return True  # its tables cannot be read: `integrity` says why


def _run_in_two_threads(path: Path, conn: sqlite3.Connection, quick: bool, progress: Steps | None,
                        newer: bool, v6_index: bool = False) -> tuple[list[Finding], list[tuple[str, str]]]:
    """The costly half runs in a second thread while the other checks run here (sqlite3 lets go of the
    GIL): FTS5's integrity-check on a private snapshot (full), or quick_check (--quick) on a connection
    of its own. A layout this tool does not know gets only the file-level checks, here, and the search
    checks of version 6 when its `messages_fts` is still version 6's own (`v6_index`)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hst-check") as pool:
        agrees, elsewhere = None, None
        if not newer and quick:
            elsewhere = pool.submit(_quick_check_elsewhere, path).result
        elif not quick and (v6_index or not newer):
            agrees = _snapshot_check(pool, path, conn)
        only = ("integrity", "foreign_keys", *(("fts_sync", "missing_triggers") if v6_index else ()))
        conn.execute("BEGIN")  # one snapshot while other processes keep writing
        try:
            return run_checks(conn, quick, agrees, progress, elsewhere, only if newer else None)
        finally:
            if conn.in_transaction:  # SQLite ends the transaction itself on some corrupt-page errors
                conn.execute("ROLLBACK")


def _unreadable(exc: DamagedDatabaseError) -> CheckReport:
    """SQLite cannot read the file's schema at all (page 1 destroyed, a truncated file): one finding."""
    finding = Finding("integrity", f"sqlite_master is damaged (canonical data, the rows only this file holds): "
                                   f"SQLite cannot read the schema ({exc.detail}); `recover` reads the pages", (),
                      "sqlite_master", "canonical")
    skipped = tuple((_name(c), "skipped: the schema cannot be read") for c in all_checks() if _name(c) != "integrity")
    return CheckReport((finding,), skipped, (), False)


def check_file(path: Path, quick: bool = False, progress: Steps | None = None) -> list[Finding]:
    """The findings of `check_report` (nothing is written)."""
    return list(check_report(path, quick, progress).findings)
