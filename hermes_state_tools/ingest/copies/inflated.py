"""The repeats a snapshot of the gateway's double-write bug holds, which the timed copies of its
session do not: the timed copies' multiplicity wins (ingest/copies/merge.py drops the rest)."""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

from hermes_state_tools.ingest.copies.align import Key


def _runs(keys: Sequence[Key], exchanges: bool) -> list[tuple[tuple[Key, ...], list[int]]]:
    """Runs of equal consecutive units: messages, or exchanges (a user message and what follows it up
    to the next one). Each run is (the unit's keys, the index where each of its copies starts)."""
    runs: list[tuple[tuple[Key, ...], list[int]]] = []
    start = 0
    for at in range(1, len(keys) + 1):
        if exchanges and at < len(keys) and keys[at][0] != "user":
            continue
        unit = tuple(keys[start:at])
        if runs and runs[-1][0] == unit:
            runs[-1][1].append(start)
        else:
            runs.append((unit, [start]))
        start = at
    return runs


def inflated(keys: Sequence[Key], reference: Sequence[Key]) -> set[int]:
    """Indexes of an untimed copy's messages that repeat a message or an exchange more often in a row
    than the timed copies (`reference`) do: a gateway bug, fixed in March 2026, wrote each message 2-3
    times, and snapshots taken from it repeat every exchange (q1 a1 q1 a1 q2 a2 q2 a2 ...), or, in
    February, every reply (q1 a1 a1 q2 a2 a2 ...). The timed copies' multiplicity wins; a unit they do
    not hold at all is left alone. Only timed copies that start where this one starts can say how
    often a unit was said: a database holding only a session's latest turns holds one of an exchange
    really said twice, and nothing is dropped then."""
    if not keys or not reference or keys[0] != reference[0]:
        return set()
    longest: dict[Key, int] = {}
    for (key,), starts in _runs(reference, False):
        longest[key] = max(longest.get(key, 0), len(starts))
    dropped = {n for (key,), starts in _runs(keys, False) if key in longest for n in starts[longest[key]:]}
    kept = [n for n in range(len(keys)) if n not in dropped]
    ours, theirs = _runs([keys[n] for n in kept], True), _runs(reference, True)
    if ours[0][0] != theirs[0][0]:
        return dropped
    matcher = SequenceMatcher(None, [e for e, _ in ours], [e for e, _ in theirs], autojunk=False)
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            exchange, starts = ours[block.a + offset]
            held = len(theirs[block.b + offset][1])
            for start in starts[held:]:
                dropped.update(kept[n] for n in range(start, start + len(exchange)))
    return dropped
