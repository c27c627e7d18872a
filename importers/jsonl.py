"""Read `{session_id}.jsonl` gateway transcripts, every era, into one LegacySession per file."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import tzinfo
from pathlib import Path
from typing import Any

import orjson

from hermes_state_tools.core.export_format import is_export_record
from hermes_state_tools.core.jsonutil import has_wide_float
from hermes_state_tools.core.records import SOURCE_FROM_META, LegacyMessage, LegacySession, Problem
from hermes_state_tools.core.surrogates import has_surrogate
from hermes_state_tools.importers.build import (
    build_session,
    copy_name_problem,
    file_id,
    no_id_problem,
    platform_source,
    usable_id,
)
from hermes_state_tools.importers.export_reader import is_hermes_export, read_export_lines
from hermes_state_tools.importers.messages import Where, call_names, normalise_message, plain_message, plain_time
from hermes_state_tools.importers.text import JsonLine, iter_json_lines, read_small, split_lines
from hermes_state_tools.importers.timestamps import later_reading, parse_timestamp

JSONL_FALLBACK_SOURCE = "unknown"  # only the gateway wrote these files, but they do not say which platform


def read_jsonl(
    path: Path, file: str, tz: tzinfo | None = None, fallback_source: str | None = None
) -> Iterator[LegacySession | Problem]:
    """Yield the problems of a JSONL file, then its session (or the sessions of an export file)."""
    transcript_id = file_id(path.stem)
    if (copied := copy_name_problem(file, path.stem)) is not None:
        yield copied
    if path.stat().st_size == 0:
        if not usable_id(transcript_id):
            yield no_id_problem(file)
            return
        yield Problem(file, None, "empty_file", "file is empty (0 bytes)")
        yield from _session(transcript_id, file, [], {}, fallback_source)
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
    latest: float | None = None
    for item in items:
        if isinstance(item, Problem):
            yield item
            continue
        if type(item.value) is dict and item.value.get("role") == "session_meta":
            _take_meta(item.value, item.number, meta, extra)
            continue
        if type(item.value) is dict and (message := plain_message(item.value, item.number, tz)) is not None:
            pass  # nearly every line: the careful path below gives the same, plus problems
        else:
            where = Where(file, item.number, len(messages) + 1)
            message, problems = normalise_message(item.value, where, tz)
            yield from problems
            if message is None:
                continue
        message, latest = _in_time_order(message, item.value, latest, tz)
        messages.append(message)
    if not usable_id(session_id):
        yield no_id_problem(file)
        return
    yield from _session(session_id, file, messages, meta, fallback, extra, tz)


def _in_time_order(message: LegacyMessage, record: Any, latest: float | None,
                   tz: tzinfo | None) -> tuple[LegacyMessage, float | None]:
    """The message, read at the later of a repeated hour's two readings when the first would put it
    before the message written ahead of it (naive local times the night summer time ends), and the
    latest time so far."""
    seconds = message.timestamp
    if seconds is None:
        return message, latest
    if latest is not None and seconds < latest and type(record) is dict:
        later = later_reading(seconds, record.get("timestamp"), tz)
        if later is not None and later >= latest:
            message, seconds = replace(message, timestamp=later), later
    return message, seconds if latest is None else max(latest, seconds)


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


@dataclass(frozen=True)
class PlainTranscript:
    """A gateway transcript that needs none of the careful reader's repairs, as `read_plain` read it."""

    session: LegacySession  # its fields and extra exactly as read_jsonl gives them; no messages
    lines: list[dict[str, Any]]  # each message line's object, in file order
    times: list[float]  # each one's time: all known, strictly increasing
    mtime: float  # the file's modification time, as read


def read_plain(path: Path, file: str, tz: tzinfo | None = None,
               fallback_source: str | None = None) -> PlainTranscript | None:
    """A transcript read without building a LegacyMessage per line, or None: then read_jsonl reads it.

    Nearly every transcript of a long-running install is plain: lines of UTF-8 JSON, each an object
    with only the keys and types `plain_message` takes and a time later than the line before. Such
    a file gives read_jsonl no problem, holds no repeated block (every key holds its time) and needs
    no timestamp placed, so the import can turn its lines into rows directly.
    tests/test_plain.py proves both paths plan the same for every file this one takes.
    """
    session_id = path.stem
    if not usable_id(session_id) or has_surrogate(session_id) or file_id(session_id) != session_id:
        # the careful reader reports its new spelling, or the copy's name it reads as its original's
        return None
    status, data = read_small(path)
    if data is None:
        return None
    raw_lines = split_lines(data)
    meta: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    lines: list[dict[str, Any]] = []
    times: list[float] = []
    latest = -math.inf
    loads = orjson.loads
    for number, raw in enumerate(raw_lines, 1):
        try:
            # orjson refuses what the careful reader reports or repairs: a blank line, a byte that is
            # not UTF-8, a BOM, a lone surrogate escape (a trailing CR it skips, as the reader does).
            value = loads(raw)
        except orjson.JSONDecodeError:
            return None
        if type(value) is not dict:
            return None
        role = value.get("role")
        if role == "session_meta" or number == 1:
            if has_wide_float(value) or (number == 1 and (is_export_record(value) or is_hermes_export(value))):
                return None  # an export file: read_jsonl reads it as one, whatever its role says
            if role == "session_meta":
                _take_meta(value, number, meta, extra)
                continue
        seconds = plain_time(value, tz)  # also refuses a widened float, as has_wide_float does above
        if seconds is None or seconds <= latest:
            return None
        latest = seconds
        lines.append(value)
        times.append(seconds)
    if not lines:
        return None
    unnamed = [line for line in lines if line["role"] == "tool" and line.get("tool_name") is None]
    if unnamed:  # as fill_tool_names names them
        names = call_names(line.get("tool_calls") for line in lines)
        for line in unnamed:
            if line.get("tool_call_id") in names:
                line["tool_name"] = names[line["tool_call_id"]]
    *problems, session = _session(session_id, file, [], meta, fallback_source, extra, tz)
    if problems or not isinstance(session, LegacySession):
        return None
    return PlainTranscript(session, lines, times, status.st_mtime)
