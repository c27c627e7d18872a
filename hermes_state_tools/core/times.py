"""Unix times as people read them in reports and transcripts."""

from __future__ import annotations

import datetime as dt
from typing import Any


def local_time(epoch: Any, zone: bool = False) -> str:
    """A Unix time as local 'YYYY-MM-DD HH:MM:SS' (with its UTC offset when `zone`). A stored value
    no calendar date can show (a time in milliseconds, 1e20, text an old writer left) is shown as
    it is: a report must never fail on what a file holds."""
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)):
        return "-" if epoch is None else str(epoch)
    try:
        moment = dt.datetime.fromtimestamp(epoch)
        return (moment.astimezone() if zone else moment).isoformat(sep=" ", timespec="seconds")
    except (OverflowError, OSError, ValueError):  # beyond the years the platform can place
        return f"{epoch!r} (no calendar date)"
