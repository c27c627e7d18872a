"""Read `{session_id}.jsonl` gateway transcripts, every era, into one LegacySession per file."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import tzinfo
from pathlib import Path
from typing import Any

import orjson

from hermes_state_tools.core.export_format import is_export_record
from hermes_state_tools.core.frozen import built
from hermes_state_tools.core.jsonutil import has_wide_float
from hermes_state_tools.core.message_rows import NO_TAIL, TIMESTAMP, Row, message_row, tool_call_increment
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
from hermes_state_tools.importers.messages import PLAIN_TYPES, Where, call_names, normalise_message, plain_message
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
    if meta and any(key in meta and meta[key] != value for key, value in values.items()):
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
    """A gateway transcript that needs none of the careful reader's repairs, as `read_plain` read it:
    its messages straight as messages rows, with no LegacyMessage made for any of them."""

    session: LegacySession  # its fields and extra exactly as read_jsonl gives them; no messages
    rows: tuple[Row, ...]  # each message line's row (core/message_rows.py), in file order, times rising
    tool_calls: int  # what the messages add to tool_call_count
    mtime: float  # the file's modification time, as read

    @property
    def span(self) -> list[float]:
        """The first and the last message's time."""
        return [self.rows[0][TIMESTAMP], self.rows[-1][TIMESTAMP]]


def read_plain(path: Path | str, file: str, tz: tzinfo | None = None,
               fallback_source: str | None = None) -> PlainTranscript | None:
    """A transcript read straight into messages rows, or None: then read_jsonl reads it.

    Nearly every transcript of a long-running install is plain: lines of UTF-8 JSON, each an object
    with only the keys and types `is_plain` takes and a time later than the line before. Such a
    file gives read_jsonl no problem, holds no repeated block (every key holds its time) and needs
    no timestamp placed, so its lines become rows directly, in one pass.
    tests/test_plain.py proves both paths plan the same for every file this one takes.
    """
    session_id = _stem(path)
    if not usable_id(session_id) or has_surrogate(session_id) or file_id(session_id) != session_id:
        # the careful reader reports its new spelling, or the copy's name it reads as its original's
        return None
    status, data = read_small(path)
    if data is None:
        return None
    meta: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    rows: list[Row] = []
    calls: list[list[Any]] = []  # every message's tool calls, to name the tool rows that lack a name
    unnamed: list[int] = []  # those rows' places
    latest, tool_calls = -math.inf, 0
    loads = orjson.loads
    for number, raw in enumerate(split_lines(data), 1):
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
        row = _plain_row(session_id, value, tz)
        if row is None or row[TIMESTAMP] <= latest:
            return None
        latest = row[TIMESTAMP]
        if role == "tool" and row[5] is None:
            unnamed.append(len(rows))
        rows.append(row)
        if (listed := value.get("tool_calls")) is not None:
            calls.append(listed)
            tool_calls += tool_call_increment(row[1], listed)
    if not rows:
        return None
    *problems, session = _session(session_id, file, [], meta, fallback_source, extra, tz)
    if problems or not isinstance(session, LegacySession):
        return None
    if unnamed:
        _name_tools(rows, unnamed, calls)
    return built(PlainTranscript, session=session, rows=tuple(rows), tool_calls=tool_calls, mtime=status.st_mtime)


def _stem(path: Path | str) -> str:
    """Path.stem, of a path given as text too (the reader keeps ten thousand names as text)."""
    if isinstance(path, Path):
        return path.stem
    name = os.path.basename(path)
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


_PLAIN_KEYS = frozenset(PLAIN_TYPES)
# The keys of a plain record that fill a row's tail (token_count is never plain): most records hold none.
_TAIL_KEYS = frozenset(("finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items"))


def _plain_row(session_id: str, record: dict[str, Any], tz: tzinfo | None) -> Row | None:
    """The messages row of a record `is_plain` takes, holding no widened float and a time; None for any
    other (the careful reader's plain_message and normalise_message then decide). is_plain's checks
    are spelled out, on the values the row needs anyway: calling it costs a tenth more of read_plain
    (0.85 s against 0.77 s for 10,000 files). tests/test_plain.py holds the two to one answer."""
    if not record.keys() <= _PLAIN_KEYS:
        return None
    get = record.get
    role, content, call_id, calls, name = get("role"), get("content"), get("tool_call_id"), get("tool_calls"), \
        get("tool_name")
    if type(role) is not str or not role or not (call_id is None or type(call_id) is str) or not (
            name is None or type(name) is str):
        return None
    if (content is not None and type(content) is not str and type(content) is not list) or (
            calls is not None and type(calls) is not list):
        return None
    seconds = parse_timestamp(get("timestamp"), tz)  # None too for a widened float: it is past year 9999
    if seconds is None:
        return None
    tail = NO_TAIL if _TAIL_KEYS.isdisjoint(record) else _plain_tail(record)
    if tail is None:
        return None
    row = message_row(session_id, role, content, call_id, calls, name, seconds, tail)
    # A float of 2**63 or more is spelled with an exponent ("9.2e+18"): JSON text without "e+" holds none,
    # so only such text (rare) has its value walked.
    if (calls is not None and "e+" in row[4] and has_wide_float(calls)) or (
            type(content) is list and "e+" in row[2] and has_wide_float(content)):
        return None
    return row


def _plain_tail(record: dict[str, Any]) -> tuple[Any, ...] | None:
    """A plain record's token_count (never plain: None), finish_reason, reasoning, reasoning_details
    and codex_reasoning_items; None when is_plain would refuse one of them."""
    get = record.get
    finish, reasoning, details, items = (get("finish_reason"), get("reasoning"), get("reasoning_details"),
                                         get("codex_reasoning_items"))
    if not (finish is None or type(finish) is str) or not (reasoning is None or type(reasoning) is str):
        return None
    return None if has_wide_float(details) or has_wide_float(items) else (None, finish, reasoning, details, items)


def _name_tools(rows: list[Row], unnamed: list[int], calls: list[list[Any]]) -> None:
    """Name each tool row at these places after the call it answers, as fill_tool_names names it."""
    names = call_names(calls)
    for at in unnamed:
        row = rows[at]
        if row[3] in names:
            rows[at] = (*row[:5], names[row[3]], *row[6:])
