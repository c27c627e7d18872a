"""A new session's row from its copies: the sessions columns they give (each the first copy's that has
one), and the times, source and counters a new row needs. Apart from the merging of messages
(merge.py), so that planning a plain transcript loads only this (the reader process starts sooner)."""

from __future__ import annotations

from typing import Any

from hermes_state_tools.core.records import LegacySession
from hermes_state_tools.core.schema import SESSION_FIELDS

IMPORTED_END_REASON = "imported"
_COUNTER_DEFAULTS = {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens"}


def first_value(copies: list[LegacySession], name: str) -> Any:
    """The first copy's value of a session field, passing over copies that give none."""
    for copy in copies:
        value = copy.fields.get(name)
        if value is not None and value != "":  # "" (an era's unknown model) is no value
            return value
    return None


_FILLED_FIELDS = tuple(name for name in SESSION_FIELDS if name not in ("id", "source"))
_FILLED_SET = frozenset(_FILLED_FIELDS)


def session_fields(copies: list[LegacySession]) -> dict[str, Any]:
    """The sessions columns the copies give a value, each the first copy's that has one; no key for a
    column none of them gives (it is stored NULL, or its default: see new_row's counters)."""
    best = max(copies, key=lambda c: c.source_rank)  # max keeps the first of equal ranks
    if len(copies) == 1:  # the usual case, and what first_value gives for one copy
        fields = {name: value for name, value in copies[0].fields.items()
                  if name in _FILLED_SET and value is not None and value != ""}
    else:
        fields = {name: value for name in _FILLED_FIELDS if (value := first_value(copies, name)) is not None}
    fields["source"] = best.fields.get("source") or first_value(copies, "source") or "unknown"
    return fields


def new_row(session_id: str, copies: list[LegacySession], times: list[float], fallback: float) -> dict[str, Any]:
    """A new session's row: its copies' fields, started and ended at its first and last message's
    time (`times`; `fallback` when it has none), its counters 0 where no copy gives one."""
    row = session_fields(copies)
    row["id"] = session_id
    if row.get("started_at") is None:
        row["started_at"] = times[0] if times else fallback
    elif times and times[0] < row["started_at"]:
        # An index's naive created_at read in another zone than the messages' epoch times can
        # land after the first message; a session never starts after its first message.
        row["started_at"] = times[0]
    export = next((c for c in copies if c.kind == "export"), None)
    if export is not None:  # a round trip keeps the session exactly as it was exported
        row["ended_at"], row["end_reason"] = export.fields.get("ended_at"), export.fields.get("end_reason")
    else:
        row["ended_at"] = times[-1] if times else row["started_at"]
        row["end_reason"] = IMPORTED_END_REASON
    for name in _COUNTER_DEFAULTS:
        row[name] = row.get(name) or 0
    return row
