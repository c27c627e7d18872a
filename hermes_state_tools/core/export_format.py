"""This project's own export format, `hermes-state-export/1`: the line format and writing it.

The reading side is importers/export_reader.py.

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
from collections.abc import Callable
from typing import Any

import orjson

from hermes_state_tools.core import jsonutil

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
        return orjson.dumps(record, default=jsonutil.blob_value) + b"\n"
    except TypeError:
        # orjson refuses lone surrogates and integers wider than 64 bits; the stdlib escapes them.
        return json.dumps(record, ensure_ascii=True, default=jsonutil.blob_value).encode("ascii") + b"\n"


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
