"""Copies of one message that differ only where Hermes' secret redaction masked them (redaction.py).

A JSON snapshot of a newer Hermes holds message text with secrets masked; state.db and the JSONL
hold it as said. Such copies are one message, and the text without the masks is the one kept. A
pair is considered only where the alignment leaves both unmatched between the same two matched
messages (align.pair_in_gaps), for messages of the same role, tool call id and tool calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.records import LegacyMessage, LegacySession, Problem
from hermes_state_tools.ingest.copies.align import Key, align, comparable_text, pair_in_gaps
from hermes_state_tools.ingest.copies.redaction import has_mask, unredacted_side


@dataclass(frozen=True)
class Copy:
    """What comparing needs of one copy of a message."""

    role: str
    tool_call_id: str | None
    content: Any  # None for a stored row whose text was not read (it holds no mask)
    stored: bool  # a row in the database (its text is replaced only by text)

    @classmethod
    def of(cls, message: LegacyMessage) -> Copy:
        return cls(message.role, message.tool_call_id, message.content, False)


def masked_notice(copy: LegacySession, count: int) -> Problem:
    return Problem(copy.file, None, "redacted_copy", (
        f"session {copy.session_id}: {count} message(s) differ from another copy only where Hermes masked "
        "secrets; each is stored once, with its text as the copy without the masks has it"))


def _plain_text(content: Any) -> bool:
    return isinstance(content, str) and not content.startswith(jsonutil.MULTIMODAL_PREFIX)


def unmasked_side(first: Copy, other: Copy, texts: Callable[[Copy], str | None] | None = None) -> int | None:
    """0 when `other` is `first` with secrets masked, 1 when `first` is `other` masked, None when
    neither is (equal texts included) or `first` is a stored row that only parts could unmask.
    `texts` gives a copy's comparable text (a cache, when one copy is compared with many)."""
    if first.role != other.role or first.tool_call_id != other.tool_call_id or first.content is None:
        return None
    if first.content == other.content:
        return None
    text_of = texts or _comparable
    ours, theirs = text_of(first), text_of(other)
    if ours is None or theirs is None:
        return None
    side = unredacted_side(ours, theirs)
    if side is None and ours == theirs:  # the same outside their <think> blocks: a secret masked in one
        side = unredacted_side(*(comparable_text(c.role, c.content, reasoning=True) or "" for c in (first, other)))
    if side == 1 and first.stored and not (_plain_text(first.content) and _plain_text(other.content)):
        return None  # a stored text is replaced by text only; the copy's parts stay a message of their own
    return side


def _comparable(copy: Copy) -> str | None:
    return comparable_text(copy.role, copy.content)


def pair_masked(matched: list[int | None], firsts: Callable[[int], Copy], first_keys: list[Key],
                incoming: list[Copy], keys: list[Key]) -> list[int | None]:
    """`matched` (incoming index -> first-copy index) with the masked copies paired in place."""
    if all(index is not None for index in matched):
        return matched

    known: dict[int, str | None] = {}  # by id(): the copies live as long as this call

    def text_of(copy: Copy) -> str | None:
        if id(copy) not in known:
            known[id(copy)] = _comparable(copy)
        return known[id(copy)]

    views: dict[int, Copy] = {}

    def same(first: int, new: int) -> bool:
        if first_keys[first] == keys[new]:
            return True  # the same text, which the alignment without masked texts left in a gap (realigned)
        if first_keys[first][0] != keys[new][0] or first_keys[first][2:] != keys[new][2:]:
            return False  # another role, other tool calls (the key's third part), another tool call id
        view = views.setdefault(first, firsts(first))
        return unmasked_side(view, incoming[new], text_of) is not None

    return pair_in_gaps(matched, len(first_keys), same)


def _masked_out(keys: list[Key], copies: Sequence[Copy], side: str) -> list[Key] | None:
    """`keys` with those of texts that hold masks made unique, so the alignment never matches them (None
    when no text holds one). A tool result's key is its call id, not its text: it stays."""
    out: list[Key] = list(keys)
    for n, copy in enumerate(copies):
        if len(keys[n]) > 2 and copy.content is not None and (text := _comparable(copy)) and has_mask(text):
            out[n] = ("masked text", side, n)  # equal to no key of either side
    return None if out == keys else out


def realigned(matched: list[int | None], firsts: Callable[[int], Copy], first_keys: list[Key],
              incoming: list[Copy], keys: list[Key]) -> list[int | None]:
    """pair_masked over the alignment, or over the alignment made without the texts that hold masks
    when that pairs more. Equal texts are aligned first, so a masked copy that is some other message's
    exact text ('TOKEN=***' said once, and masked copies of 'TOKEN=abc' and 'TOKEN=def') was matched
    with that message, leaving the copies of the other two no place to pair: each was stored again."""
    paired = pair_masked(matched, firsts, first_keys, incoming, keys)
    if all(index is not None for index in paired):
        return paired
    olds = _masked_out(first_keys, [firsts(n) for n in range(len(first_keys))], "first")
    news = _masked_out(keys, incoming, "incoming")
    if olds is None and news is None:
        return paired
    other = pair_masked(align(olds or first_keys, news or keys), firsts, first_keys, incoming, keys)
    return other if sum(i is not None for i in other) > sum(i is not None for i in paired) else paired
