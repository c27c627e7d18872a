"""How a message reads in a transcript (`sessions show`, the Markdown export)."""

from __future__ import annotations

import json

_TEXT_KEYS = ("output", "result", "stdout", "content")


def tool_text(content: str) -> str:
    """A tool result as a person reads it: the JSON `output` (or `result`, ...) and `error` with real
    newlines instead of one line of `\\n` escapes; text that is not such JSON as it is."""
    try:
        value = json.loads(content)
    except (ValueError, TypeError):
        return content
    if not isinstance(value, dict):
        return content
    parts = [value[key] for key in _TEXT_KEYS if isinstance(value.get(key), str)][:1]
    if isinstance(value.get("error"), str) and value["error"]:
        parts.append("error: " + value["error"])
    if not parts:
        return json.dumps(value, ensure_ascii=False, indent=2)
    rest = {k: v for k, v in value.items() if k not in (*_TEXT_KEYS, "error") and v is not None}
    if rest:
        parts.append(", ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in rest.items()))
    return "\n".join(parts)


def fence(text: str, info: str = "") -> list[str]:
    """Markdown code fence lines around `text`, longer than any backtick run inside it."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    marks = "`" * max(3, longest + 1)
    return [marks + info, *text.splitlines(), marks]
