"""A messages row as the import carries it: the v6 columns after `id`, in table order, built from a
message's parsed values. The readers' fast path (importers/jsonl.py:read_plain) and the import's
planning (ingest/planning/prepared.py) build rows here, so both spell every value alike.

A row holds the first SHORT_ROW columns, or all of them when any of the last five has a value
(nearly every legacy message needs only the first seven, and binding a NULL costs more than
binding text).
"""

from __future__ import annotations

from typing import Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.schema import MESSAGE_FIELDS

MESSAGE_COLUMNS: tuple[str, ...] = MESSAGE_FIELDS[1:]  # all but the id SQLite gives
SHORT_ROW = 7  # columns of a row whose last five would all be NULL
NO_TAIL: tuple[None, ...] = (None,) * (len(MESSAGE_COLUMNS) - SHORT_ROW)

Row = tuple[Any, ...]
TIMESTAMP = MESSAGE_COLUMNS.index("timestamp")  # a row's time, short or whole


def json_column(value: Any) -> str | None:
    """A JSON column's text: a parsed value as Hermes spells it; text (or NULL) as it is."""
    if value is None or isinstance(value, str):
        return value
    return jsonutil.dumps_parsed(value)  # every value here was read by a JSON parser


def message_row(session_id: str, role: str, content: Any, tool_call_id: str | None, tool_calls: Any,
                tool_name: str | None, timestamp: float, tail: tuple[Any, ...]) -> Row:
    """One messages row in MESSAGE_COLUMNS order from a message's values; `tail` is its token_count,
    finish_reason, reasoning, reasoning_details and codex_reasoning_items. A row whose tail is all
    NULL stops after `timestamp`."""
    # (The checks for the usual text and NULL inline: this runs for every message imported.)
    if content is not None and type(content) is not str:
        content = jsonutil.encode_content(content)
    if tool_calls is not None and type(tool_calls) is not str:
        tool_calls = json_column(tool_calls)
    row: Row = (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp)
    if tail is not NO_TAIL and tail != NO_TAIL:
        row += (*tail[:3], json_column(tail[3]), json_column(tail[4]))
    return row


def tool_call_increment(role: str, tool_calls: Any) -> int:
    """How much one message adds to `tool_call_count`: a list counts its length, other values 1."""
    if role == "tool" or tool_calls is None:
        return 0
    return len(tool_calls) if isinstance(tool_calls, list) else 1
