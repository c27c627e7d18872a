"""Plan one session's import: merge every copy of it into what the database already holds.

Pure functions: the database state comes in as plain data (the existing row and its
messages), the plan goes out; writing/writer.py turns plans into SQL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, cast

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.records import (
    GENERATED_CALL_PREFIX,
    HERMES_COLUMNS_KEY,
    LegacyMessage,
    LegacySession,
    Problem,
)
from hermes_state_tools.ingest.copies.align import (
    CLOCK_SLACK_S,
    Key,
    align,
    insertion_points,
    message_key,
    save_time_holds,
    unpair_out_of_time,
)
from hermes_state_tools.ingest.copies.inflated import inflated
from hermes_state_tools.ingest.copies.masked import Copy, masked_notice, realigned, unmasked_side
from hermes_state_tools.ingest.copies.session_row import first_value, new_row, session_fields
from hermes_state_tools.ingest.copies.timeline import STEP, place_run

# Copies are merged richest first, so the first copy of a message decides its content.
KIND_ORDER = {"export": 0, "index": 1, "jsonl": 2, "snapshot": 3, "save": 4, "sharegpt": 5}
_NEVER_FILLED = {"id", "message_count", "tool_call_count", "ended_at", "end_reason", "started_at", "source"}
# A snapshot's session_start and the stored session's started_at are both stamped as the agent starts:
# when they differ by more, the files were read in another zone than they were written in (hours), or
# the snapshot is of a later agent of the session, and its save time says nothing of the stored rows.
STARTS_AGREE_S = 600.0
SAVED_AFTER_START_S = 1.0  # a snapshot is saved after its first exchange, never at its session_start


# Message columns a copy in the files may know when the stored row does not (the gateway wrote
# only role, content and tool fields): filled where NULL, never overwritten.
ENRICHED_COLUMNS = ("tool_name", "finish_reason", "reasoning", "token_count", "reasoning_details",
                    "codex_reasoning_items")
# From May 2026 the gateway stored a message with an image as its text plus "[screenshot]" while the
# JSONL kept the parts (the image itself): the parts go to the stored row's extra data under this key.
PARTS_KEY = "content_parts"
# A text a redacted copy held (secrets masked) that its unmasked copy's text replaced.
MASKED_KEY = "masked_text"


@dataclass(frozen=True)
class ExistingMessage:
    id: int
    role: str
    content: Any
    tool_call_id: str | None
    tool_calls: Any
    timestamp: float
    key: Key | None = None  # the alignment key, when it was computed while reading (content is then None
    # unless the text holds redaction masks or a copy does: stored.load_existing)
    missing: frozenset[str] = frozenset()  # ENRICHED_COLUMNS that are NULL (or '') in the stored row
    extra_keys: frozenset[str] = frozenset()  # keys of the row's extra data
    columns: frozenset[str] = frozenset()  # the columns of the file's messages table


@dataclass(frozen=True)
class Existing:
    row: dict[str, Any]
    messages: tuple[ExistingMessage, ...]
    foreign_ids: tuple[int, ...] = ()  # rows that are no message (tables/foreign_rows.py): moved on write
    # A parent link kept aside in the extra data whose parent is still missing: filling it again would
    # only park it again (and count the session as updated on every run).
    parked_parent: str | None = None


@dataclass(frozen=True)
class Enrichment:
    """What the files add to one stored message: NULL columns to fill, extra data keys it lacks."""

    message_id: int
    columns: dict[str, Any]
    extra: dict[str, Any]
    # The stored text is a redacted copy's (secrets masked) and a copy holds it unmasked: `content`
    # replaces it, only while the row still holds `masked_content`.
    content: str | None = None
    masked_content: str | None = None


@dataclass
class _Slot:
    key: Key | None  # computed only when another copy has to be aligned against this one
    timestamp: float | None  # fixed: an existing row's time; new: the recorded time (or None)
    message: LegacyMessage | None = None  # None for rows already in the database
    existing_id: int | None = None  # the stored row's id
    stored: ExistingMessage | None = None
    fill: dict[str, Any] = field(default_factory=dict)  # a stored row's NULL columns the copies know
    fill_extra: dict[str, Any] = field(default_factory=dict)
    unmasked: str | None = None  # a stored row's text as a copy holds it without redaction masks

    def identity(self) -> Key:
        if self.key is None:
            assert self.message is not None
            self.key = _key_of(self.message)
        return self.key


@dataclass
class SessionPlan:
    session_id: str
    create: bool
    row: dict[str, Any]  # all columns for a new session; the NULL columns to fill for an existing one
    session_extra: dict[str, Any]
    inserts: list[tuple[LegacyMessage, float, int]] = field(default_factory=list)  # message, time, position
    retimed: list[tuple[int, float]] = field(default_factory=list)  # stored rows moved forward: (id, time)
    duplicates: int = 0
    problems: list[Problem] = field(default_factory=list)
    enrich: list[Enrichment] = field(default_factory=list)
    foreign_ids: tuple[int, ...] = ()  # stored rows that are no message, moved into extra data on write

    @property
    def changes(self) -> bool:
        return self.create or bool(self.inserts or self.row or self.enrich or self.foreign_ids)


def _key_of(message: LegacyMessage) -> Key:
    generated = bool(message.extra.get("generated_tool_call_id"))
    return message_key(message.role, message.content, message.tool_call_id, message.tool_calls, generated)


def _existing_slots(existing: Existing | None) -> list[_Slot]:
    return [
        _Slot(m.key or message_key(m.role, m.content, m.tool_call_id, m.tool_calls), m.timestamp, None, m.id, m)
        for m in (existing.messages if existing else ())
    ]


def _take_fields(slot: _Slot, message: LegacyMessage) -> None:
    """What a matched copy knows that the slot's message lacks: a stored row's NULL columns and
    extra keys (filled on write), a new message's empty fields (the first copy's values stay)."""
    if slot.stored is not None:
        for name in slot.stored.missing:
            if name == PARTS_KEY:
                if isinstance(message.content, list) and PARTS_KEY not in slot.stored.extra_keys:
                    slot.fill_extra.setdefault(PARTS_KEY, message.content)
                continue
            value = getattr(message, name)
            if value is not None and value != "":
                slot.fill.setdefault(name, value)
        for key, value in _unheld(message.extra, slot.stored.columns).items():
            if key not in slot.stored.extra_keys:
                slot.fill_extra.setdefault(key, value)
    elif slot.message is not None and slot.message is not message:
        known = {name: getattr(message, name) for name in ENRICHED_COLUMNS
                 if getattr(slot.message, name) in (None, "") and getattr(message, name) not in (None, "")}
        more = {k: v for k, v in message.extra.items() if k not in slot.message.extra}
        if known or more:
            slot.message = replace(slot.message, **known, extra={**more, **slot.message.extra})


def _timed(slots: list[_Slot]) -> bool:
    return any(s.timestamp is not None for s in slots)


def _copy_of(slot: _Slot) -> Copy:
    if slot.message is not None:
        return Copy(slot.message.role, slot.message.tool_call_id, slot.message.content, False)
    assert slot.stored is not None
    return Copy(slot.stored.role, slot.stored.tool_call_id, slot.stored.content, True)


def _unmask(slot: _Slot, message: LegacyMessage) -> bool:
    """Keep the message's text when the slot's is the same with secrets masked (the masked text
    goes to the extra data: were the two different messages after all, neither is lost); True when
    one of the two was a masked copy of the other."""
    side = unmasked_side(_copy_of(slot), Copy.of(message))
    if side == 1 and slot.stored is not None and slot.unmasked is None:
        slot.unmasked = message.content
        slot.fill_extra.setdefault(MASKED_KEY, slot.stored.content)
    elif side == 1 and slot.message is not None:
        extra = {MASKED_KEY: slot.message.content, **slot.message.extra}
        slot.message = replace(slot.message, content=message.content, extra=extra)
        slot.key = None  # the unmasked text is what a later copy aligns with
    return side is not None


def unpair_contradicted(matched: list[int | None], slots: list[_Slot], existing_keys: list[Key],
                        incoming: list[LegacyMessage], keys: list[Key], started_at: float | None,
                        saved_at: float | None = None) -> list[int | None]:
    """The content alignment's pairs, without those the tool-call ids or the times rule out. Times only
    where the copy's clock agrees with the stored session's: no message of it before the session
    started (files read in another zone than they were written in, or a test's made-up times, would
    make every stored row look late). A copy without times (a snapshot) is dated by `saved_at`, when it
    was saved (None: unknown, or its clock disagrees: _save_time), where save_time_holds."""
    dated = [m.timestamp for m in incoming]
    stored_times = [s.timestamp if s.stored is not None else None for s in slots]
    if saved_at is not None and all(t is None for t in dated) and save_time_holds(matched, stored_times, saved_at):
        dated = [saved_at] * len(incoming)
    known = [t for t in dated if t is not None]
    paired = matched
    if started_at is not None and known and min(known) >= started_at - CLOCK_SLACK_S:
        paired = unpair_out_of_time(matched, existing_keys, stored_times, keys, dated)
    return [None if old is not None and _ids_differ(_copy_calls(slots[old]), incoming[new].tool_calls) else old
            for new, old in enumerate(paired)]


def _copy_calls(slot: _Slot) -> Any:
    return slot.message.tool_calls if slot.message is not None else slot.stored.tool_calls if slot.stored else None


def _ids_differ(calls: Any, others: Any) -> bool:
    """Two assistant messages calling the same tools with the same arguments, each with the call ids
    the API gave, are two calls when the ids differ (`git status` run in two turns). Ids a reader
    invented (ShareGPT logs), or none, say nothing."""
    ours, theirs = _real_ids(calls), _real_ids(others)
    return ours is not None and theirs is not None and ours != theirs


def _real_ids(calls: Any) -> tuple[str, ...] | None:
    if isinstance(calls, str):
        calls = jsonutil.loads_or_raw(calls)
    if not isinstance(calls, list) or not calls:
        return None
    ids = tuple(c.get("id") if isinstance(c, dict) else None for c in calls)
    if not all(isinstance(i, str) and i and not i.startswith(GENERATED_CALL_PREFIX) for i in ids):
        return None
    return cast("tuple[str, ...]", ids)


def _merge_copy(slots: list[_Slot], incoming: list[LegacyMessage], started_at: float | None = None,
                saved_at: float | None = None) -> tuple[list[_Slot], int, int]:
    """Slots with the copy's missing messages inserted in place; returns them, how many were present
    and how many of those differed from their slot only where redaction masked one of them.
    `saved_at`: when the copy was saved, if its clock agrees with the store's (_save_time)."""
    if not slots:  # nothing to align against (the usual case: a session new to the database)
        return [_Slot(None, m.timestamp, m) for m in incoming], 0, 0
    keys = [_key_of(m) for m in incoming]
    existing_keys = [s.identity() for s in slots]
    times = ([s.timestamp for s in slots], [m.timestamp for m in incoming])
    matched = align(existing_keys, keys, times)
    repeats = 0
    if _timed(slots) and incoming and all(m.timestamp is None for m in incoming):
        dropped = inflated(keys, existing_keys)
        if dropped:
            incoming = [m for n, m in enumerate(incoming) if n not in dropped]
            keys = [k for n, k in enumerate(keys) if n not in dropped]
            repeats = len(dropped)
            matched = align(existing_keys, keys)  # (no times in this copy to choose by)
    matched = realigned(matched, lambda e: _copy_of(slots[e]), existing_keys, [Copy.of(m) for m in incoming], keys)
    matched = unpair_contradicted(matched, slots, existing_keys, incoming, keys, started_at, saved_at)
    additions: dict[int, list[_Slot]] = {}
    masked = 0
    for message, index, point in zip(incoming, matched, insertion_points(matched), strict=True):
        if index is None:
            additions.setdefault(point, []).append(_Slot(None, message.timestamp, message))
        else:
            masked += _unmask(slots[index], message)
            _take_fields(slots[index], message)
    merged: list[_Slot] = []
    for position in range(len(slots) + 1):
        merged += additions.get(position, [])
        if position < len(slots):
            merged.append(slots[position])
    return merged, repeats + sum(index is not None for index in matched), masked


def _merge_messages(existing: Existing | None, copies: list[LegacySession]
                    ) -> tuple[list[_Slot], int, list[Problem]]:
    slots = _existing_slots(existing)
    started = existing.row.get("started_at") if existing else None
    started_at = float(started) if isinstance(started, (int, float)) else None
    duplicates = 0
    problems = []
    for copy in copies:
        slots, present, masked = _merge_copy(slots, list(copy.messages), started_at, _save_time(copy, started_at))
        duplicates += copy.duplicates_skipped + present
        if masked:
            problems.append(masked_notice(copy, masked))
    return slots, duplicates, problems


def _save_time(copy: LegacySession, started_at: float | None) -> float | None:
    """When the copy was saved, where its session start agrees with the stored one (STARTS_AGREE_S) and
    the save time moved on from it (a writer that set last_updated once, at the start, says nothing)."""
    start = copy.fields.get("started_at")
    if copy.saved_at is None or started_at is None or not isinstance(start, (int, float)):
        return None
    if abs(start - started_at) > STARTS_AGREE_S or copy.saved_at - start < SAVED_AFTER_START_S:
        return None
    return copy.saved_at


def _timestamps(slots: list[_Slot], hints: tuple[float | None, float | None], fallback: float) -> list[float | None]:
    """Times for the new slots (None for existing ones), strictly increasing through the whole sequence."""
    times: list[float | None] = [None] * len(slots)
    run: list[int] = []
    lo: float | None = None
    for index in range(len(slots) + 1):
        fixed = index < len(slots) and slots[index].message is None
        if index < len(slots) and not fixed:
            run.append(index)
            continue
        hi = slots[index].timestamp if fixed else None
        if run:
            recorded = [slots[i].timestamp for i in run]
            bound_lo, bound_hi = lo, hi
            if all(t is None for t in recorded) and lo is None and hi is None:
                bound_lo, bound_hi = hints  # a file with no times at all: spread over the session's span
            for i, value in zip(run, place_run(recorded, bound_lo, bound_hi, fallback), strict=True):
                times[i] = value
            run = []
        lo = hi if fixed else lo
    return times


def _after(value: float) -> float:
    return max(value + STEP, math.nextafter(value, math.inf))


def _keep_order(slots: list[_Slot], times: list[float | None]) -> list[tuple[int, float]]:
    """Make (timestamp, id) order the merged order: a new message never ties with or undercuts its
    predecessor, and a stored row right after inserted ones moves forward (by microseconds) when
    they reached its time. Ties among untouched stored rows keep their id order and stay."""
    retimed: list[tuple[int, float]] = []
    previous: float | None = None
    pushed = False  # whether `previous` belongs to a new or moved message
    for index, slot in enumerate(slots):
        if slot.message is not None:
            value = times[index]
            assert value is not None
            if previous is not None and value <= previous:
                value = _after(previous)
            times[index], pushed = value, True
        else:
            value = slot.timestamp if slot.timestamp is not None else 0.0
            if pushed and previous is not None and value <= previous:
                value = _after(previous)
                assert slot.existing_id is not None
                retimed.append((slot.existing_id, value))
            else:
                pushed = False
        previous = value
    return retimed


def _session_extra(copies: list[LegacySession], existing: Existing | None) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    for copy in copies:
        for key, value in copy.extra.items():
            extra.setdefault(key, value)
    return extra if existing is None else _unheld(extra, frozenset(existing.row))


def _unheld(extra: dict[str, Any], columns: frozenset[str]) -> dict[str, Any]:
    """A stored row's extra data to add, without the carried values (another file's later columns) of
    the `columns` the row has: its own column holds that value, never overwritten, and a copy beside it
    would be added again by every merge of the same file."""
    carried = extra.get(HERMES_COLUMNS_KEY)
    if not isinstance(carried, dict):
        return extra
    kept = {name: value for name, value in carried.items() if name not in columns}
    rest = {key: value for key, value in extra.items() if key != HERMES_COLUMNS_KEY}
    return {**rest, HERMES_COLUMNS_KEY: kept} if kept else rest


def _fill_row(existing: Existing, copies: list[LegacySession]) -> dict[str, Any]:
    merged = session_fields(copies)
    return {
        name: value for name, value in merged.items()
        if name not in _NEVER_FILLED and value is not None and existing.row.get(name) in (None, "")
        and not (name == "parent_session_id" and value == existing.parked_parent)
    }


def _call_names(slots: list[_Slot]) -> dict[str, str]:
    names: dict[str, str] = {}
    for slot in slots:
        calls = slot.message.tool_calls if slot.message is not None else slot.stored.tool_calls if slot.stored else None
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str) and isinstance(call.get("id"), str):
                names.setdefault(call["id"], function["name"])
    return names


def _enrichments(slots: list[_Slot], name_tools: bool) -> list[Enrichment]:
    """The stored rows the copies add to; with `name_tools`, a stored tool row without a name gets
    its call's name."""
    names: dict[str, str] | None = None
    out = []
    for slot in slots:
        stored = slot.stored
        if stored is None:
            continue
        if name_tools and stored.role == "tool" and "tool_name" in stored.missing and "tool_name" not in slot.fill:
            names = _call_names(slots) if names is None else names
            if stored.tool_call_id in names:
                slot.fill["tool_name"] = names[stored.tool_call_id]
        if slot.fill or slot.fill_extra or slot.unmasked is not None:
            out.append(Enrichment(stored.id, dict(slot.fill), dict(slot.fill_extra), slot.unmasked,
                                  stored.content if slot.unmasked is not None else None))
    return out


def plan_session(session_id: str, copies: list[LegacySession], existing: Existing | None,
                 fallback_start: float, end_hint: float | None = None) -> SessionPlan:
    """What importing these copies of one session would change in the database."""
    copies = sorted(copies, key=lambda c: KIND_ORDER.get(c.kind, 9))
    slots, duplicates, problems = _merge_messages(existing, [c for c in copies if c.has_messages])
    start_hint = first_value(copies, "started_at")
    times = _timestamps(slots, (start_hint, end_hint), start_hint or fallback_start)
    retimed = _keep_order(slots, times)
    # An export (or another database) holds its rows as they were, a tool row without a name too,
    # and is imported so; naming its tool rows on the next run would change what it stored.
    name_tools = any(c.kind != "export" for c in copies)
    inserts = [(s.message, t, i) for i, (s, t) in enumerate(zip(slots, times, strict=True)) if s.message is not None]
    assert all(t is not None for _, t, _ in inserts)
    all_times = [t if s.message is not None else s.timestamp for s, t in zip(slots, times, strict=True)]
    if existing is None:
        row = new_row(session_id, copies, [t for t in all_times if t is not None], fallback_start)
    else:
        row = _fill_row(existing, copies)
    return SessionPlan(
        session_id=session_id, create=existing is None, row=row, session_extra=_session_extra(copies, existing),
        inserts=[(m, float(t), i) for m, t, i in inserts if t is not None], retimed=retimed, duplicates=duplicates,
        problems=problems,
        enrich=_enrichments(slots, name_tools), foreign_ids=existing.foreign_ids if existing else (),
    )
