"""`archive export`: one host's sessions as this project's export JSONL (core/export_format.py), the
file's own columns restored from the archive's columns and `extra`, so `import-jsonl` rebuilds a lost
machine's store: every session and message field comes back (message ids aside)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from hermes_state_tools.archive import rows
from hermes_state_tools.archive.connect import connected
from hermes_state_tools.archive.schema import MESSAGE_COLUMNS, NAMESPACE, SESSION_COLUMNS
from hermes_state_tools.archive.status import require_host
from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.export_format import export_line
from hermes_state_tools.core.reports import Report

_SESSIONS_PER_READ = 200


@dataclass(frozen=True)
class ArchiveExportReport(Report):
    """What `archive export -o FILE` wrote (with stdout as its output, the export itself is the result)."""

    host: str
    sessions_exported: int
    output: str

_SESSION_SELECT = ", ".join(f's."{c.name}"' for c in SESSION_COLUMNS)
_MESSAGE_SELECT = ", ".join(f'm."{c.name}"' for c in MESSAGE_COLUMNS)
_SESSION_ID_AT = 1 + [c.name for c in MESSAGE_COLUMNS].index("session_id")


def _layout(pg: Any, host: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    with pg.cursor() as cur:
        cur.execute(f"SELECT session_columns, message_columns FROM {NAMESPACE}.hosts WHERE host = %s", (host,))
        sessions, messages = cur.fetchone()
    return tuple(sessions), tuple(messages)


def _extra_data(text: str | None) -> dict[str, Any]:
    data = jsonutil.loads_or_raw(text) if text else {}
    return data if isinstance(data, dict) else {}


def _sessions(pg: Any, host: str) -> Iterator[list[tuple[Any, ...]]]:
    """The host's session rows, oldest first (as the local export orders them), a slice at a time."""
    with pg.cursor(name="archive_export_sessions") as cur:
        cur.itersize = _SESSIONS_PER_READ
        cur.execute(f"SELECT {_SESSION_SELECT}, s.extra, s.hst_extra::text FROM {NAMESPACE}.sessions s "
                    "WHERE s.host = %s ORDER BY s.started_at, s.id COLLATE \"C\"", (host,))
        while chunk := cur.fetchmany(_SESSIONS_PER_READ):
            yield chunk


def _messages(pg: Any, host: str, ids: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    by_session: dict[str, list[tuple[Any, ...]]] = {session_id: [] for session_id in ids}
    with pg.cursor() as cur:
        cur.execute(f"SELECT m.local_id, {_MESSAGE_SELECT}, m.extra, m.hst_extra::text FROM {NAMESPACE}.messages m "
                    "WHERE m.host = %s AND m.session_id = ANY(%s) ORDER BY m.session_id, m.timestamp, m.local_id",
                    (host, ids))
        for row in cur:
            by_session[row[_SESSION_ID_AT]].append(row)
    return by_session


def _line(names: tuple[tuple[str, ...], tuple[str, ...]], session: tuple[Any, ...],
          messages: list[tuple[Any, ...]]) -> bytes:
    session_names, message_names = names
    real = dict(zip((c.name for c in SESSION_COLUMNS), session[:-2], strict=True))
    row = rows.local_row(session_names, real, session[-2])
    message_rows, message_extras = [], []
    for message in messages:
        values = dict(zip((c.name for c in MESSAGE_COLUMNS), message[1:-2], strict=True))
        values["id"] = message[0]
        message_rows.append(rows.local_row(message_names, values, message[-2]))
        message_extras.append(_extra_data(message[-1]))
    return export_line(row, message_rows, _extra_data(session[-1]), message_extras)


def write_host_export(pg: Any, host: str, out: BinaryIO) -> int:
    """Write `host`'s sessions to `out`; returns how many."""
    names = _layout(pg, host)
    written = 0
    for chunk in _sessions_chunks(pg, host):
        by_session = _messages(pg, host, [row[0] for row in chunk])
        for session in chunk:
            out.write(_line(names, session, by_session[session[0]]))
            written += 1
    return written


def _sessions_chunks(pg: Any, host: str) -> Iterator[list[tuple[Any, ...]]]:
    # A named (server-side) cursor lives in a transaction: the export reads one state of the archive.
    with pg.transaction():
        yield from _sessions(pg, host)


def export_host(url: str | None, host: str, out: BinaryIO) -> int:
    """Export one host's sessions from the archive to `out` (read only); returns how many were written."""
    with connected(url) as (pg, server):
        require_host(pg, host, server)
        return write_host_export(pg, host, out)
