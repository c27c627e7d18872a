"""Counted nouns in messages people read: '1 line', '3 lines'."""

from __future__ import annotations


def plural(count: int, noun: str, many: str | None = None) -> str:
    """'1 problem', '2 problems' (`many` for a noun whose plural is not noun + 's')."""
    return f"{count:,} {noun if count == 1 else (many or noun + 's')}"
