"""Read the gateway index `sessions.json` into metadata-only LegacySession records (one per chat)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from datetime import tzinfo
from pathlib import Path
from typing import Any

from hermes_state_tools.core.records import SOURCE_FALLBACK, SOURCE_FROM_INDEX, LegacySession, Problem
from hermes_state_tools.importers.build import platform_source
from hermes_state_tools.importers.text import BOM, decode, read_document
from hermes_state_tools.importers.timestamps import parse_timestamp

_SPACE = re.compile(r"\s*")


_INT64 = 2**63


def _is_count(value: Any) -> bool:
    """An integer a SQLite INTEGER column holds (64 bits; a wider one crashed the whole import once)."""
    return isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64


def _is_cost(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


TYPED_FIELDS: dict[str, Callable[[Any], bool]] = {
    "input_tokens": _is_count,
    "output_tokens": _is_count,
    "cache_read_tokens": _is_count,
    "cache_write_tokens": _is_count,
    "estimated_cost_usd": _is_cost,
    "cost_status": _is_text,
}


def read_index(path: Path, file: str, tz: tzinfo | None = None) -> Iterator[LegacySession | Problem]:
    """Yield one LegacySession(kind="index", has_messages=False) per chat entry, and the problems."""
    document = read_document(path, file)
    if document.state == "invalid":
        entries, problem = _salvage(path, file)
        yield problem
    else:
        yield from document.problems
        value = document.value if document.state == "ok" else {}
        if not isinstance(value, dict):
            detail = f"index is a JSON {type(value).__name__}, not an object"
            yield Problem(file, None, "not_object", detail, True)
            return
        entries = list(value.items())
    for key, entry in entries:
        if key.startswith("_"):
            continue  # "_README" and other notes, not chats
        if not isinstance(entry, dict):
            detail = f"entry {key!r} is a JSON {type(entry).__name__}, not an object; skipped"
            yield Problem(file, None, "skipped_entry", detail)
            continue
        yield from _entry(key, entry, file, tz)


def _after_space(text: str, at: int) -> int:
    """Where the white space at `at` ends (`\\s*` always matches)."""
    match = _SPACE.match(text, at)
    assert match is not None
    return match.end()


def _salvage(path: Path, file: str) -> tuple[list[tuple[str, Any]], Problem]:
    """Return every complete entry before the point where a cut-off index stops parsing."""
    text = decode(path.read_bytes().removeprefix(BOM))[0]
    decoder = json.JSONDecoder()
    entries: list[tuple[str, Any]] = []
    at = _after_space(text, 0)
    if text.startswith("{", at):
        at += 1
        while True:
            try:
                key, end = decoder.raw_decode(text, _after_space(text, at))
                colon = _after_space(text, end)
                if not isinstance(key, str) or not text.startswith(":", colon):
                    break
                value, end = decoder.raw_decode(text, _after_space(text, colon + 1))
            except (ValueError, RecursionError):
                break
            entries.append((key, value))
            at = _after_space(text, end)
            if not text.startswith(",", at):
                break
            at += 1
    detail = f"index is cut off or invalid near character {at}; {len(entries)} complete entries recovered"
    return entries, Problem(file, None, "truncated_index", detail, True)


def _entry(
    key: str, entry: dict[str, Any], file: str, tz: tzinfo | None
) -> Iterator[LegacySession | Problem]:
    """Yield the session an index entry describes: the columns it names, every other key in extra."""
    session_id = entry.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        detail = f"entry {key!r} names no session id; not imported"
        yield Problem(file, None, "missing_session_id", detail, True)
        return
    origin: dict[str, Any] = entry["origin"] if isinstance(entry.get("origin"), dict) else {}
    fields: dict[str, Any] = {}
    for name, fits in TYPED_FIELDS.items():
        value = entry.get(name)
        if value is not None and fits(value):
            fields[name] = float(value) if name == "estimated_cost_usd" else value
        elif isinstance(value, int) and not isinstance(value, bool):
            detail = f"entry {key!r}: {name} {value} does not fit a 64-bit column; kept in the session's extra"
            yield Problem(file, None, "out_of_range", detail)
        elif value is not None:
            detail = f"entry {key!r}: {name} is a JSON {type(value).__name__}; kept in the session's extra"
            yield Problem(file, None, "wrong_type", detail)
    user_id = origin.get("user_id")
    if isinstance(user_id, str) or (isinstance(user_id, int) and not isinstance(user_id, bool)):
        fields["user_id"] = str(user_id)
    started = parse_timestamp(entry.get("created_at"), tz)
    if started is not None:
        fields["started_at"] = started
    named = platform_source(entry.get("platform")) or platform_source(origin.get("platform"))
    if named is not None:
        fields["source"] = named
    consumed = {"session_id", *(name for name in TYPED_FIELDS if name in fields)}
    consumed |= {"created_at"} if started is not None else set()
    consumed |= {"platform"} if platform_source(entry.get("platform")) else set()
    extra = {"session_key": key} | {k: v for k, v in entry.items() if k not in consumed}
    rank = SOURCE_FROM_INDEX if named else SOURCE_FALLBACK
    yield LegacySession(session_id, file, "index", fields, rank, (), extra, has_messages=False)
