"""Matching copies of one conversation without timestamps: align message sequences by content.

Snapshots carry no timestamps and one gateway turn shares one, so copies are matched by
what the messages say. A tool result is identified by its tool_call_id (snapshots cut
long tool output short), an assistant tool call by the calls' names and arguments
(ShareGPT logs invent call ids), everything else by role and text.

The text compared is what every copy Hermes wrote agrees on, not the text stored:
- a list of parts is compared as the text the gateway wrote into state.db for it
  (`_durable_content`: text parts, and "[screenshot]" for each image, joined by newlines);
- assistant text as the snapshot writer cleaned it (`_clean_session_content`, from March
  2026: <REASONING_SCRATCHPAD> tags became <think>, newline runs touching a think tag were
  squeezed, the text stripped), whichever copy it comes from (the cleaning is idempotent);
- assistant text without its <think> blocks: a ShareGPT log (February 2026) holds them apart, as
  the message's reasoning, where the JSONL and state.db keep them in the text;
- a lone UTF-16 surrogate as the U+FFFD it is stored as.
Long texts are compared by a digest, so the keys of a big session never hold its text twice.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher
from itertools import pairwise
from typing import Any

import orjson

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.surrogates import SURROGATE

Key = tuple[Any, ...]


_IMAGE_PART_TYPES = {"image", "image_url", "input_image"}
_BEFORE_THINK = re.compile(r"\n+(<think>)")
_AFTER_THINK = re.compile(r"(</think>)\n+")
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.S)
_DIGEST_FROM = 64  # characters: shorter texts are their own key


def durable_text(parts: list[Any]) -> str | None:
    """The text the gateway stored for a list of parts (agent/session_persistence.py)."""
    texts = [str(p.get("text", "")) if p.get("type") == "text" else "[screenshot]" for p in parts
             if isinstance(p, dict) and (p.get("type") == "text" or p.get("type") in _IMAGE_PART_TYPES)]
    return "\n".join(texts) if texts else None


def cleaned_text(text: str) -> str:
    """Assistant text as the snapshot writer saved it (run_agent.py _clean_session_content)."""
    if "<REASONING_SCRATCHPAD>" in text:
        text = text.replace("<REASONING_SCRATCHPAD>", "<think>").replace("</REASONING_SCRATCHPAD>", "</think>")
    if "think>" in text:
        text = _AFTER_THINK.sub(r"\1\n", _BEFORE_THINK.sub(r"\n\1", text))
    return text


def _text_key(text: str) -> str | bytes:
    text = text.strip()
    if len(text) < _DIGEST_FROM:
        return SURROGATE.sub("\ufffd", text)
    encoded = text.encode("utf-8", "surrogatepass")
    if b"\xed" in encoded:  # only a surrogate (or U+D000-U+DFFF Hangul) encodes with a 0xED lead byte here
        encoded = SURROGATE.sub("\ufffd", text).encode("utf-8")
    return hashlib.blake2b(encoded, digest_size=16).digest()


def content_key(role: str, content: Any) -> str | bytes:
    """What two copies of a message's content agree on (see the module's notes)."""
    content = jsonutil.decode_content(content)
    if isinstance(content, list):
        content = durable_text(content)
    if not isinstance(content, str):
        return _canonical(content)
    return _text_key(_compared(role, content))


def comparable_text(role: str, content: Any, reasoning: bool = False) -> str | None:
    """The text content_key compares, in full (None for content that is no text); with `reasoning`,
    an assistant's <think> blocks kept."""
    content = jsonutil.decode_content(content)
    if isinstance(content, list):
        content = durable_text(content)
    if not isinstance(content, str):
        return None
    return SURROGATE.sub("\ufffd", _compared(role, content, reasoning).strip())


def _compared(role: str, text: str, reasoning: bool = False) -> str:
    """A message's text as copies agree on it: an assistant's cleaned, its <think> blocks left out
    (unless `reasoning`)."""
    if role != "assistant":
        return text
    text = cleaned_text(text)
    return _THINK_BLOCK.sub("", text) if "<think>" in text and not reasoning else text


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
    return (role, content_key(role, content), calls)


Times = tuple[Sequence[float | None], Sequence[float | None]]  # the existing and the incoming messages' times


def align(existing: Sequence[Key], incoming: Sequence[Key], times: Times | None = None) -> list[int | None]:
    """For each incoming message, the index of the existing message it is, or None when it is new.

    Content alone cannot tell which of two equal messages (an "ok" said twice) a copy's one is: the
    matcher takes the first, right when the database holds the start of a session, wrong when it holds
    only its latest turns. With `times`, the alignment made from the end is made too, and where the
    two differ the one whose matched messages lie closer in time is taken (the first on a tie)."""
    forward = _aligned(existing, incoming)
    if times is None or (None not in forward and len(incoming) == len(existing)):
        return forward  # every message matched one to one: nothing to choose
    last_e, last_i = len(existing) - 1, len(incoming) - 1
    backward: list[int | None] = [None] * len(incoming)
    for at, index in enumerate(_aligned(existing[::-1], incoming[::-1])):
        if index is not None:
            backward[last_i - at] = last_e - index
    if backward == forward:
        return forward
    return min((forward, backward), key=lambda matched: _apart(matched, *times))


def _aligned(existing: Sequence[Key], incoming: Sequence[Key]) -> list[int | None]:
    matched: list[int | None] = [None] * len(incoming)
    matcher = SequenceMatcher(None, existing, incoming, autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            matched[block.b + offset] = block.a + offset
    return matched


def _apart(matched: list[int | None], existing: Sequence[float | None], incoming: Sequence[float | None]) -> float:
    """How far apart in time the matched messages are, in all (pairs missing a time count nothing)."""
    total = 0.0
    for new, old in enumerate(matched):
        if old is not None and (a := existing[old]) is not None and (b := incoming[new]) is not None:
            total += abs(a - b)
    return total


CLOCK_SLACK_S = 60.0  # the clock's leeway between Hermes' append of a message and a copy's dating of it
REWRITE_GAP_S = 1.0  # rows one rewrite re-appended lie closer together than this
SHIFTED_RUN = 2  # this many paired messages in a row, all dated late: the copy's clock, not coincidence


def unpair_out_of_time(matched: list[int | None], existing: Sequence[Key], existing_times: Sequence[float | None],
                       incoming: Sequence[Key], incoming_times: Sequence[float | None]) -> list[int | None]:
    """`matched` without the pairs that content alone made and time rules out: the existing message dated
    more than a minute after the copy's dating of it. Hermes appends a message as it happens and a copy
    dates it then or when its turn ends, never before, so such a pair is two messages with one text:
    an "ok" or "Thanks!" of an earlier turn in a copy, the later one stored. Dropping the copy's as
    stored lost it.

    Replies are undone so (an "ok", a "Thanks!"). A question only when the copy asked another one after it,
    still before the stored one was stored: /retry clears a session and appends its last question again
    alone, at the time of the retry, so the last question a copy holds dated late may be the stored one.

    Two things date stored rows late, and their pairs stay: a rewrite (/compress, /undo, /retry) clears
    a session and appends it again at the time of the rewrite, a question and what follows within a
    second; and files read in another time zone than they were written in, which dates a whole stretch
    of the session late (SHIFTED_RUN late pairs in a row, a question and its reply: a coincidence pairs a
    short reply alone).

    A message freed so is paired again, in the gap it left, with the same message of the copy that time
    allows (content matched the stored "ok" with the copy's first "ok" of two, and the second is it)."""
    burst = _rewrite_bursts(existing, existing_times)
    asked_next = _next_question_dates(incoming, incoming_times)

    def judged(old: int, new: int) -> bool:  # whether time may undo this pair (see _judged)
        key = existing[old]
        return _dated_late(existing_times[old], asked_next[new]) if key[0] == "user" else _judged(key)

    def rewritten(new: int) -> bool:  # its stored row and a neighbour's, paired side by side, in one burst
        old = matched[new]
        assert old is not None
        return burst[old] is not None and any(
            0 <= new + step < len(matched) and matched[new + step] == old + step and burst[old + step] == burst[old]
            for step in (-1, 1))

    # late by the clock, a rewrite's rows too: they make a run as long as any, and do not cut one short
    dated_late = [old is not None and _dated_late(existing_times[old], incoming_times[new])
                  for new, old in enumerate(matched)]
    kept = list(matched)
    start = 0
    for new in range(1, len(matched) + 1):
        prior = matched[new - 1]
        if (new < len(matched) and dated_late[new - 1] and dated_late[new] and prior is not None
                and matched[new] == prior + 1):
            continue  # the run of late pairs goes on
        if new - start < SHIFTED_RUN:
            for at in range(start, new):
                old = matched[at]
                if dated_late[at] and old is not None and judged(old, at) and not rewritten(at):
                    kept[at] = None
        start = new
    if kept == matched:
        return kept
    return pair_in_gaps(kept, len(existing), lambda old, new: existing[old] == incoming[new] and not (
        judged(old, new) and _dated_late(existing_times[old], incoming_times[new])))


def _next_question_dates(incoming: Sequence[Key], times: Sequence[float | None]) -> list[float | None]:
    """For each incoming message, the earliest date of a question the copy holds after it (None: none)."""
    out: list[float | None] = [None] * len(incoming)
    earliest: float | None = None
    for new in range(len(incoming) - 1, -1, -1):
        out[new] = earliest
        if incoming[new][0] == "user" and (at := times[new]) is not None:
            earliest = at if earliest is None else min(earliest, at)
    return out


def save_time_holds(matched: list[int | None], existing_times: Sequence[float | None], saved_at: float) -> bool:
    """Whether an untimed copy saved at `saved_at` (a snapshot's last_updated) can date its messages by it:
    no two messages in a row that it shares with the store were stored after it. Such a run says the
    save time is wrong (a writer that never moved it on) or a rewrite re-appended them later; a
    coincidence pairs a short reply alone."""
    late = [None if old is None or not _dated_late(existing_times[old], saved_at) else old for old in matched]
    return not any(before is not None and after == before + 1 for before, after in pairwise(late))


def _judged(key: Key) -> bool:
    """Whether time may undo a pair of this message, not a question (those are judged by the copy's next
    one, see unpair_out_of_time): a reply, and not one that names itself (a tool result by its call id, a
    call by its tool and arguments: the ids are compared apart, merge._ids_differ)."""
    return key[0] == "assistant" and not key[2]


def _dated_late(stored: float | None, dated: float | None) -> bool:
    return stored is not None and dated is not None and stored > dated + CLOCK_SLACK_S


def _rewrite_bursts(existing: Sequence[Key], times: Sequence[float | None]) -> list[int | None]:
    """For each existing message, the stretch it lies in (its first index) when rows stored less than
    REWRITE_GAP_S apart hold a user message and more there: what a rewrite re-appends (an /undo that
    leaves one turn re-appends two rows), else None. A turn stored within a second (a script, a fast
    reply) looks the same: only pairs side by side in it count as a rewrite's (a copy holds what the
    rewrite re-appended as it held it), a lone "ok" paired into it does not."""
    marked: list[int | None] = [None] * len(existing)
    start = 0
    for at in range(1, len(existing) + 1):
        here, before = (times[at], times[at - 1]) if at < len(existing) else (None, None)
        if here is not None and before is not None and here - before < REWRITE_GAP_S:
            continue
        if at - start >= 2 and any(key[0] == "user" for key in existing[start:at]):
            marked[start:at] = [start] * (at - start)
        start = at
    return marked


def insertion_points(matched: list[int | None]) -> list[int]:
    """For each incoming message, how many existing messages precede it in the merged order."""
    points, after = [], 0
    for index in matched:
        after = index + 1 if index is not None else after
        points.append(after)
    return points


def pair_in_gaps(matched: list[int | None], existing_count: int, same: Callable[[int, int], bool],
                 most_pairs: int = 10_000) -> list[int | None]:
    """`matched` with more pairs: between two messages the alignment matched, the unmatched incoming
    and existing messages that `same(existing, incoming)` says are one message, in order (the longest
    such pairing). Only there: a message is never paired with one elsewhere in the session. A gap
    whose pairing would cost more than `most_pairs` comparisons is paired in order, each incoming
    message with the first of the next few existing ones it is (a run of 101 masked messages in a
    row was left unpaired: every one of them stored twice)."""
    paired = list(matched)
    start, before = 0, -1
    for at in range(len(matched) + 1):
        if at < len(matched) and matched[at] is None:
            continue
        after = matched[at] if at < len(matched) else existing_count
        assert after is not None
        news, olds = list(range(start, at)), list(range(before + 1, after))
        if news and olds:
            pairs = (_longest_pairing(olds, news, same) if len(news) * len(olds) <= most_pairs
                     else _pairing_in_order(olds, news, same, max(1, most_pairs // len(news))))
            for old, new in pairs:
                paired[new] = old
        start, before = at + 1, after
    return paired


def _pairing_in_order(olds: list[int], news: list[int], same: Callable[[int, int], bool],
                      window: int) -> list[tuple[int, int]]:
    """An order-keeping pairing of a big gap at most `window` comparisons per incoming message: each
    is paired with the first of the next `window` unpaired existing messages it is."""
    pairs, next_old = [], 0
    for new in news:
        for at in range(next_old, min(next_old + window, len(olds))):
            if same(olds[at], new):
                pairs.append((olds[at], new))
                next_old = at + 1
                break
    return pairs


def _longest_pairing(olds: list[int], news: list[int], same: Callable[[int, int], bool]) -> list[tuple[int, int]]:
    """The longest order-keeping pairing of `olds` with `news` under `same` (a small LCS table)."""
    table = [[0] * (len(news) + 1) for _ in range(len(olds) + 1)]
    hits: dict[tuple[int, int], bool] = {}
    for i in range(len(olds) - 1, -1, -1):
        for j in range(len(news) - 1, -1, -1):
            hits[i, j] = same(olds[i], news[j])
            best = max(table[i + 1][j], table[i][j + 1])
            table[i][j] = max(best, table[i + 1][j + 1] + 1) if hits[i, j] else best
    pairs, i, j = [], 0, 0
    while i < len(olds) and j < len(news):
        if hits[i, j] and table[i][j] == table[i + 1][j + 1] + 1:
            pairs.append((olds[i], news[j]))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs
