"""Reading this project's own export lines (`hermes-state-export/1`, see core/export_format.py) back
into LegacySession records, every column restored."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import tzinfo
from typing import Any

from hermes_state_tools.core.export_format import FORMAT, JSON_COLUMNS, is_export_record
from hermes_state_tools.core.records import (
    SOURCE_FALLBACK,
    SOURCE_FROM_INDEX,
    LegacyMessage,
    LegacySession,
    Problem,
)
from hermes_state_tools.core.schema import SESSIONS_COLUMNS
from hermes_state_tools.importers.messages import Where, normalise_message
from hermes_state_tools.importers.text import JsonLine


def read_export_lines(
    items: Iterable[JsonLine | Problem], file: str, tz: tzinfo | None = None
) -> Iterator[LegacySession | Problem]:
    """Yield a LegacySession(kind="export") per export line, and the problems of the others."""
    for item in items:
        if isinstance(item, Problem):
            yield item
        else:
            yield from _read_record(item, file, tz)


def _read_record(item: JsonLine, file: str, tz: tzinfo | None) -> Iterator[LegacySession | Problem]:
    """Yield the session one export line holds, or the failure that stops it."""
    value = item.value
    if not is_export_record(value):
        yield Problem(file, item.number, "not_export_record", f"line is not a {FORMAT} session", True)
        return
    session, rows, extra = value.get("session"), value.get("messages"), value.get("extra")
    if not isinstance(session, dict) or not isinstance(session.get("id"), str) or not session["id"]:
        yield Problem(file, item.number, "missing_session_id", "export line names no session id", True)
        return
    if not isinstance(rows, list):
        detail = f"messages is a JSON {type(rows).__name__}, not a list; the session is read without messages"
        yield Problem(file, item.number, "wrong_type", detail, rows is not None)
        rows = []
    messages: list[LegacyMessage] = []
    for position, row in enumerate(rows, 1):
        message, problems = _read_message(row, Where(file, item.number, position, shared=True), tz)
        yield from problems
        if message is not None:
            messages.append(message)
    extra = dict(extra) if isinstance(extra, dict) else {}
    fields = {key: column for key, column in session.items() if key != "id"}
    for key in [k for k, v in fields.items() if not _fits_column(k, v)]:
        extra[f"original_{key}"] = fields.pop(key)
        yield Problem(file, item.number, "wrong_type",
                      f"session field {key!r} is not a {_COLUMN_TYPES.get(key, 'known column')}; "
                      f"kept in extra['original_{key}']")
    rank = SOURCE_FROM_INDEX if isinstance(fields.get("source"), str) else SOURCE_FALLBACK
    fields.setdefault("source", "unknown")
    yield LegacySession(session["id"], file, "export", fields, rank, tuple(messages), extra)


# The sessions columns and their SQLite types: an export line written by hand or by another tool
# may carry anything, and a value SQLite cannot bind must not stop the import of the others.
_COLUMN_TYPES = {column.name: column.decl.split()[0] for column in SESSIONS_COLUMNS}
_INT64 = 2**63


def _fits_column(key: str, value: Any) -> bool:
    kind = _COLUMN_TYPES.get(key)
    if kind is None:
        return False
    if value is None:
        return True
    if kind == "TEXT":
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return kind == "REAL" or (isinstance(value, int) and -_INT64 <= value < _INT64)


def _read_message(row: Any, where: Where, tz: tzinfo | None) -> tuple[LegacyMessage | None, list[Problem]]:
    """Return one exported message with its extra data restored."""
    if not isinstance(row, dict) or not isinstance(row.get("extra"), dict):
        return normalise_message(row, where, tz)
    # A JSON column written as text is the text another program stored: it is stored back as it is.
    stored_text = {key: row[key] for key in JSON_COLUMNS if isinstance(row.get(key), str)}
    columns = {key: value for key, value in row.items() if key != "extra" and key not in stored_text}
    message, problems = normalise_message(columns, where, tz, extra=row["extra"])
    if message is not None:
        for key, text in stored_text.items():
            setattr(message, key, text)
    return message, problems
