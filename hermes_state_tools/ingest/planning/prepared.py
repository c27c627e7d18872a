"""Prepared sessions: a plan turned into ready-to-insert rows, small to send between processes.

A prepared session is a value: nothing changes it once it is made (staging makes a new one
pointing at its staged rows). Planning reads the database (what the session already holds), so a
prepared session remembers what it saw (`fingerprint`); the writer hands back any session that
changed between planning and its write transaction, and the pipeline plans it again outside the
transaction for a later batch.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_state_tools.core.frozen import built
from hermes_state_tools.core.message_rows import Row, message_row, tool_call_increment
from hermes_state_tools.core.records import LegacySession, Problem
from hermes_state_tools.ingest.copies.session_row import new_row
from hermes_state_tools.ingest.planning.units import ReadLog, Unit

if TYPE_CHECKING:
    from hermes_state_tools.ingest.copies.merge import Enrichment, Existing, SessionPlan
    from hermes_state_tools.ingest.copies.stored import Fingerprint

@dataclass(frozen=True)
class StagedRows:
    """A session's rows, already written by the reader process to the batch's staging file
    (rowids first .. first + count - 1 of its `rows` table), so the writer copies them in one
    INSERT ... SELECT instead of binding each value from Python."""

    first: int
    count: int


# A unit without its copies (Prepared.unit): enough to read a session's files and plan it again. The
# writer hands such shells back for sessions that changed since they were planned; it reads no file.
Shell = Unit


@dataclass(frozen=True)
class Prepared:
    session_id: str
    create: bool
    row: dict[str, Any]  # never changed once made (the writer works on a copy)
    session_extra: dict[str, Any]  # likewise
    rows: tuple[Row, ...] | StagedRows  # messages rows (core/message_rows.py), or where they were staged
    message_extras: tuple[tuple[int, dict[str, Any]], ...]  # (index into rows, extra data)
    tool_calls: int | None  # None: count in SQL after writing (see _tool_call_count)
    duplicates: int
    fingerprint: Fingerprint
    retimed: tuple[tuple[int, float], ...]  # stored rows moved forward to keep the merged order
    unit: Unit  # without its copies: enough to re-read and re-plan
    problems: tuple[Problem, ...] = ()
    enrich: tuple[Enrichment, ...] = ()  # stored rows' NULL columns and extra keys the files know
    foreign_ids: tuple[int, ...] = ()  # stored rows that are no message: moved into extra data
    staged_session: int | None = None  # a plain create's sessions row, staged too (its rowid there)

    def staged(self, rows: StagedRows, session: int | None) -> Prepared:
        """The same plan with its rows (and maybe its sessions row) staged. Built (core/frozen.py) rather
        than dataclasses.replace, which runs the frozen __init__ again: staging makes one per session."""
        return built(Prepared, **{**self.__dict__, "rows": rows, "staged_session": session})

    @property
    def message_count(self) -> int:
        return self.rows.count if isinstance(self.rows, StagedRows) else len(self.rows)

    @property
    def changes(self) -> bool:
        return self.create or bool(self.message_count or self.row or self.retimed or self.enrich or self.foreign_ids)

    @property
    def plain_create(self) -> bool:
        """A new session with nothing to write but its row, its extra data and its messages (nearly
        every session of a first import): written in runs, not one by one (writing/writer.py)."""
        return (self.create and self.tool_calls is not None and not self.row.get("title")
                and self.row.get("parent_session_id") is None
                and not (self.message_extras or self.retimed or self.enrich or self.foreign_ids))


def _tool_call_count(inserts: list[tuple[Any, float, int]]) -> int | None:
    """What the messages add to tool_call_count; None when some hold their tool calls as text another
    program stored (an export of its rows): the writer then counts them as counters.recount does."""
    if any(isinstance(m.tool_calls, str) for m, _, _ in inserts):
        return None
    return sum(tool_call_increment(m.role, m.tool_calls) for m, _, _ in inserts)


def _rows(plan: SessionPlan) -> tuple[Row, ...]:
    """The plan's rows in MESSAGE_COLUMNS order."""
    sid = plan.session_id
    return tuple(
        message_row(sid, m.role, m.content, m.tool_call_id, m.tool_calls, m.tool_name, timestamp,
                    (m.token_count, m.finish_reason, m.reasoning, m.reasoning_details, m.codex_reasoning_items))
        for m, timestamp, _ in plan.inserts
    )


def _wanted(unit: Unit, existing: bool) -> bool:
    """A session of no messages is never made from legacy files (reported instead, by left_out), an
    index entry describing its empty transcript or not: Hermes' list would show an empty row. A session
    already stored is planned all the same, and an exported session is always a session."""
    return existing or any(c.messages for c in unit.copies) or any(c.kind == "export" for c in unit.copies)


def prepare(conn: sqlite3.Connection | None, unit: Unit, pretend: Existing | None = None,
            known: set[str] | None = None) -> Prepared | None:
    """Plan one unit against the database as it is now (or, for a dry run, against `pretend`: what the
    run would already have written for this session); None when there is nothing to write. With
    `known` (the ids stored when reading began), a session outside it is planned as new unread."""
    if unit.plain is not None and pretend is None:  # new to the database (UnitReader checked)
        return plain_plan(unit)
    # The careful path's modules load on its first use: the reader process, which plans plain
    # transcripts alone in a first import, starts without them.
    from hermes_state_tools.ingest.copies.merge import plan_session
    from hermes_state_tools.ingest.copies.stored import fingerprint_of, load_existing, texts_wanted

    if pretend is not None:
        existing: Existing | None = pretend
    elif conn is None or (known is not None and unit.session_id not in known):
        existing = None
    else:
        existing = load_existing(conn, unit.session_id, texts_wanted(unit.copies))
    if not _wanted(unit, existing is not None):
        return None
    copies: list[LegacySession] = unit.copies + ([unit.index_entry] if unit.index_entry else [])
    plan = plan_session(unit.session_id, copies, existing, unit.fallback_start, unit.end_hint)
    shell = unit.with_copies([])
    return Prepared(
        session_id=plan.session_id, create=plan.create, row=plan.row, session_extra=plan.session_extra,
        rows=_rows(plan), message_extras=tuple((n, m.extra) for n, (m, _, _) in enumerate(plan.inserts) if m.extra),
        tool_calls=_tool_call_count(plan.inserts),
        duplicates=plan.duplicates, problems=tuple(plan.problems), unit=shell, retimed=tuple(plan.retimed),
        fingerprint=fingerprint_of(existing), enrich=tuple(plan.enrich), foreign_ids=plan.foreign_ids,
    )


def left_out(unit: Unit) -> Problem | None:
    """Why prepare() made nothing of a unit: an index entry that no transcript read here belongs to,
    an index entry whose transcript holds no messages, or a file of no messages (a 0-byte file says
    nothing more: its reader said so already)."""
    entry = unit.index_entry
    if not unit.files:
        return None if entry is None else Problem(entry.file, None, "index_only", (
            f"the index lists session {unit.session_id}, but no transcript of it was read here; nothing was "
            "made of its entry (name the folder or file that holds the transcript to import it)"))
    if entry is not None:
        return Problem(entry.file, None, "no_messages", f"the index lists session {unit.session_id}, whose "
                       f"transcript {os.path.basename(unit.files[0])} holds no messages; no session was made")
    if _empty(unit.files[0]):
        return None
    return Problem(unit.files[0], None, "no_messages", f"session {unit.session_id} holds no messages and no index "
                   "entry describes it; no session was made from it")


def _empty(file: str) -> bool:
    try:
        return os.stat(file).st_size == 0
    except OSError:
        return False


def planned(conn: sqlite3.Connection | None, units: Iterable[Unit], log: ReadLog,
            known: set[str] | None = None) -> Iterator[Prepared]:
    """prepare() over units; each unit a file held that gives nothing to write is said in the log
    (looked up each time: the reader process hands its problems on, and starts a new list, per batch)."""
    for unit in units:
        item = prepare(conn, unit, known=known)
        if item is not None:
            yield item
        elif (problem := left_out(unit)) is not None:
            log.problems.append(problem)


def plain_plan(unit: Unit) -> Prepared:
    """The plan of a new session read from a plain transcript: what plan_session gives for its one copy
    (times as recorded, no repeats, nothing stored to align with), its rows as read_plain made them."""
    plain = unit.plain
    assert plain is not None
    return built(
        Prepared, session_id=unit.session_id, create=True,
        row=new_row(unit.session_id, [plain.session], plain.span, unit.fallback_start),
        session_extra=dict(plain.session.extra), rows=plain.rows, message_extras=(), tool_calls=plain.tool_calls,
        duplicates=0, fingerprint=None, retimed=(), unit=unit.with_copies([]),  # fingerprint_of(None): nothing stored
        problems=(), enrich=(), foreign_ids=(), staged_session=None,
    )


