"""Lone UTF-16 surrogates: Python text can hold them (a JSON escape of a cut emoji, a file name's
undecodable bytes), UTF-8 and so SQLite cannot; the store keeps U+FFFD in their place."""

from __future__ import annotations

import re
from typing import Any

SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    return not text.isascii() and SURROGATE.search(text) is not None


def without_surrogates(value: Any) -> Any:
    """Text with each lone surrogate replaced by U+FFFD; any other value as it is."""
    if isinstance(value, str) and not value.isascii():
        return SURROGATE.sub("\ufffd", value)
    return value


def printable(value: Any) -> Any:
    """A report value that can be printed as UTF-8: a file name's undecodable byte is spelled \\xNN,
    another lone surrogate \\udNNN (Python's own backslashreplace spelling, as on its stderr)."""
    if isinstance(value, str):
        return SURROGATE.sub(_spelled, value) if has_surrogate(value) else value
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable(v) for v in value]
    return value


def _spelled(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
