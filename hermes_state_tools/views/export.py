"""Streaming export: one session at a time, so memory stays flat for any database size.

JSONL lines are this project's `hermes-state-export/1` records (see core/export_format.py,
which also reads them back); `json` wraps the same records in one array; `md` renders a
transcript a person reads.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.export_format import export_line
from hermes_state_tools.core.times import local_time
from hermes_state_tools.store.opening import hidden_columns, reading
from hermes_state_tools.tables import extras
from hermes_state_tools.tables.session_export import session_ids
from hermes_state_tools.views.sessions import require_sources, resolve
from hermes_state_tools.views.transcript import fence, tool_text

FORMATS = ("jsonl", "json", "md")


@dataclass(frozen=True)
class ExportedSession:
    row: dict[str, Any]
    messages: list[dict[str, Any]]
    extra: dict[str, Any]
    message_extras: list[dict[str, Any]]


def select_ids(conn: sqlite3.Connection, session: str | None, source: str | None) -> list[str]:
    """The ids to export: one session (exact id or unique prefix), else all, optionally of one source.
    A source no session has is refused, as `search` and `sessions list` refuse it: a typo would
    otherwise write an empty export and exit 0."""
    require_sources(conn, [source] if source else None)
    if session is None:
        return session_ids(conn, source)
    resolved = resolve(conn, session)
    row = conn.execute("SELECT source FROM sessions WHERE id = ?", (resolved,)).fetchone()
    return [resolved] if source is None or row[0] == source else []


def _every_column(conn: sqlite3.Connection, table: str) -> str:
    """The FROM clause giving every column the file's `table` has: the read view (as_version_6) and, on
    a layout this tool does not know, the file's own columns the view leaves out."""
    later = hidden_columns(conn, table)
    if not later:
        return f"SELECT v.* FROM {table} AS v"
    columns = ", ".join(f't."{name}"' for name in later)
    return f"SELECT v.*, {columns} FROM {table} AS v JOIN main.{table} AS t ON t.id = v.id"


def iter_sessions(conn: sqlite3.Connection, ids: list[str]) -> Iterator[ExportedSession]:
    """Each session with every column its file has (a later Hermes' too), its messages and extra data."""
    with_extras = extras.present(conn)
    session_sql = f"{_every_column(conn, 'sessions')} WHERE v.id = ?"
    message_sql = f"{_every_column(conn, 'messages')} WHERE v.session_id = ? ORDER BY v.timestamp, v.id"
    for session_id in ids:
        row = conn.execute(session_sql, (session_id,)).fetchone()
        if row is None:
            continue  # deleted by another process since the ids were listed
        messages = [dict(m) for m in conn.execute(message_sql, (session_id,))]
        by_id = extras.message_extras(conn, session_id) if with_extras else {}
        yield ExportedSession(
            dict(row), messages,
            extras.session_extra(conn, session_id) if with_extras else {},
            [by_id.get(m["id"], {}) for m in messages],
        )


def jsonl_record(item: ExportedSession) -> bytes:
    return export_line(item.row, item.messages, item.extra, item.message_extras)


def _when(epoch: Any) -> str:
    return local_time(epoch, zone=True) if isinstance(epoch, (int, float)) else "-"


def _markdown_message(message: dict[str, Any], extra: dict[str, Any]) -> list[str]:
    heading = f"### {message['role']}"
    if message.get("tool_name"):
        heading += f" · {message['tool_name']}"
    if extra.get("mirror"):
        heading += f" (mirrored from {extra.get('mirror_source') or 'elsewhere'})"
    lines = [heading, f"_{_when(message.get('timestamp'))}_", ""]
    if message.get("reasoning"):
        lines += ["> " + line for line in str(message["reasoning"]).splitlines()] + [""]
    text = jsonutil.content_text(message.get("content"))
    if text and message.get("role") == "tool":
        lines += [*fence(tool_text(text), "text"), ""]  # output, not prose: Markdown must not render it
    elif text:
        lines += [text, ""]
    calls = jsonutil.loads_or_raw(message["tool_calls"]) if message.get("tool_calls") else []
    for call in calls if isinstance(calls, list) else [calls]:
        function = call.get("function") if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        lines += [f"Tool call `{function.get('name', '?')}`:", "```json", str(function.get("arguments", call)),
                  "```", ""]
    return lines


def markdown(item: ExportedSession) -> str:
    """A transcript a person reads: header, then every message with its role, tool calls and results."""
    row = item.row
    lines = [
        f"# {row.get('title') or row['id']}", "",
        f"- session: `{row['id']}`", f"- source: {row.get('source')}", f"- model: {row.get('model') or '-'}",
        f"- started: {_when(row.get('started_at'))}", f"- ended: {_when(row.get('ended_at'))}"
        + (f" ({row['end_reason']})" if row.get("end_reason") else ""),
    ]
    if row.get("parent_session_id"):
        lines.append(f"- continues: `{row['parent_session_id']}`")
    lines.append("")
    for message, extra in zip(item.messages, item.message_extras, strict=True):
        lines += _markdown_message(message, extra)
    return "\n".join(lines) + "\n"


def write_export(conn: sqlite3.Connection, out: BinaryIO, ids: list[str], fmt: str,
                 on_session: Any = None) -> int:
    """Write the sessions to `out` in `fmt`; returns how many were written."""
    written = 0
    if fmt == "json":
        out.write(b"[")
    for item in iter_sessions(conn, ids):
        if fmt == "jsonl":
            out.write(jsonl_record(item))
        elif fmt == "json":
            out.write((b",\n" if written else b"\n") + jsonl_record(item).rstrip(b"\n"))
        else:
            out.write((b"\n---\n\n" if written else b"") + markdown(item).encode("utf-8"))
        written += 1
        if on_session is not None:
            on_session()
    if fmt == "json":
        out.write(b"\n]\n")
    return written


def export_file(path: Path, out: BinaryIO, session: str | None = None, source: str | None = None,
                fmt: str = "jsonl", on_start: Any = None, on_session: Any = None) -> int:
    """Export from the database at `path` to `out` in one read snapshot; returns the sessions written.

    `on_start(total)` and `on_session()` let a caller show progress.
    """
    with reading(path, allow_newer=True, stable=True) as conn:
        conn.execute("BEGIN")  # one consistent snapshot while other processes keep writing
        ids = select_ids(conn, session, source)
        if on_start is not None:
            on_start(len(ids))
        return write_export(conn, out, ids, fmt, on_session)
