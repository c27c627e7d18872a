"""`repair`: one idempotent fix per finding kind, all in one write transaction, then the checks again.

Nothing is deleted: messages whose session is gone get a placeholder session, broken parent
links become NULL, duplicate titles are renamed. Damage to the file itself (`integrity`) in
derived data is fixed by rebuilding the file (maintenance/recover.py); in canonical data it is
refused (DamagedDatabaseError): `recover` salvages what is readable into a new file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_state_tools.core.layouts import read_layout
from hermes_state_tools.core.progress import Steps, expect, step
from hermes_state_tools.core.reports import Report
from hermes_state_tools.core.schema import SCHEMA_VERSION, object_names
from hermes_state_tools.core.words import plural
from hermes_state_tools.errors import DamagedDatabaseError
from hermes_state_tools.maintenance import layout_rules
from hermes_state_tools.maintenance.checks import MISSING_PARENTS, Finding, check_file, orphaned_messages
from hermes_state_tools.maintenance.recover import rebuild_in_place
from hermes_state_tools.store.backup import backup_if_schema_changes, scratch_copy
from hermes_state_tools.store.opening import refuse_long_lock_while_open, require_supported, writing
from hermes_state_tools.tables import counters, foreign_rows, fts, lineage, titles
from hermes_state_tools.upgrade import steps

PLACEHOLDER_SOURCE = "unknown"
PLACEHOLDER_END_REASON = "recovered"


@dataclass(frozen=True)
class Change:
    """One thing a repair changed (or, in a dry run, would change), with the values before and after."""

    kind: str
    action: str
    detail: str
    session_ids: tuple[str, ...] = ()
    old: Any = None
    new: Any = None

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "action": self.action, "detail": self.detail,
                "session_ids": list(self.session_ids), "old": self.old, "new": self.new}


@dataclass(frozen=True)
class RepairReport(Report):
    """What was found, what was changed, and what the checks still find afterwards."""

    problems: tuple[Finding, ...]
    changes: tuple[Change, ...]
    unfixed: tuple[Finding, ...]
    dry_run: bool = False
    backup: str | None = None  # taken when the repair had to change the schema


    @property
    def ok(self) -> bool:
        return not self.unfixed

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "dry_run": self.dry_run, "backup": self.backup,
                "problems": [f.as_dict() for f in self.problems],
                "changes": [c.as_dict() for c in self.changes], "unfixed": [f.as_dict() for f in self.unfixed]}


@dataclass
class _Run:
    """The connection a repair writes through, and what it has done so far."""

    conn: sqlite3.Connection
    changes: list[Change] = field(default_factory=list)
    fts_rebuilt: bool = False


def recover_orphan_messages(run: _Run) -> None:
    """Messages whose session is missing keep their rows: a placeholder session is created for them."""
    rows = orphaned_messages(run.conn)
    for session_id, first, last, count in rows:
        layout_rules.add_placeholder_session(run.conn, session_id, PLACEHOLDER_SOURCE, first, last,
                                             PLACEHOLDER_END_REASON)
        new = {"source": PLACEHOLDER_SOURCE, "started_at": first, "ended_at": last,
               "end_reason": PLACEHOLDER_END_REASON, "message_count": count}
        detail = f"created placeholder session {session_id!r} (source {PLACEHOLDER_SOURCE!r}) for its {count} messages"
        run.changes.append(Change("foreign_key", "created_session", detail, (session_id,), None, new))
    counters.recount(run.conn, [row[0] for row in rows])


def clear_missing_parents(run: _Run) -> None:
    """A parent link to a session that does not exist becomes NULL."""
    for session_id, parent in run.conn.execute(MISSING_PARENTS).fetchall():
        run.conn.execute("UPDATE sessions SET parent_session_id = NULL WHERE id = ?", (session_id,))
        run.changes.append(Change("missing_parent", "cleared_parent",
                                  f"session {session_id}: parent {parent!r} -> NULL", (session_id,), parent, None))


def break_cycles(run: _Run) -> None:
    """In each cycle the session that started first loses its parent link and becomes the root."""
    for cycle in lineage.find_cycles(run.conn):
        marks = ",".join("?" * len(cycle))
        root, parent = run.conn.execute(
            f"SELECT id, parent_session_id FROM sessions WHERE id IN ({marks}) ORDER BY started_at, id LIMIT 1", cycle
        ).fetchone()
        run.conn.execute("UPDATE sessions SET parent_session_id = NULL WHERE id = ?", (root,))
        run.changes.append(Change("lineage_cycle", "cleared_parent", f"session {root} started first in the cycle "
                                  f"{' -> '.join(cycle)}: parent {parent!r} -> NULL", tuple(cycle), parent, None))


def _title_changes(renames: list[dict[str, str]]) -> list[Change]:
    """One change per `titles.dedupe_titles` rename."""
    return [Change("duplicate_title", "renamed_title", f"session {r['session_id']}: title {r['old']!r} -> {r['new']!r}",
                   (r["session_id"],), r["old"], r["new"]) for r in renames]


def rename_duplicate_titles(run: _Run) -> None:
    """The session that started first keeps a shared title; later ones get the next free `#N`."""
    run.changes += _title_changes(titles.dedupe_titles(run.conn))


def _structure_kind(name: str) -> str:
    """The finding kind a recreated 'trigger X' / 'index X' / 'table X' / 'column X' answers."""
    if name.startswith("trigger "):
        return "missing_trigger"
    return "schema_version" if name.startswith("column ") else "missing_index"


def _version_rows(conn: sqlite3.Connection) -> Any:
    """The version row's value; None for a missing table, a list for an empty or crowded one."""
    if "schema_version" not in object_names(conn, "table"):
        return None
    rows = [row[0] for row in conn.execute("SELECT version FROM schema_version")]
    return rows[0] if len(rows) == 1 else rows


def restore_structure(run: _Run) -> None:
    """Recreate missing columns, indexes, triggers and FTS tables, and put back triggers whose body is
    not the layout's own, all in the file's own layout; then set the version row to current (a later
    Hermes' file keeps its own version)."""
    fts_missing = bool(fts.missing_objects(run.conn))
    missing, renames = steps.restore_structure(run.conn)
    run.fts_rebuilt = run.fts_rebuilt or fts_missing  # fts.recreate rebuilt the index from `messages`
    for name in missing:
        verb = "added" if name.startswith("column ") else "recreated"
        run.changes.append(Change(_structure_kind(name), verb, f"{verb} {name}"))
    restored = layout_rules.restore_triggers(run.conn)
    for trigger in restored:
        kind = "fts_trigger_hazard" if trigger.hazard else "missing_trigger"
        run.changes.append(Change(kind, "recreated", f"recreated trigger {trigger.name} as "
                                  f"{layout_rules.expected_layout(run.conn).name} defines it", (),
                                  trigger.present, trigger.expected))
    if restored:  # an altered trigger may have indexed wrongly: every index is filled anew from `messages`
        fts.rebuild(run.conn)
        run.fts_rebuilt = True
    run.changes += _title_changes(renames)
    old, current = _version_rows(run.conn), _current_version(run.conn)
    if old != current:
        steps.set_version(run.conn, current)
        run.changes.append(Change("schema_version", "set_version", f"schema_version {old!r} -> {current}",
                                  (), old, current))


def _current_version(conn: sqlite3.Connection) -> int:
    """The version row a file should hold: its own known later layout's, else this tool's."""
    file = read_layout(conn)
    return file.version if file.later and file.known and file.version is not None else SCHEMA_VERSION


def rebuild_fts(run: _Run) -> None:
    """Rebuild the search index from `messages` (once, even when recreating FTS objects did it already)."""
    if not run.fts_rebuilt:
        fts.rebuild(run.conn)
        run.fts_rebuilt = True
    count = run.conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    names = " and ".join(index.name for index in fts.search_indexes(run.conn))
    run.changes.append(Change("fts_out_of_sync", "rebuilt_index", f"rebuilt {names} from {count} messages"))


def recount_counters(run: _Run) -> None:
    """message_count and tool_call_count set from the real rows."""
    for session_id, stored_m, real_m, stored_t, real_t in layout_rules.counter_mismatches(run.conn):
        counters.recount(run.conn, [session_id])
        old, new = {"message_count": stored_m, "tool_call_count": stored_t}, {"message_count": real_m,
                                                                                "tool_call_count": real_t}
        run.changes.append(Change("counter_mismatch", "recounted", f"session {session_id}: message_count "
                                  f"{stored_m} -> {real_m}, tool_call_count {stored_t} -> {real_t}",
                                  (session_id,), old, new))


def move_foreign_rows(run: _Run) -> None:
    """Rows that are no message move into their session's extra data (every column kept)."""
    found = foreign_rows.sessions_with_foreign_rows(run.conn)
    for session_id, count in foreign_rows.move_foreign_rows(run.conn, [sid for sid, _ in found]).items():
        run.changes.append(Change("foreign_role", "moved_to_extra",
                                  f"session {session_id}: {plural(count, 'row')} that are no message moved to its "
                                  f"extra data ({foreign_rows.EXTRA_KEY!r})", (session_id,), count, 0))


Fix = Callable[[_Run], None]

# Finding kind -> its fix. Fixes run in this order, each at most once: sessions are recovered and
# links repaired before titles and structure, and counters are recounted last.
FIXES: dict[str, Fix] = {
    "foreign_key": recover_orphan_messages,
    "missing_parent": clear_missing_parents,
    "lineage_cycle": break_cycles,
    "foreign_role": move_foreign_rows,
    "duplicate_title": rename_duplicate_titles,
    "missing_index": restore_structure,
    "missing_trigger": restore_structure,
    "fts_trigger_hazard": restore_structure,
    "schema_version": restore_structure,
    "fts_out_of_sync": rebuild_fts,
    "counter_mismatch": recount_counters,
}


# Fixes that rebuild an index or the search index from every row: the write lock is held throughout.
REBUILDS_FTS = frozenset({"fts_out_of_sync", "missing_trigger", "fts_trigger_hazard", "missing_index"})


def apply_fixes(conn: sqlite3.Connection, kinds: set[str]) -> list[Change]:
    """Run the fix of every kind found, inside the caller's transaction; returns every change."""
    run = _Run(conn)
    for fix in dict.fromkeys(FIXES[kind] for kind in FIXES if kind in kinds):
        fix(run)
    return run.changes


def _dry_run(path: Path, problems: tuple[Finding, ...], progress: Steps | None) -> RepairReport:
    """The same repair on a verified copy: the report is exact and the file is not even opened for writing
    (opening for writing alone may switch a rollback-journal file to WAL)."""
    expect(progress, 1)
    step(progress, "copying for the dry run")
    with scratch_copy(path, purpose="repair") as copy:
        done = repair_file(copy, problems=problems, progress=progress)
    return RepairReport(problems, done.changes, done.unfixed, True)


def _rebuild_change(doc: dict[str, Any], damaged: list[Finding]) -> Change:
    names = ", ".join(sorted({f.object or "?" for f in damaged}))
    return Change("integrity", "rebuilt_file", f"rebuilt the file around damaged derived data ({names}): "
                  f"{doc['sessions_recovered']} sessions and {doc['messages_recovered']} messages copied "
                  "exactly, indexes and search index recreated; the original is kept beside it as "
                  "<name>.pre-repair-<timestamp> (the report's `backup`)")


def _repair_damage(path: Path, problems: tuple[Finding, ...], dry_run: bool) -> RepairReport:
    """Damage to derived data only (indexes, the FTS index, a duplicated schema entry): the file is
    rebuilt (SQLite cannot drop or reindex a destroyed b-tree), then the other findings are fixed on
    the new file. Damage to canonical rows is refused: `recover` salvages them into a new file."""
    damaged = [f for f in problems if f.kind == "integrity"]
    canonical = sorted({f.object or "?" for f in damaged if f.data != "derived"})
    if canonical:
        raise DamagedDatabaseError(path, f"canonical data is damaged ({', '.join(canonical)}); "
                                         "repair cannot bring it back")
    if dry_run:
        with scratch_copy(path, as_is=True, purpose="repair") as copy:  # the backup API refuses damage
            done = _repair_damage(copy, problems, False)
        return RepairReport(problems, done.changes, done.unfixed, True)
    doc = rebuild_in_place(path)
    rest = repair_file(path)
    return RepairReport(problems, (_rebuild_change(doc, damaged), *rest.changes), rest.unfixed, False, doc["backup"])


def repair_file(path: Path, dry_run: bool = False, problems: tuple[Finding, ...] | None = None,
                progress: Steps | None = None) -> RepairReport:
    """Check (unless findings are given), fix them in one transaction (on a copy for a dry run), check again.

    Healthy: one check and no write lock. The check runs again only when a fix ran."""
    require_supported(path)  # refuses a missing, foreign or newer file (a newer schema is never written)
    problems = tuple(check_file(path, progress=progress)) if problems is None else problems
    if not problems:
        return RepairReport((), (), (), dry_run)  # healthy: no write lock taken at all
    kinds = {finding.kind for finding in problems}
    if "integrity" in kinds:
        return _repair_damage(path, problems, dry_run)
    if dry_run:
        return _dry_run(path, problems, progress)
    # Fixing the schema is an upgrade in all but name: keep the file as it was first, as upgrade does.
    backup = backup_if_schema_changes(path, progress) if "schema_version" in kinds else None
    expect(progress, 1)
    step(progress, "fixing")
    with writing(path) as (_conn, runner):
        if kinds & REBUILDS_FTS:
            refuse_long_lock_while_open(path, "repair (its search index rebuild)")
        changes = runner.run(lambda c: apply_fixes(c, kinds))
    # Verified on what was committed, read-only, so the write lock is not held for the checks.
    return RepairReport(problems, tuple(changes), tuple(check_file(path, progress=progress)), False, backup)
