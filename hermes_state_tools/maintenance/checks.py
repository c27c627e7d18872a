"""`check`: independent read-only checks, each yielding findings; `run_checks` runs them all.

Every check works on any connection (a read-only one for `check`, the write transaction of
`repair` when it checks its own work) and never writes to the file: the only tables it creates
live in the temp schema.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from hermes_state_tools.core.schema import (
    FTS_TABLE,
    INDEXES,
    SCHEMA_VERSION,
    TRIGGERS,
    object_names,
    read_version,
    table_columns,
)
from hermes_state_tools.core.sqlite_info import sqlite_notes, sqlite_version
from hermes_state_tools.errors import DamagedDatabaseError, NotAHermesDatabaseError
from hermes_state_tools.maintenance import damage, fts_agreement
from hermes_state_tools.store.opening import open_read_connection, refuse_newer, require_database_file
from hermes_state_tools.store.read_open import writer_arrived
from hermes_state_tools.tables import counters, lineage, titles
from hermes_state_tools.upgrade.steps import detect_schema_version

KINDS = (
    "integrity", "foreign_key", "fts_out_of_sync", "missing_trigger", "missing_index", "lineage_cycle",
    "missing_parent", "counter_mismatch", "duplicate_title", "schema_version",
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
    table or index once, saying whether it holds canonical or derived data (see damage.py)."""
    pragma = "quick_check" if quick else "integrity_check"
    for found in damage.diagnose(conn, quick):
        what = "the rows only this file holds" if found.data == "canonical" else "rebuildable by `repair`"
        yield Finding("integrity", f"{pragma}: {found.name} is damaged ({found.data} data, {what}): "
                                   f"{found.detail}", (), found.name, found.data)


def orphaned_messages(conn: sqlite3.Connection) -> list[tuple[str, float, float, int]]:
    """(session id, first time, last time, count) of messages whose session does not exist."""
    return [tuple(row) for row in conn.execute(
        "SELECT session_id, MIN(timestamp), MAX(timestamp), COUNT(*) FROM messages m WHERE NOT EXISTS "
        "(SELECT 1 FROM sessions s WHERE s.id = m.session_id) GROUP BY session_id ORDER BY session_id"
    )]


def foreign_keys(conn: sqlite3.Connection) -> Iterator[Finding]:
    """Rows pointing at a row that does not exist (a session's own parent link is `missing_parent`)."""
    violations = {(row[0], row[2]) for row in conn.execute("PRAGMA foreign_key_check")}
    if ("messages", "sessions") in violations:
        for session_id, _first, _last, count in orphaned_messages(conn):
            yield Finding("foreign_key", f"{count} messages belong to session {session_id!r}, which does not exist",
                          (session_id,))
    for table, parent in sorted(violations - {("messages", "sessions"), ("sessions", "sessions")}):
        yield Finding("foreign_key", f"rows of {table} point at {parent} rows that do not exist")


def fts_sync(conn: sqlite3.Connection, quick: bool = False) -> Iterator[Finding]:
    """The FTS index against `messages` (ids always; tokens too unless quick), see fts_agreement."""
    drift = fts_agreement.drift(conn, quick)
    if drift is None:
        return  # no FTS table: `missing_index` reports it
    parts = (
        (drift.unindexed, "messages are missing from the search index"),
        (drift.changed, "messages are indexed with content they no longer hold"),
    )
    for ids, what in parts:
        if ids:
            yield Finding("fts_out_of_sync", f"{len(ids)} {what} (ids {_sample(ids)})",
                          fts_agreement.sessions_of(conn, ids))
    if drift.stale:
        yield Finding("fts_out_of_sync", f"the search index holds {len(drift.stale)} deleted messages "
                                         f"(ids {_sample(drift.stale)})")


def missing_triggers(conn: sqlite3.Connection) -> Iterator[Finding]:
    """The three triggers that keep the FTS index in step with `messages`."""
    present = object_names(conn, "trigger")
    for name in TRIGGERS:
        if name not in present:
            yield Finding("missing_trigger", f"trigger {name} is missing: message changes are not indexed")


def missing_indexes(conn: sqlite3.Connection) -> Iterator[Finding]:
    """The indexes of the file's schema version, and the messages_fts table itself."""
    present, version = object_names(conn, "index"), detect_schema_version(conn)
    for index in INDEXES:
        if index.since <= version and index.name not in present:
            yield Finding("missing_index", f"index {index.name} is missing")
    if FTS_TABLE not in object_names(conn, "table"):
        yield Finding("missing_index", f"full-text table {FTS_TABLE} is missing: search finds nothing")


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
    """message_count and tool_call_count against the real rows."""
    for session_id, stored_m, real_m, stored_t, real_t in counters.mismatches(conn):
        yield Finding("counter_mismatch", f"session {session_id}: message_count {stored_m} (real {real_m}), "
                                          f"tool_call_count {stored_t} (real {real_t})", (session_id,))


def duplicate_titles(conn: sqlite3.Connection) -> Iterator[Finding]:
    """Non-NULL titles held by more than one session (holders listed oldest first)."""
    if "title" not in table_columns(conn, "sessions"):
        return
    for title, holders in titles.shared_titles(conn):
        yield Finding("duplicate_title", f"title {title!r} is held by {len(holders)} sessions", tuple(holders))


def schema_version(conn: sqlite3.Connection) -> Iterator[Finding]:
    """The version row: present, one row, the current version, and true to the columns present."""
    detected = detect_schema_version(conn)
    if "schema_version" not in object_names(conn, "table"):
        yield Finding("schema_version", f"the schema_version table is missing (the columns are version {detected})")
        return
    values = [row[0] for row in conn.execute("SELECT version FROM schema_version")]
    if len(values) != 1 or not isinstance(values[0], int):
        yield Finding("schema_version", f"the schema_version table holds {values!r} instead of one version number "
                                        f"(the columns are version {detected})")
    elif values[0] != SCHEMA_VERSION or detected != values[0]:
        yield Finding("schema_version", f"the version row says {values[0]}, the columns are version {detected}, "
                                        f"current is {SCHEMA_VERSION}")


Check = Callable[[sqlite3.Connection], Iterator[Finding]]


def all_checks(quick: bool = False) -> tuple[Check, ...]:
    """Every check, in report order."""
    return (
        partial(integrity, quick=quick), foreign_keys, partial(fts_sync, quick=quick), missing_triggers,
        missing_indexes, lineage_cycles, missing_parents, counter_mismatches, duplicate_titles, schema_version,
    )


def run_checks(conn: sqlite3.Connection, quick: bool = False) -> list[Finding]:
    """Every finding of every check, on the caller's connection and transaction."""
    return [finding for check in all_checks(quick) for finding in check(conn)]


@dataclass(frozen=True)
class CheckReport:
    """The findings, the checks that could not run (name, why), notes that are not findings."""

    findings: tuple[Finding, ...]
    skipped: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    schema_newer: bool = False

    @property
    def damaged(self) -> bool:
        return any(f.kind == "integrity" for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        return {"problems": [f.as_dict() for f in self.findings],
                "skipped": [{"check": name, "reason": why} for name, why in self.skipped],
                "notes": list(self.notes), "damaged": self.damaged, "schema_newer": self.schema_newer,
                "sqlite_version": sqlite_version()}


def _name(check: Check) -> str:
    return getattr(check, "func", check).__name__


def run_checks_tolerant(conn: sqlite3.Connection, quick: bool = False,
                        only: tuple[str, ...] | None = None) -> tuple[list[Finding], list[tuple[str, str]]]:
    """Every check that can run: one that SQLite stops (a damaged page under it) is reported as
    skipped with the reason instead of ending the report; `only` names the checks to run."""
    findings, skipped = [], []
    for check in all_checks(quick):
        name = _name(check)
        if only is not None and name not in only:
            skipped.append((name, f"not run on a schema newer than {SCHEMA_VERSION}"))
            continue
        try:
            findings += list(check(conn))
        except sqlite3.DatabaseError as exc:
            skipped.append((name, "skipped: " + " ".join(str(exc).split())))
    return findings, skipped


def _version(conn: sqlite3.Connection) -> int | None:
    try:
        return read_version(conn)
    except sqlite3.DatabaseError:
        return None  # a damaged schema_version table: `integrity` names it


def check_report(path: Path, quick: bool = False) -> CheckReport:
    """Check a database file read-only in one snapshot, to the end even when it is damaged; nothing is
    written and nothing is left beside it. A newer schema gets the file-level checks only."""
    require_database_file(path)
    report, again = _check_once(path, quick)
    if again:  # a writer opened the file during an immutable look: what looked damaged is checked again
        report, _again = _check_once(path, quick)
    return report


def _check_once(path: Path, quick: bool) -> tuple[CheckReport, bool]:
    try:
        conn = open_read_connection(path)
    except DamagedDatabaseError as exc:
        return _unreadable(exc), False
    try:
        if not {"sessions", "messages"} <= object_names(conn, "table"):
            raise NotAHermesDatabaseError(f"{path}: holds no Hermes schema (no sessions/messages tables)")
        version = _version(conn)
        refuse_newer(path, version, allow_newer=True)
        newer = version is not None and version > SCHEMA_VERSION
        conn.execute("BEGIN")  # one snapshot while other processes keep writing
        findings, skipped = run_checks_tolerant(conn, quick, ("integrity", "foreign_keys") if newer else None)
        conn.execute("ROLLBACK")
        report = CheckReport(tuple(findings), tuple(skipped), tuple(sqlite_notes()), newer)
        return report, report.damaged and writer_arrived(conn, path)
    finally:
        conn.close()


def _unreadable(exc: DamagedDatabaseError) -> CheckReport:
    """SQLite cannot read the file's schema at all (page 1 destroyed, a truncated file): one finding."""
    finding = Finding("integrity", f"sqlite_master is damaged (canonical data, the rows only this file holds): "
                                   f"SQLite cannot read the schema ({exc.detail}); `recover` reads the pages", (),
                      "sqlite_master", "canonical")
    skipped = tuple((_name(c), "skipped: the schema cannot be read") for c in all_checks() if _name(c) != "integrity")
    return CheckReport((finding,), skipped, tuple(sqlite_notes()), False)


def check_file(path: Path, quick: bool = False) -> list[Finding]:
    """The findings of `check_report` (nothing is written)."""
    return list(check_report(path, quick).findings)
