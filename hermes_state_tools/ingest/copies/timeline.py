"""Timestamps for imported messages: as recorded where possible, strictly increasing always.

All messages of one gateway turn share a timestamp and some rows carry none, so the
stored times are the recorded ones, nudged forward by a microsecond where needed to keep
file order, with missing ones interpolated between their known neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

STEP = 1e-6  # one microsecond: representable at today's epoch (~2.4e-7 resolution)
_LEAD_SPACING = 1e-3


def _interpolate(values: list[float | None], lo: float | None, hi: float | None) -> list[float | None]:
    """Fill gaps linearly between known neighbours (the bounds count as neighbours)."""
    anchors = ([(-1, lo)] if lo is not None else []) + [(i, v) for i, v in enumerate(values) if v is not None]
    anchors += [(len(values), hi)] if hi is not None else []
    if not anchors:
        return values
    out = list(values)
    for (i0, v0), (i1, v1) in pairwise(anchors):
        for i in range(max(i0 + 1, 0), min(i1, len(values))):
            out[i] = v0 + (v1 - v0) * (i - i0) / (i1 - i0)
    first_i, first_v = anchors[0]
    for i in range(0, max(first_i, 0)):
        out[i] = first_v - (first_i - i) * _LEAD_SPACING
    last_i, last_v = anchors[-1]
    for i in range(last_i + 1, len(values)):
        out[i] = last_v + (i - last_i) * _LEAD_SPACING
    return out


def place_run(recorded: Sequence[float | None], lo: float | None, hi: float | None,
              fallback_start: float) -> list[float]:
    """Timestamps for consecutive new messages that must sit strictly between `lo` and `hi`."""
    if not recorded:
        return []
    if _already_placed(recorded, lo, hi):  # every time recorded, in order, inside the bounds: kept as they are
        return list(recorded)  # type: ignore[arg-type]
    values = _interpolate(list(recorded), lo, hi)
    if all(v is None for v in values):
        values = [fallback_start + i * _LEAD_SPACING for i in range(len(values))]
    out: list[float] = []
    previous = lo
    for value in values:
        assert value is not None
        if previous is not None and value <= previous:
            value = previous + STEP
        out.append(value)
        previous = value
    if hi is not None and out[-1] >= hi:
        out = _squeeze(len(out), lo if lo is not None else hi - len(out) * STEP * 2, hi)
    return out


def _already_placed(recorded: Sequence[float | None], lo: float | None, hi: float | None) -> bool:
    if None in recorded:
        return False
    if (lo is not None and recorded[0] <= lo) or (hi is not None and recorded[-1] >= hi):  # type: ignore[operator]
        return False
    return all(a < b for a, b in pairwise(recorded))  # type: ignore[operator]


def _squeeze(count: int, lo: float, hi: float) -> list[float]:
    """Spread `count` times evenly strictly inside (lo, hi)."""
    gap = (hi - lo) / (count + 1)
    return [lo + gap * (i + 1) for i in range(count)]
