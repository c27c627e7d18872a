"""Turn the timestamps legacy files hold (ISO text, epoch numbers, numeric text) into epoch seconds."""

from __future__ import annotations

import re
from datetime import datetime, tzinfo
from typing import Any

# Only plain decimal numbers: float() would also take "nan", "inf" and "1_000".
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_FRACTION = re.compile(r"(?<=:\d\d)\.(\d+)")


def parse_timestamp(value: Any, tz: tzinfo | None = None) -> float | None:
    """Return epoch seconds for an ISO string, an epoch number or a numeric string, else None."""
    if type(value) is str and value[4:5] == "-":  # "YYYY-...": nearly every timestamp, tried first
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass  # the careful path below strips, mends Python 3.10's gaps and checks for numbers
        else:
            return _epoch(moment, tz)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _finite(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _NUMBER.fullmatch(text):
        return _finite(text)
    return _iso_seconds(text, tz)


# The times a calendar can show (years 1 to 9999, as Python's datetime): an epoch outside them
# (1e20; a time in milliseconds, year 58,000) is no time, and the message is placed by order instead
# of pushing every later one past it.
_FIRST, _END = -62135596800.0, 253402300800.0  # year 1 to the end of year 9999


def _finite(value: int | float | str) -> float | None:
    """Return value as a float within the calendar, or None when it is not one."""
    try:
        number = float(value)
    except (OverflowError, ValueError):
        return None
    return number if _FIRST <= number < _END else None


def _iso_seconds(text: str, tz: tzinfo | None) -> float | None:
    """Return epoch seconds for ISO 8601 text; naive times are local time, or in `tz` when given."""
    try:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            # Python 3.10's fromisoformat takes neither a "Z" nor fractions other than 3 or 6 digits.
            if text[-1:] in ("Z", "z"):
                text = text[:-1] + "+00:00"
            text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text, count=1)
            moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return _epoch(moment, tz)


def _epoch(moment: datetime, tz: tzinfo | None) -> float | None:
    """Epoch seconds of a parsed time; a naive one is local time, or in `tz` when given."""
    if moment.tzinfo is None and tz is not None:
        moment = moment.replace(tzinfo=tz)
    try:
        seconds = moment.timestamp()
    except (OverflowError, OSError, ValueError):
        # Years the platform's mktime cannot place (year 1 or 9999 naive).
        return None
    return seconds if _FIRST <= seconds < _END else None  # year 1 at +01:00 is year 0 in UTC


def later_reading(seconds: float, raw: Any, tz: tzinfo | None) -> float | None:
    """The later reading of a naive wall-clock time the clock showed twice (the hour repeated when
    summer time ends), when `raw` is such a time and `seconds` its first reading; else None."""
    if type(raw) is not str or raw[4:5] != "-":
        return None
    try:
        if datetime.fromisoformat(raw.strip()).tzinfo is not None:
            return None  # a zone-aware time means one moment
        wall = datetime.fromtimestamp(seconds, tz)
    except (OverflowError, OSError, ValueError):
        return None
    if wall.fold:
        return None
    later = wall.replace(fold=1)
    if tz is None:  # local time: a naive wall time, read with the other fold
        later = later.replace(tzinfo=None)
    second = _epoch(later, tz)
    return second if second is not None and second > seconds else None
