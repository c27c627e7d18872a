"""This project's own export format, `hermes-state-export/1`: both the writing and the reading side.

One session per line of UTF-8 JSON (non-ASCII characters written as themselves)::

    {"format": "hermes-state-export/1",
     "session": {every `sessions` column as stored, `id` included},
     "extra": {the session's extra data},
     "messages": [{every `messages` column except `id` and `session_id`,
                   "extra": {the message's extra data}}, ...]}

In a message, `content` is a string, a list of parts (multimodal) or null; `tool_calls`,
`reasoning_details` and `codex_reasoning_items` are decoded JSON values, not JSON text;
`timestamp` is epoch seconds. A stored value is written decoded only when storing the decoded
value again gives the same text; anything else (text that merely starts like list content,
JSON spelled another way, a JSON string or null) is written as the text it is. Messages keep
the store's order. `import-jsonl` recognises an export file by the `format` key of its first
object and reads every column back, so an export imported into an empty database reproduces
every field (message ids aside).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from datetime import tzinfo
from typing import Any

import orjson

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.records import (
    SOURCE_FALLBACK,
    SOURCE_FROM_INDEX,
    LegacyMessage,
    LegacySession,
    Problem,
)
from hermes_state_tools.core.schema import SESSIONS_COLUMNS
from hermes_state_tools.importers.messages import Where, normalise_message
from hermes_state_tools.importers.text import JsonLine

FORMAT = "hermes-state-export/1"
JSON_COLUMNS = ("tool_calls", "reasoning_details", "codex_reasoning_items")


def export_line(
    session: dict[str, Any],
    messages: list[dict[str, Any]],
    session_extra: dict[str, Any] | None = None,
    message_extras: list[dict[str, Any]] | None = None,
) -> bytes:
    """Return one export line (with its newline) for a sessions row and its messages rows, as stored."""
    extras = message_extras or [{}] * len(messages)
    record = {
        "format": FORMAT,
        "session": {key: value for key, value in session.items() if key != "messages"},
        "extra": session_extra or {},
        "messages": [_export_message(row, extra) for row, extra in zip(messages, extras, strict=True)],
    }
    try:
        return orjson.dumps(record) + b"\n"
    except TypeError:
        # orjson refuses lone surrogates and integers wider than 64 bits; the stdlib escapes them.
        return json.dumps(record, ensure_ascii=True).encode("ascii") + b"\n"


def _export_message(row: dict[str, Any], extra: dict[str, Any] | None) -> dict[str, Any]:
    """Return a messages row in export shape: JSON columns and list content decoded, ids dropped."""
    out = {key: value for key, value in row.items() if key not in ("id", "session_id")}
    for key in JSON_COLUMNS:
        if isinstance(out.get(key), str):
            out[key] = _decoded(out[key], jsonutil.dumps, _IMPORTED_AS[key])
    if isinstance(out.get("content"), str) and out["content"].startswith(jsonutil.MULTIMODAL_PREFIX):
        out["content"] = _decoded(out["content"], jsonutil.encode_content, (list,), jsonutil.MULTIMODAL_PREFIX)
    out["extra"] = extra or {}
    return out


# The decoded values the import takes for each JSON column (anything else it sets aside as a
# wrong type), so only those are written decoded.
_IMPORTED_AS: dict[str, tuple[type, ...]] = {
    "tool_calls": (list,), "reasoning_details": (list, dict), "codex_reasoning_items": (list, dict),
}


def _decoded(stored: str, encode: Callable[[Any], Any], kinds: tuple[type, ...], prefix: str = "") -> Any:
    """The value stored JSON text holds, when it is of a kind the import takes and `encode` (what the
    import does with it) gives the same text back; otherwise the text, which the import stores as is.
    (orjson refuses NaN and Infinity, which it would write as null; a wider-than-64-bit integer it
    reads as a float, and the text then no longer matches.)"""
    try:
        value = orjson.loads(stored.removeprefix(prefix))
    except orjson.JSONDecodeError:
        return stored
    return value if isinstance(value, kinds) and encode(value) == stored else stored


def is_export_record(value: Any) -> bool:
    """Tell whether a parsed line is a hermes-state-export/1 record."""
    return isinstance(value, dict) and value.get("format") == FORMAT


def read_export_lines(
    items: Iterable[JsonLine | Problem], file: str, tz: tzinfo | None = None
) -> Iterator[LegacySession | Problem]:
    """Yield a LegacySession(kind="export") per export line, and the problems of the others."""
    for item in items:
        if isinstance(item, Problem):
            yield item
        else:
            yield from _read_record(item, file, tz)


def _read_record(item: JsonLine, file: str, tz: tzinfo | None) -> Iterator[LegacySession | Problem]:
    """Yield the session one export line holds, or the failure that stops it."""
    value = item.value
    if not is_export_record(value):
        yield Problem(file, item.number, "not_export_record", f"line is not a {FORMAT} session", True)
        return
    session, rows, extra = value.get("session"), value.get("messages"), value.get("extra")
    if not isinstance(session, dict) or not isinstance(session.get("id"), str) or not session["id"]:
        yield Problem(file, item.number, "missing_session_id", "export line names no session id", True)
        return
    if not isinstance(rows, list):
        detail = f"messages is a JSON {type(rows).__name__}, not a list; the session is read without messages"
        yield Problem(file, item.number, "wrong_type", detail, rows is not None)
        rows = []
    messages: list[LegacyMessage] = []
    for position, row in enumerate(rows, 1):
        message, problems = _read_message(row, Where(file, item.number, position, shared=True), tz)
        yield from problems
        if message is not None:
            messages.append(message)
    extra = dict(extra) if isinstance(extra, dict) else {}
    fields = {key: column for key, column in session.items() if key != "id"}
    for key in [k for k, v in fields.items() if not _fits_column(k, v)]:
        extra[f"original_{key}"] = fields.pop(key)
        yield Problem(file, item.number, "wrong_type",
                      f"session field {key!r} is not a {_COLUMN_TYPES.get(key, 'known column')}; "
                      f"kept in extra['original_{key}']")
    rank = SOURCE_FROM_INDEX if isinstance(fields.get("source"), str) else SOURCE_FALLBACK
    fields.setdefault("source", "unknown")
    yield LegacySession(session["id"], file, "export", fields, rank, tuple(messages), extra)


# The sessions columns and their SQLite types: an export line written by hand or by another tool
# may carry anything, and a value SQLite cannot bind must not stop the import of the others.
_COLUMN_TYPES = {column.name: column.decl.split()[0] for column in SESSIONS_COLUMNS}
_INT64 = 2**63


def _fits_column(key: str, value: Any) -> bool:
    kind = _COLUMN_TYPES.get(key)
    if kind is None:
        return False
    if value is None:
        return True
    if kind == "TEXT":
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return kind == "REAL" or (isinstance(value, int) and -_INT64 <= value < _INT64)


def _read_message(row: Any, where: Where, tz: tzinfo | None) -> tuple[LegacyMessage | None, list[Problem]]:
    """Return one exported message with its extra data restored."""
    if not isinstance(row, dict) or not isinstance(row.get("extra"), dict):
        return normalise_message(row, where, tz)
    # A JSON column written as text is the text another program stored: it is stored back as it is.
    stored_text = {key: row[key] for key in JSON_COLUMNS if isinstance(row.get(key), str)}
    columns = {key: value for key, value in row.items() if key != "extra" and key not in stored_text}
    message, problems = normalise_message(columns, where, tz, extra=row["extra"])
    if message is not None:
        for key, text in stored_text.items():
            setattr(message, key, text)
    return message, problems
