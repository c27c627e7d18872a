"""JSON text as the store keeps it: compact, non-ASCII written as itself, tolerant on read."""

from __future__ import annotations

import json
from typing import Any

import orjson

# Later Hermes versions store multimodal content (a list of parts) as this marker
# followed by the JSON of the list, so a TEXT column can carry it without loss.
MULTIMODAL_PREFIX = "\x00json:"


def dumps(value: Any) -> str:
    """Serialise to JSON text; orjson for speed, the stdlib for what orjson refuses (big ints, odd keys)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, default=str)


def dumps_or_none(value: Any) -> str | None:
    return None if value is None else dumps(value)


def loads_or_raw(text: Any) -> Any:
    """Decode JSON text; anything that is not valid JSON comes back unchanged."""
    if not isinstance(text, (str, bytes)):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            return json.loads(text)  # NaN/Infinity, which orjson rejects
        except (ValueError, TypeError):
            return text


def encode_content(content: Any) -> str | None:
    """Message content for the TEXT column: strings as they are, lists/dicts behind the marker."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, (list, dict)):
        return MULTIMODAL_PREFIX + dumps(content)
    return str(content)


def decode_content(stored: Any) -> Any:
    """The inverse of encode_content."""
    if isinstance(stored, str) and stored.startswith(MULTIMODAL_PREFIX):
        decoded = loads_or_raw(stored[len(MULTIMODAL_PREFIX):])
        if isinstance(decoded, (list, dict)):
            return decoded
    return stored


def content_text(stored: Any) -> str:
    """The readable text of stored content: text parts of a multimodal list joined by spaces."""
    decoded = decode_content(stored)
    if decoded is None:
        return ""
    if isinstance(decoded, str):
        return decoded
    parts = decoded if isinstance(decoded, list) else [decoded]
    texts = []
    for part in parts:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type"):
            texts.append(f"[{part['type']}]")
    return " ".join(texts)
