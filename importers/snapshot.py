"""Read whole-object session files: `session_{id}.json` snapshots, /save files and ShareGPT logs."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import tzinfo
from pathlib import Path
from typing import Any

from hermes_state_tools.core.records import SOURCE_FROM_SNAPSHOT, LegacyMessage, LegacySession, Problem
from hermes_state_tools.importers.build import (
    build_session,
    copy_name_problem,
    file_id,
    no_id_problem,
    platform_source,
    usable_id,
)
from hermes_state_tools.importers.messages import Where, normalise_message
from hermes_state_tools.importers.sharegpt import convert_conversations
from hermes_state_tools.importers.text import read_document
from hermes_state_tools.importers.timestamps import parse_timestamp

SNAPSHOT_FALLBACK_SOURCE = "cli"  # snapshots, /save files and logs came from the agent, mostly the CLI
SAVE_PREFIX = "hermes_conversation_"
# The gateway gave its agent a mirrored delivery as `[Delivered from {mirror_source}] {content}`
# (gateway/run.py, February-May 2026), so the agent's snapshot holds the mirror line that way.
_DELIVERED = re.compile(r"\[Delivered from ([^\]\n]+)\] (.*)", re.S)


def read_snapshot(
    path: Path, file: str, tz: tzinfo | None = None, fallback_source: str | None = None
) -> Iterator[LegacySession | Problem]:
    """Yield the problems of a snapshot, /save or ShareGPT file, then its session."""
    document = read_document(path, file)
    yield from document.problems
    if document.state == "invalid":
        return
    value = document.value if document.state == "ok" else {}
    if not isinstance(value, dict):
        detail = f"file holds a JSON {type(value).__name__}, not an object"
        yield Problem(file, None, "not_object", detail, True)
        return
    session_id, kind, extra, problems = _identity(path, file, value)
    yield from problems
    if not usable_id(session_id):
        yield no_id_problem(file)
        return
    key = "conversations" if kind == "sharegpt" else "messages"
    records = value.get(key)
    if not isinstance(records, list):
        if records is not None:
            detail = f"{key} is a JSON {type(records).__name__}, not a list; kept in the session's extra"
            yield Problem(file, None, "wrong_type", detail, True)
        records, key = [], ""
    if kind == "sharegpt":
        messages, problems, more = convert_conversations(records, session_id, file)
        extra.update(more)
    else:
        messages, problems = _messages(records, file, tz)
    yield from problems
    header = {k: v for k, v in value.items() if k not in (key, "session_id")}
    yield from _session(header, session_id, file, kind, messages, extra, tz, fallback_source)


def _identity(path: Path, file: str, value: dict[str, Any]) -> tuple[str, str, dict[str, Any], list[Problem]]:
    """Return the session id, kind, first extra entries and problems; the file name's id wins."""
    inner = value.get("session_id")
    if path.name.startswith(SAVE_PREFIX):
        copied = [problem] if (problem := copy_name_problem(file, path.stem)) is not None else []
        if isinstance(inner, str) and inner:
            return inner, "save", {}, copied
        # A stable id from the file name (a copy's: its original's), so a re-run never creates the session twice.
        return "saved_" + file_id(path.stem).removeprefix(SAVE_PREFIX), "save", {}, copied
    named = path.stem.removeprefix("session_")
    session_id = file_id(named)
    copied = [problem] if (problem := copy_name_problem(file, named)) is not None else []
    kind = "sharegpt" if "conversations" in value and "messages" not in value else "snapshot"
    if not usable_id(session_id) and isinstance(inner, str) and usable_id(inner):
        return inner, kind, {}, []  # `session_.json`: the id inside is the only one there is
    if inner is None or inner == session_id:
        return session_id, kind, {}, copied
    detail = (f"the file name says {session_id!r}, the file says {inner!r}; the file name's id is used "
              "(unless the id inside is a compression child of it)")
    mismatch = Problem(file, None, "session_id_mismatch", detail)
    return session_id, kind, {"snapshot_session_id": inner}, [*copied, mismatch]


_SAVED_NAME = re.compile(r"hermes_conversation_(\d{4})(\d{2})(\d{2})_(\d{2})(\d{2})(\d{2})\.json$")


def _saved_at(file: str, tz: tzinfo | None) -> float | None:
    """When a /save file without session_start was written: the TUI wrote only {model, messages},
    under a name holding its local date and time (hermes_conversation_%Y%m%d_%H%M%S.json)."""
    found = _SAVED_NAME.fullmatch(file_id(os.path.basename(file).removesuffix(".json")) + ".json")  # a copy's too
    if found is None:
        return None
    year, month, day, hour, minute, second = found.groups()
    return parse_timestamp(f"{year}-{month}-{day}T{hour}:{minute}:{second}", tz)


def _messages(records: list[Any], file: str, tz: tzinfo | None) -> tuple[list[LegacyMessage], list[Problem]]:
    """Normalise a snapshot's messages list."""
    messages: list[LegacyMessage] = []
    problems: list[Problem] = []
    for position, record in enumerate(records, 1):
        message, found = normalise_message(record, Where(file, None, position), tz)
        problems.extend(found)
        if message is not None:
            messages.append(_mirrored(message))
    return messages, problems


def _mirrored(message: LegacyMessage) -> LegacyMessage:
    """A mirror line as the transcript holds it: its text, flag and source (tagged text in extra)."""
    if message.role != "assistant" or not isinstance(message.content, str) or "mirror" in message.extra:
        return message
    found = _DELIVERED.fullmatch(message.content)
    if found is None:
        return message
    source = found.group(1)
    marks = {"mirror": True, **({"mirror_source": source} if source != "another session" else {})}
    extra = {**message.extra, **marks, "original_content": message.content}
    return replace(message, content=found.group(2), extra=extra)


def _session(
    header: dict[str, Any],
    session_id: str,
    file: str,
    kind: str,
    messages: list[LegacyMessage],
    extra: dict[str, Any],
    tz: tzinfo | None,
    fallback: str | None,
) -> Iterator[LegacySession | Problem]:
    """Yield the notices, then the session with the header's fields; every other key goes to extra."""
    fields: dict[str, Any] = {}
    for key in ("model", "system_prompt"):
        if isinstance(header.get(key), str):
            value = header.pop(key)
            if value.strip():  # "" (an unknown model, `system_prompt or ""`) is no value
                fields[key] = value
    started = parse_timestamp(header.get("session_start"), tz)
    if started is None and kind == "save" and "session_start" not in header:
        started = _saved_at(file, tz)
    if started is not None:
        fields["started_at"] = started
        header.pop("session_start", None)
    elif header.get("session_start") is not None:
        detail = f"session_start {header['session_start']!r:.80} is not a time; kept in the session's extra"
        yield Problem(file, None, "bad_timestamp", detail)
    named = platform_source(header.get("platform"))
    if named is not None:
        del header["platform"]
    source = (named, SOURCE_FROM_SNAPSHOT, fallback or SNAPSHOT_FALLBACK_SOURCE)
    session, problems = build_session(session_id, file, kind, messages, source, fields, {**header, **extra},
                                      parse_timestamp(header.get("last_updated"), tz))
    yield from problems
    yield session
