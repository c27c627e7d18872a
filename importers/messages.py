"""Normalise one legacy message object to the v6 message columns, keeping every other key in `extra`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import tzinfo
from typing import Any, NamedTuple

from hermes_state_tools.core.jsonutil import has_wide_float
from hermes_state_tools.core.records import LegacyMessage, Problem
from hermes_state_tools.importers.timestamps import parse_timestamp

TEXT_COLUMNS = ("tool_call_id", "tool_name", "finish_reason", "reasoning")
JSON_COLUMNS = ("reasoning_details", "codex_reasoning_items")
_KNOWN = {"role", "content", "timestamp", "tool_calls", "token_count", "name", *TEXT_COLUMNS, *JSON_COLUMNS}
_INT64 = 2**63


class Where(NamedTuple):
    """Where a record came from: the file, its line (None in whole-object files) and its position."""

    file: str
    line: int | None
    position: int  # 1-based position of the message in the file (or in its line)
    shared: bool = False  # True when several messages share the line (export files)

    def problem(self, kind: str, detail: str, failure: bool = False) -> Problem:
        """Return a Problem located here, naming the message's position where the line does not."""
        prefix = f"message {self.position}: " if self.line is None or self.shared else ""
        return Problem(self.file, self.line, kind, prefix + detail, failure)


def json_text(value: Any) -> str:
    """Return the JSON text Python's json.dumps writes (Hermes' own spelling), non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False)


def normalise_message(
    record: Any, where: Where, tz: tzinfo | None = None, extra: dict[str, Any] | None = None
) -> tuple[LegacyMessage | None, list[Problem]]:
    """Return the message a record describes (None when it cannot be one) and the problems found."""
    if extra is None and type(record) is dict:
        message = plain_message(record, where.line, tz)
        if message is not None:
            return message, []
    if not isinstance(record, dict):
        kind = type(record).__name__
        return None, [where.problem("not_object", f"record is a JSON {kind}, not an object", True)]
    role = record.get("role")
    if not isinstance(role, str) or not role:
        keys = ", ".join(sorted(map(str, record))[:8]) or "none"
        return None, [where.problem("missing_role", f"record has no role (keys: {keys})", True)]
    problems: list[Problem] = []
    kept = dict(extra or {})
    columns = _columns(record, kept, problems, where)
    columns["timestamp"] = _timestamp(record.get("timestamp"), tz, kept, problems, where)
    _tool_name(record, role, columns, kept)
    for key, value in record.items():
        if key not in _KNOWN:
            kept[key] = value
    return LegacyMessage(role=role, extra=kept, line=where.line, **columns), problems


# Keys a plain record may hold, with the types that need no conversion (token_count, `name`
# and anything unknown take the careful path).
PLAIN_TYPES: dict[str, Any] = {
    "role": str, "content": (str, list), "timestamp": object, "tool_calls": list, "tool_call_id": str,
    "tool_name": str, "finish_reason": str, "reasoning": str, "reasoning_details": object,
    "codex_reasoning_items": object,
}


# PLAIN_TYPES as sets of exact types: every record here was made by a JSON parser (no subclasses).
_JSON_TYPES: frozenset[type] = frozenset((str, int, float, bool, list, dict, type(None)))


def _exact(kind: Any) -> frozenset[type]:
    if kind is object:
        return _JSON_TYPES
    kinds: tuple[type, ...] = kind if isinstance(kind, tuple) else (kind,)
    return frozenset((*kinds, type(None)))


_PLAIN_KINDS = {key: _exact(kind) for key, kind in PLAIN_TYPES.items()}
_NO_FLOAT: frozenset[type] = frozenset((str, int, bool, type(None)))  # values that cannot hold a float


def is_plain(record: dict[str, Any], check_floats: bool = False) -> bool:
    """Whether a record holds only known keys of plain types, and a role; with `check_floats`, also
    no float of 2**63 or more (maybe an integer orjson widened: has_wide_float). One pass."""
    for key, value in record.items():
        kinds = _PLAIN_KINDS.get(key)
        kind = type(value)
        if kinds is None or kind not in kinds or (check_floats and kind not in _NO_FLOAT and has_wide_float(value)):
            return False
    return bool(record.get("role"))


def plain_message(record: dict[str, Any], line: int | None, tz: tzinfo | None) -> LegacyMessage | None:
    """The message of a plain record (nearly every line); None sends anything else down the careful
    path (normalise_message), which gives the same result plus its problems."""
    if not is_plain(record):
        return None
    get = record.get
    stamp = get("timestamp")
    seconds = parse_timestamp(stamp, tz) if stamp is not None else None
    if stamp is not None and seconds is None:
        return None
    return LegacyMessage(
        role=record["role"], content=get("content"), timestamp=seconds, tool_call_id=get("tool_call_id"),
        tool_calls=get("tool_calls"), tool_name=get("tool_name"), finish_reason=get("finish_reason"),
        reasoning=get("reasoning"), reasoning_details=get("reasoning_details"),
        codex_reasoning_items=get("codex_reasoning_items"), extra={}, line=line,
    )


def _columns(
    record: dict[str, Any], extra: dict[str, Any], problems: list[Problem], where: Where
) -> dict[str, Any]:
    """Return the column values of a record; a value of the wrong type moves to extra["original_<key>"]."""
    columns: dict[str, Any] = {key: record.get(key) for key in JSON_COLUMNS}
    for key, fits in _CHECKS:
        value = record.get(key)
        if value is None or fits(value):
            columns[key] = value
            continue
        extra[f"original_{key}"] = value
        textual = key == "content" or key in TEXT_COLUMNS
        columns[key] = json_text(value) if textual else None
        stored = "its JSON text is stored" if textual else "the column is left empty"
        kept = f"the value is kept in extra['original_{key}']"
        detail = f"{key} is a JSON {type(value).__name__}; {stored}, {kept}"
        problems.append(where.problem("wrong_type", detail))
    return columns


def _is_content(value: Any) -> bool:
    return isinstance(value, (str, list))


def _is_list(value: Any) -> bool:
    return isinstance(value, list)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_int64(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64


# Which type each column takes; built once (normalise_message runs for every message read).
_CHECKS: tuple[tuple[str, Any], ...] = (
    ("content", _is_content), ("tool_calls", _is_list), ("token_count", _is_int64),
    *((key, _is_text) for key in TEXT_COLUMNS),
)


def _timestamp(
    value: Any, tz: tzinfo | None, extra: dict[str, Any], problems: list[Problem], where: Where
) -> float | None:
    """Return epoch seconds for a message's timestamp; an unreadable one is reported and kept in extra."""
    if value is None:
        return None
    seconds = parse_timestamp(value, tz)
    if seconds is None:
        extra["original_timestamp"] = value
        problems.append(where.problem("bad_timestamp", f"timestamp {value!r:.80} is not a time; left empty"))
    return seconds


def _tool_name(record: dict[str, Any], role: str, columns: dict[str, Any], extra: dict[str, Any]) -> None:
    """Use a tool row's `name` as its tool name; keep `name` in extra when it says anything else."""
    name = record.get("name")
    if name is None:
        return
    if role == "tool" and columns["tool_name"] is None and isinstance(name, str):
        columns["tool_name"] = name
    elif name != columns["tool_name"]:
        extra["name"] = name


def call_names(tool_calls: Iterable[Any]) -> dict[str, str]:
    """Call id -> function name for every well-formed call in these messages' tool_calls (the first wins)."""
    names: dict[str, str] = {}
    for calls in tool_calls:
        for call in calls or ():
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if isinstance(name, str) and isinstance(call.get("id"), str):
                names.setdefault(call["id"], name)
    return names


def fill_tool_names(messages: list[LegacyMessage]) -> list[LegacyMessage]:
    """Give tool rows without a name the name of the assistant tool call with the same id (in place:
    the reader that built these messages has not handed them on yet)."""
    names = call_names(m.tool_calls for m in messages)
    for message in messages:
        if message.role == "tool" and message.tool_name is None and message.tool_call_id in names:
            message.tool_name = names[message.tool_call_id]
    return messages
