"""Reading export lines back into LegacySession records, every column restored: this project's own
(`hermes-state-export/1`, see core/export_format.py) and Hermes' own `hermes sessions export`.

Hermes writes one `SessionDB.export_session` per line: the `sessions` row's columns with a
`messages` list of full `messages` rows (`id`, `session_id`, `role`, `content`, ...), no
`format` key and no extra data. Such a line is read as the same record in our shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from datetime import tzinfo
from typing import Any

from hermes_state_tools.core.export_format import FORMAT, JSON_COLUMNS, is_export_record
from hermes_state_tools.core.layouts import carry_later_columns
from hermes_state_tools.core.records import (
    FOREIGN_ROLES,
    FOREIGN_ROWS_KEY,
    SOURCE_FALLBACK,
    SOURCE_FROM_INDEX,
    LegacyMessage,
    LegacySession,
    Problem,
)
from hermes_state_tools.core.schema import MESSAGES_COLUMNS, SESSIONS_COLUMNS
from hermes_state_tools.importers.messages import Where, normalise_message
from hermes_state_tools.importers.text import JsonLine


def is_hermes_export(value: Any) -> bool:
    """Tell whether a parsed line is one session of Hermes' own `hermes sessions export`."""
    return (isinstance(value, dict) and isinstance(value.get("id"), str) and isinstance(value.get("messages"), list)
            and "role" not in value and "format" not in value and "source" in value)


def as_export_record(value: dict[str, Any]) -> dict[str, Any]:
    """A Hermes export line in this project's export shape: message ids dropped (they are the other
    database's), columns this schema lacks (a newer Hermes) kept as extra data."""
    session = {k: v for k, v in value.items() if k != "messages"}
    extra = carry_later_columns("sessions", session, {})
    extra.update({k: session.pop(k) for k in list(session) if k != "id" and k not in _COLUMN_TYPES})
    messages = []
    for row in value["messages"]:
        if isinstance(row, dict):
            row = {k: v for k, v in row.items() if k not in ("id", "session_id")}
            kept = carry_later_columns("messages", row, {})
            row["extra"] = {**kept, **{k: row.pop(k) for k in list(row) if k not in _MESSAGE_KEYS}}
        messages.append(row)
    return {"format": FORMAT, "session": session, "extra": extra, "messages": messages}


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
    if is_hermes_export(value):
        value = as_export_record(value)
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
    foreign = [row for row in rows if isinstance(row, dict) and row.get("role") in FOREIGN_ROLES]
    rows = [row for row in rows if not (isinstance(row, dict) and row.get("role") in FOREIGN_ROLES)]
    for position, row in enumerate(rows, 1):
        message, problems = _read_message(row, Where(file, item.number, position, shared=True), tz)
        yield from problems
        if message is not None:
            messages.append(message)
    extra = dict(extra) if isinstance(extra, dict) else {}
    fields = {key: column for key, column in session.items() if key != "id"}
    extra = carry_later_columns("sessions", fields, extra)
    if foreign:  # rows that are no message (session_meta rows an export of such a database holds)
        extra.setdefault(FOREIGN_ROWS_KEY, foreign)
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
_MESSAGE_KEYS = {column.name for column in MESSAGES_COLUMNS}


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
    message, problems = normalise_message(columns, where, tz,
                                          extra=carry_later_columns("messages", columns, row["extra"]))
    if message is not None:
        for key, text in stored_text.items():
            setattr(message, key, text)
        problems = _keep_stored_time(message, row.get("timestamp"), problems)
    return message, problems


def _keep_stored_time(message: LegacyMessage, stored: Any, problems: list[Problem]) -> list[Problem]:
    """An export line holds a store's own value: a finite time no calendar date shows (a time in
    milliseconds another program stored) comes back as it was, so a round trip changes nothing."""
    if (message.timestamp is not None or isinstance(stored, bool) or not isinstance(stored, (int, float))
            or not math.isfinite(stored)):
        return problems
    message.timestamp = float(stored)
    message.extra.pop("original_timestamp", None)
    return [p for p in problems if p.kind != "bad_timestamp"]
