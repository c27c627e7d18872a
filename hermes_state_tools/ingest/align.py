"""Matching copies of one conversation without timestamps: align message sequences by content.

Snapshots carry no timestamps and one gateway turn shares one, so copies are matched by
what the messages say. A tool result is identified by its tool_call_id (snapshots cut
long tool output short), an assistant tool call by the calls' names and arguments
(ShareGPT logs invent call ids), everything else by role and text.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

import orjson

from hermes_state_tools.core import jsonutil

Key = tuple[Any, ...]


def _canonical(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return repr(value)


def _call_signature(call: Any) -> tuple[str, str]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return ("", _canonical(call))
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        arguments = jsonutil.loads_or_raw(arguments)
    return (str(function.get("name") or ""), _canonical(arguments))


def message_key(role: str, content: Any, tool_call_id: str | None, tool_calls: Any,
                generated_call_id: bool = False) -> Key:
    """What makes two copies of a message the same message."""
    if role == "tool" and tool_call_id and not generated_call_id:
        return ("tool", tool_call_id)
    calls: tuple[tuple[str, str], ...] = ()
    if isinstance(tool_calls, str):  # as stored (an export of rows another program wrote)
        tool_calls = jsonutil.loads_or_raw(tool_calls)
    if isinstance(tool_calls, list) and tool_calls:
        calls = tuple(_call_signature(call) for call in tool_calls)
    return (role, _canonical(jsonutil.decode_content(content)), calls)


def align(existing: Sequence[Key], incoming: Sequence[Key]) -> list[int | None]:
    """For each incoming message, the index of the existing message it is, or None when it is new."""
    matched: list[int | None] = [None] * len(incoming)
    matcher = SequenceMatcher(None, existing, incoming, autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            matched[block.b + offset] = block.a + offset
    return matched


def insertion_points(matched: list[int | None]) -> list[int]:
    """For each incoming message, how many existing messages precede it in the merged order."""
    points, after = [], 0
    for index in matched:
        after = index + 1 if index is not None else after
        points.append(after)
    return points
