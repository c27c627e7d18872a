"""Read `{session_id}.jsonl` gateway transcripts, every era, into one LegacySession per file."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from datetime import tzinfo
from pathlib import Path
from typing import Any

from hermes_state_tools.core.export_format import is_export_record
from hermes_state_tools.core.records import SOURCE_FROM_META, LegacyMessage, LegacySession, Problem
from hermes_state_tools.importers.build import build_session, no_id_problem, platform_source, usable_id
from hermes_state_tools.importers.export_reader import is_hermes_export, read_export_lines
from hermes_state_tools.importers.messages import Where, normalise_message
from hermes_state_tools.importers.text import JsonLine, iter_json_lines
from hermes_state_tools.importers.timestamps import parse_timestamp

JSONL_FALLBACK_SOURCE = "unknown"  # only the gateway wrote these files, but they do not say which platform


def read_jsonl(
    path: Path, file: str, tz: tzinfo | None = None, fallback_source: str | None = None
) -> Iterator[LegacySession | Problem]:
    """Yield the problems of a JSONL file, then its session (or the sessions of an export file)."""
    transcript_id = path.stem
    if path.stat().st_size == 0:
        if not usable_id(transcript_id):
            yield no_id_problem(file)
            return
        yield Problem(file, None, "empty_file", "file is empty (0 bytes)")
        yield from _session(path.stem, file, [], {}, fallback_source)
        return
    items = iter_json_lines(path, file)
    head: list[JsonLine | Problem] = []
    for item in items:
        head.append(item)
        if isinstance(item, JsonLine):
            break
    stream = itertools.chain(head, items)
    first = head[-1].value if head and isinstance(head[-1], JsonLine) else None
    if is_export_record(first) or is_hermes_export(first):
        yield from read_export_lines(stream, file, tz)
    else:
        yield from _read_transcript(stream, transcript_id, file, tz, fallback_source)


def _read_transcript(
    items: Iterable[JsonLine | Problem], session_id: str, file: str, tz: tzinfo | None, fallback: str | None
) -> Iterator[LegacySession | Problem]:
    """Yield the problems of a gateway transcript as they come, then its session."""
    messages: list[LegacyMessage] = []
    meta: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for item in items:
        if isinstance(item, Problem):
            yield item
        elif isinstance(item.value, dict) and item.value.get("role") == "session_meta":
            _take_meta(item.value, item.number, meta, extra)
        else:
            where = Where(file, item.number, len(messages) + 1)
            message, problems = normalise_message(item.value, where, tz)
            yield from problems
            if message is not None:
                messages.append(message)
    if not usable_id(session_id):
        yield no_id_problem(file)
        return
    yield from _session(session_id, file, messages, meta, fallback, extra, tz)


def _take_meta(record: dict[str, Any], number: int, meta: dict[str, Any], extra: dict[str, Any]) -> None:
    """Merge a session_meta line into `meta`; a line that contradicts an earlier one is kept whole."""
    values = {k: v for k, v in record.items() if k != "role" and not (k == "content" and v is None)}
    if any(key in meta and meta[key] != value for key, value in values.items()):
        extra[f"session_meta_line_{number}"] = record
        return
    meta.update(values)


def _session(
    session_id: str,
    file: str,
    messages: list[LegacyMessage],
    meta: dict[str, Any],
    fallback: str | None,
    extra: dict[str, Any] | None = None,
    tz: tzinfo | None = None,
) -> Iterator[LegacySession | Problem]:
    """Yield the duplicate-block notices, then the session with session_meta's fields and extra."""
    extra = dict(extra or {})
    fields: dict[str, Any] = {}
    for key, value in meta.items():
        started = parse_timestamp(value, tz) if key == "timestamp" else None
        if key == "model" and isinstance(value, str):
            if value.strip():  # eras before April 2026 wrote "model": "": no value, the next source wins
                fields["model"] = value
        elif started is not None:
            fields["started_at"] = started
        elif key != "platform" or platform_source(value) is None:
            extra[key] = value
    source = (platform_source(meta.get("platform")), SOURCE_FROM_META, fallback or JSONL_FALLBACK_SOURCE)
    session, problems = build_session(session_id, file, "jsonl", messages, source, fields, extra)
    yield from problems
    yield session
