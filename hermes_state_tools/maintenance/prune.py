"""`prune`: delete ended sessions older than a cutoff with their messages, after the caller confirmed the plan."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_state_tools.core.connection import WriteRunner
from hermes_state_tools.core.reports import Report
from hermes_state_tools.store.live import ALONE_TARGET_S, LIVE_TARGET_S, Pace, settle_wal, yield_to_writers

if TYPE_CHECKING:
    from hermes_state_tools.archive.identical import KeptBack
from hermes_state_tools.store.opening import prove_sound, reading, writing
from hermes_state_tools.tables import deleting
from hermes_state_tools.views.sessions import missing_sources


@dataclass(frozen=True)
class PrunePlan:
    """What a prune would delete: ended sessions started before the cutoff, and their messages."""

    older_than_days: float
    source: str | None
    session_ids: tuple[str, ...]
    messages: int
    notices: tuple[str, ...] = ()  # what the caller should hear although nothing is wrong
    kept_back: tuple[KeptBack, ...] = ()  # with --archived: sessions the archive does not hold identically


@dataclass(frozen=True)
class PruneReport(Report):
    """What a prune deleted (or, on a dry run, would delete)."""

    sessions_deleted: int
    messages_deleted: int
    dry_run: bool
    older_than_days: float
    source: str | None
    session_ids: tuple[str, ...]
    notices: tuple[str, ...] = ()
    kept_back: tuple[KeptBack, ...] = ()  # with --archived: kept, each with the reason
    ok: bool = True


def _prune_report(plan: PrunePlan, ids: Sequence[str], messages: int, dry_run: bool) -> PruneReport:
    """The prune report; `ids` are the sessions deleted (or that would be, on a dry run)."""
    return PruneReport(len(ids), messages, dry_run, plan.older_than_days, plan.source, tuple(ids), plan.notices,
                       plan.kept_back)


def prune_file(path: Path, older_than_days: float, source: str | None = None, *, dry_run: bool = False,
               confirm: Callable[[PrunePlan], None] | None = None, archived: str | None = None,
               host: str | None = None) -> PruneReport:
    """Delete ended sessions older than the cutoff with their messages (children orphaned, a subagent's
    marked sessions deleted with them from schema 16), in short transactions that each delete whole
    sessions.

    `confirm` sees the plan before anything is deleted (None: no one is asked, as with --yes).
    `archived`: an archive URL; only sessions it holds identically under `host` are deleted, the
    others kept back with the reason ("archive, then prune")."""
    with reading(path) as conn:
        # A damaged file is refused even when there is nothing to delete; integrity_check, not quick_check:
        # a destroyed overflow page of a row shows only as a mismatch with its index.
        prove_sound(path, full=True)
        ids = tuple(deleting.prunable_ids(conn, older_than_days, source))
        kept: tuple[KeptBack, ...] = ()
        if archived is not None and ids:
            from hermes_state_tools.archive.identical import kept_back  # psycopg only when asked for

            kept = kept_back(conn, archived, host, ids)
            ids = tuple(i for i in ids if i not in {k.session_id for k in kept})
        # A source no session has is said, not refused (as export refuses it): a typo in a nightly job
        # would otherwise delete nothing every night without a word, but a source whose sessions were
        # all pruned has none either, and the next night's run must not fail for it.
        notices = tuple(missing_sources(conn, [source] if source is not None else None))
        counts = deleting.message_counts(conn, ids)
        plan = PrunePlan(older_than_days, source, ids, sum(counts.values()), notices, kept)
    if dry_run:
        return _prune_report(plan, plan.session_ids, plan.messages, True)
    if confirm is not None:
        confirm(plan)  # sees the plan before anything is deleted; raises to cancel
    if not ids:
        return _prune_report(plan, (), 0, False)
    # Proven sound above, a moment ago unless someone was asked meanwhile (the answer may come much later).
    with writing(path, proven=confirm is None) as (conn, runner):
        deleted, messages = _delete_in_batches(conn, runner, path, plan, counts)
    return _prune_report(plan, deleted, messages, False)


def _delete_in_batches(conn: sqlite3.Connection, runner: WriteRunner, path: Path, plan: PrunePlan,
                       counts: dict[str, int]) -> tuple[list[str], int]:
    """Delete the plan's sessions in batches, each a transaction of its own (a session is never split:
    killed between two, each session is there whole or gone); while another process (Hermes) has the
    file open each holds the lock about 0.2 s and a pause follows, so its appends get in."""
    deleted: list[str] = []
    messages = 0
    pace = Pace()
    for batch in deleting.batches(plan.session_ids, counts, pace):
        began = time.monotonic()
        ids, count = runner.run(deleting.prune_confirmed, batch, plan.older_than_days, plan.source)
        took = time.monotonic() - began
        deleted.extend(ids)
        messages += count
        pace.took(took, LIVE_TARGET_S if yield_to_writers(path, took) else ALONE_TARGET_S)
    settle_wal(conn)
    return deleted, messages
