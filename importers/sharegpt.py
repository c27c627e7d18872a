"""Convert the oldest ShareGPT-style `conversations` (logs/, Feb 2026) to the message shape."""

from __future__ import annotations

import json
import re
from typing import Any

from hermes_state_tools.core.records import GENERATED_CALL_PREFIX, LegacyMessage, Problem
from hermes_state_tools.importers.messages import Where, json_text, normalise_message

ROLES = {"system": "system", "human": "user", "gpt": "assistant", "tool": "tool"}
_TAG = re.compile(r"<(think|tool_call|tool_response)>(.*?)</\1>", re.DOTALL)


class _Pairing:
    """Match tool responses to the latest assistant turn's tool calls, giving calls stable ids."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.pending: list[dict[str, Any]] = []
        self.generated: set[int] = set()

    def start_turn(self, calls: list[dict[str, Any]], position: int) -> None:
        """Remember a turn's calls; a call without an id gets one derived from session and position."""
        self.pending = list(calls)
        for index, call in enumerate(calls):
            if call["id"] is None:
                call["id"] = f"{GENERATED_CALL_PREFIX}{self.session_id}_{position}_{index}"
                self.generated.add(id(call))

    def answer(self, call_id: str | None, name: str | None) -> tuple[str | None, str | None]:
        """Return the (tool_call_id, tool_name) of a response, pairing it with a pending call."""
        call = next((c for c in self.pending if c["id"] == call_id), None) if call_id else None
        if call is None:
            open_calls = [c for c in self.pending if call_id is None or id(c) in self.generated]
            call = next((c for c in open_calls if c["function"]["name"] == name), None)
            call = call or (open_calls[0] if open_calls else None)
        if call is None:
            return call_id, name
        self.pending.remove(call)
        if call_id is not None:
            # The ShareGPT writer dropped the call's id but kept it on the response: restore it.
            call["id"] = call_id
        return call["id"], name or call["function"]["name"]


def convert_conversations(
    entries: list[Any], session_id: str, file: str
) -> tuple[list[LegacyMessage], list[Problem], dict[str, Any]]:
    """Return the messages, problems and session extra (the generated system prompt) of a ShareGPT log."""
    pairing = _Pairing(session_id)
    built: list[tuple[dict[str, Any], dict[str, Any], Where]] = []
    problems: list[Problem] = []
    extra: dict[str, Any] = {}
    for position, entry in enumerate(entries, 1):
        where = Where(file, None, position)
        first_system = "sharegpt_system_prompt" not in extra
        if first_system and isinstance(entry, dict) and entry.get("from") == "system":
            # The first system entry is the generated tool-use prompt, not the real system prompt.
            extra["sharegpt_system_prompt"] = entry.get("value")
            continue
        if not built and _placeholder(entry):
            # The writer of early February 2026 (_convert_to_trajectory_format(messages, "", True))
            # put its user_query "" where the first user message was: no message, the text is lost.
            extra["sharegpt_first_human"] = entry
            problems.append(where.problem("sharegpt_placeholder", "first human entry is the writer's empty "
                                          "user_query, not a message; kept in the session's extra"))
            continue
        records, found = _entry_records(entry, position, pairing)
        problems.extend(where.problem(kind, detail) for kind, detail in found)
        built.extend((record, more, where) for record, more in records)
    messages: list[LegacyMessage] = []
    for record, more, where in built:
        message, found_problems = normalise_message(record, where, extra=more)
        problems.extend(found_problems)
        if message is not None:
            messages.append(message)
    return messages, problems, extra


def _placeholder(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("from") == "human" and entry.get("value") == ""


def _entry_records(
    entry: Any, position: int, pairing: _Pairing
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[tuple[str, str]]]:
    """Return (record, extra) pairs for one entry and the notices its conversion raised."""
    if not isinstance(entry, dict):
        return [(entry, {})], []  # normalise_message reports it
    rest = {key: value for key, value in entry.items() if key not in ("from", "value")}
    source, value = entry.get("from"), entry.get("value")
    role = ROLES.get(source, source) if isinstance(source, str) else None
    if not isinstance(value, str) or role not in ("assistant", "tool"):
        return [({"role": role, "content": value}, rest)], []
    if role == "assistant":
        record, notices = _assistant(value, position, pairing)
        records = [record]
    else:
        records, notices = _tool(value, pairing)
    if records[0].get("content") != value:
        rest["sharegpt_value"] = value
    return [(record, rest if index == 0 else {}) for index, record in enumerate(records)], notices


def _assistant(value: str, position: int, pairing: _Pairing) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Split a gpt value into reasoning, tool calls and the text outside the tags."""
    reasoning: list[str] = []
    calls: list[dict[str, Any]] = []
    notices: list[tuple[str, str]] = []

    def take(match: re.Match[str]) -> str:
        tag, body = match.group(1), match.group(2)
        if tag == "think":
            reasoning.append(body.strip())
            return ""
        call = _tool_call(body) if tag == "tool_call" else None
        if call is None:
            notices.append(("bad_tool_call", f"<{tag}> kept as text: {body.strip()[:80]!r}"))
            return match.group(0)
        calls.append(call)
        return ""

    content = _TAG.sub(take, value)
    pairing.start_turn(calls, position)
    record: dict[str, Any] = {"role": "assistant", "content": content.strip() if content != value else value}
    if reasoning:
        record["reasoning"] = "\n".join(reasoning)
    if calls:
        record["tool_calls"] = calls
    return record, notices


def _tool_call(body: str) -> dict[str, Any] | None:
    """Return the tool_calls entry a <tool_call> body describes, or None when it is not one."""
    data = _json_object(body)
    if data is None or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", {})
    call_id = data.get("id") if isinstance(data.get("id"), str) else None
    arguments = arguments if isinstance(arguments, str) else json_text(arguments)
    return {"id": call_id, "type": "function", "function": {"name": data["name"], "arguments": arguments}}


def _tool(value: str, pairing: _Pairing) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Return one tool record per <tool_response> in a tool value (the whole value when there is none)."""
    bodies = [m.group(2) for m in _TAG.finditer(value) if m.group(1) == "tool_response"]
    if not bodies:
        call_id, name = pairing.answer(None, None)
        return [_tool_record(value, call_id, name)], []
    records, notices = [], []
    for body in bodies:
        data = _json_object(body)
        if data is None:
            notices.append(("bad_tool_response", "<tool_response> is not a JSON object; its text is kept"))
            data = {"content": body.strip()}
        call_id = data.get("tool_call_id") if isinstance(data.get("tool_call_id"), str) else None
        name = data.get("name") if isinstance(data.get("name"), str) else None
        content = data.get("content")
        content = content if isinstance(content, str) or content is None else json_text(content)
        records.append(_tool_record(content, *pairing.answer(call_id, name)))
    return records, notices


def _tool_record(content: str | None, call_id: str | None, name: str | None) -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call_id, "tool_name": name}


def _json_object(text: str) -> dict[str, Any] | None:
    """Return the JSON object a tag body holds, or None."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
