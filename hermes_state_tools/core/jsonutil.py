"""JSON text as the store keeps it: spelled as Hermes spells it, tolerant on read."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import orjson

# orjson returns an integer beyond 64 bits as a float without a word; a parsed value holding a
# float that large is parsed again by the stdlib, which keeps every digit. (Walking the parsed
# value costs a fifth of scanning the raw line with a regex.)
_WIDE = 2.0**63


def has_wide_float(value: Any) -> bool:
    """True when a parsed JSON value holds a float of 2**63 or more (maybe an integer orjson widened)."""
    kind = type(value)
    if kind is float:
        return bool(abs(value) >= _WIDE)
    if kind is dict:
        values: Any = value.values()
    elif kind is list:
        values = value
    else:
        return False
    for item in values:
        item_kind = type(item)
        if item_kind is float:
            if abs(item) >= _WIDE:
                return True
        elif (item_kind is dict or item_kind is list) and has_wide_float(item):
            return True
    return False


# Later Hermes versions store multimodal content (a list of parts) as this marker
# followed by the JSON of the list, so a TEXT column can carry it without loss.
MULTIMODAL_PREFIX = "\x00json:"


BLOB_KEY = "blob_base64"


def blob_value(value: Any) -> Any:
    """The JSON spelling of a value JSON has none for: a BLOB (which no Hermes writes, but another tool
    may have stored in a column) as {"blob_base64": ...}, its bytes kept. The `default` of every
    encoder here; anything else is refused as JSON refuses it."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {BLOB_KEY: base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """JSON text spelled exactly as Hermes spells its JSON columns (`json.dumps` defaults), so a
    value read back and stored again gives the same bytes whichever program wrote it."""
    return json.dumps(value, default=blob_value)


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _parsed_dumps() -> Callable[[Any], str]:
    """`dumps` for values a JSON parser made, without the per-call set-up `json.dumps` repeats (a
    third of its time on a tool call): the same C encoder, made once. Such a value holds no cycle,
    so it skips the cycle check, which also makes it safe to share between threads. Where the C
    encoder is missing, or spells a sample differently, it is `dumps` itself."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return dumps
    try:
        encoder = make(None, _refuse, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False, True)

        def dumps_parsed(value: Any) -> str:
            return "".join(encoder(value, 0))

        sample = [{"id": "call_1", "n": [1, -2.5, 1e300, True, None], "s": "\u00e9\n\"", "d": {}}, [], ""]
        return dumps_parsed if dumps_parsed(sample) == dumps(sample) else dumps
    except (TypeError, ValueError):  # another Python's encoder takes other arguments
        return dumps


dumps_parsed = _parsed_dumps()


def dumps_if_any(value: Any) -> str | None:
    """JSON text, or NULL for None and empty values (Hermes stores `[]` and `{}` as NULL too)."""
    return dumps(value) if value else None


def loads_or_raw(text: Any) -> Any:
    """Decode JSON text; anything that is not valid JSON comes back unchanged."""
    if not isinstance(text, (str, bytes)):
        return text
    try:
        value = orjson.loads(text)
        if not has_wide_float(value):
            return value
        raise orjson.JSONDecodeError("maybe a widened integer", "", 0)  # the stdlib keeps every digit
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
        # Non-ASCII written as itself (not \u escapes) so FTS and substring search find it.
        return MULTIMODAL_PREFIX + json.dumps(content, ensure_ascii=False)
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
