"""Reading another state.db (another machine's, a backup holding what the live file lost) as copies
of its sessions, for `hermes-state merge`: the same records the readers make from files, so the
same alignment merges them and nothing doubles.

OTHER is only ever read (a read-only connection; never upgraded). Any schema 1-6 is read through
the columns it has; a newer one through the v6 columns (columns this tool does not know are kept
as extra data). This project's hst_ extra tables come along when OTHER has them. Rows that are no
message (the February 2026 gateway's session_meta rows) go to the session's extra data.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.layouts import carry_later_columns
from hermes_state_tools.core.records import (
    FOREIGN_ROLES,
    FOREIGN_ROWS_KEY,
    SOURCE_FROM_INDEX,
    LegacyMessage,
    LegacySession,
    Problem,
)
from hermes_state_tools.core.schema import MESSAGE_FIELDS, SESSION_FIELDS, table_columns
from hermes_state_tools.tables import extras

_JSON_COLUMNS = ("tool_calls", "reasoning_details", "codex_reasoning_items")
_INT64 = 2**63


def session_ids(conn: sqlite3.Connection) -> list[str]:
    """OTHER's sessions, parents before their children where the times say so."""
    return [row[0] for row in conn.execute("SELECT id FROM sessions ORDER BY started_at, id")]


def read_session(conn: sqlite3.Connection, session_id: str, file: str) -> tuple[LegacySession | None, list[Problem]]:
    """One session of OTHER as a copy (kind "export": every column as stored there)."""
    cursor = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,))
    names = [d[0] for d in cursor.description]
    row = cursor.fetchone()
    if row is None:
        return None, []
    stored = dict(zip(names, row, strict=True))
    where = f"{file} session {session_id}"
    problems: list[Problem] = []
    fields = {k: v for k, v in stored.items() if k in SESSION_FIELDS and k != "id" and v is not None}
    session_extra = extras.session_extra(conn, session_id) if extras.present(conn) else {}
    session_extra = carry_later_columns("sessions", stored, session_extra)
    session_extra.update({f"other_db_{k}": v for k, v in stored.items() if k not in SESSION_FIELDS})
    if not isinstance(fields.get("source"), str) or not fields["source"]:
        fields["source"] = "unknown"
    messages, foreign = _messages(conn, session_id, where, problems)
    if foreign:
        session_extra[FOREIGN_ROWS_KEY] = foreign
    rank = SOURCE_FROM_INDEX  # the store's own source column: as sure as a source gets
    return LegacySession(session_id, file, "export", fields, rank, tuple(messages), session_extra), problems


def _messages(conn: sqlite3.Connection, session_id: str, where: str,
              problems: list[Problem]) -> tuple[list[LegacyMessage], list[dict[str, Any]]]:
    present = table_columns(conn, "messages")
    columns = [c for c in MESSAGE_FIELDS if c in present and c != "session_id"]
    if "id" not in columns:
        columns.insert(0, "id")
    # A later Hermes' columns are carried to the same columns here, where this file has them; columns no
    # layout this tool knows has are kept as the message's extra data.
    unknown = sorted(present - set(MESSAGE_FIELDS) - {"session_id"})
    columns += unknown
    kept = extras.message_extras(conn, session_id) if extras.present(conn) else {}
    cursor = conn.execute(f"SELECT {', '.join(columns)} FROM messages WHERE session_id = ? ORDER BY timestamp, id",
                          (session_id,))
    messages: list[LegacyMessage] = []
    foreign: list[dict[str, Any]] = []
    for values in cursor:
        row = dict(zip(columns, values, strict=True))
        extra = dict(kept[row["id"]]) if isinstance(kept.get(row["id"]), dict) else {}
        extra = carry_later_columns("messages", row, extra)
        extra.update({f"other_db_{c}": row.pop(c) for c in unknown if row.get(c) is not None})
        for c in unknown:
            row.pop(c, None)
        if row.get("role") in FOREIGN_ROLES or not isinstance(row.get("role"), str):
            foreign.append({**row, "session_id": session_id, **({"extra": extra} if extra else {})})
            continue
        messages.append(_message(row, dict(extra or {}), where, problems))
    return messages, foreign


def _message(row: dict[str, Any], extra: dict[str, Any], where: str, problems: list[Problem]) -> LegacyMessage:
    """A stored row as a message: JSON columns decoded when they decode to what the import takes,
    else kept as the text they are (an export of rows another program wrote does the same)."""
    values: dict[str, Any] = {}
    for name in _JSON_COLUMNS:
        text = row.get(name)
        decoded = jsonutil.loads_or_raw(text) if isinstance(text, str) else text
        values[name] = decoded if isinstance(decoded, (list, dict)) and (name != "tool_calls" or
                                                                          isinstance(decoded, list)) else text
    count = row.get("token_count")
    if count is not None and not (isinstance(count, int) and -_INT64 <= count < _INT64):
        problems.append(Problem(where, None, "wrong_type", f"message {row['id']}: token_count {count!r:.40} is "
                                                           "not a 64-bit integer; kept in extra data"))
        extra["original_token_count"], count = count, None
    return LegacyMessage(
        role=row["role"], content=jsonutil.decode_content(row.get("content")), timestamp=row.get("timestamp"),
        tool_call_id=row.get("tool_call_id"), tool_calls=values["tool_calls"], tool_name=row.get("tool_name"),
        token_count=count, finish_reason=row.get("finish_reason"), reasoning=row.get("reasoning"),
        reasoning_details=values["reasoning_details"], codex_reasoning_items=values["codex_reasoning_items"],
        extra=extra,
    )
