"""What `prune --archived` asks before it deletes: does the archive hold a session identically, its row
and every one of its messages (the same hashes a push writes)? Those it does not are kept back, each
with the reason."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hermes_state_tools.archive.connect import connected
from hermes_state_tools.archive.push import MESSAGE_COPY, LocalFile, default_host
from hermes_state_tools.archive.schema import NAMESPACE, read_version

_SESSIONS_PER_LOOK = 500
_SESSION_AT, _HASH_AT = MESSAGE_COPY.index("session_id"), MESSAGE_COPY.index("row_hash")


@dataclass(frozen=True)
class KeptBack:
    """A session prune keeps because the archive does not hold it as it is here."""

    session_id: str
    reason: str


def _chunk_reasons(pg: Any, local: LocalFile, host: str, ids: list[str]) -> dict[str, str]:
    with pg.cursor() as cur:
        cur.execute(f"SELECT id, row_hash FROM {NAMESPACE}.sessions WHERE host = %s AND id = ANY(%s)", (host, ids))
        sessions = {row[0]: bytes(row[1]) for row in cur}
        cur.execute(f"SELECT local_id, row_hash FROM {NAMESPACE}.messages WHERE host = %s AND session_id = ANY(%s)",
                    (host, ids))
        messages = {row[0]: bytes(row[1]) for row in cur}
    reasons: dict[str, str] = {}
    marks = ",".join("?" * len(ids))
    for row in local.session_rows(f" WHERE s.id IN ({marks})", ids):
        held = sessions.get(row[0])
        if held is None:
            reasons[row[0]] = "not in the archive"
        elif held != local.session_record(host, row)[-1]:
            reasons[row[0]] = "changed since the last push"
    missing: dict[str, int] = {}
    for row in local.message_rows(f"m.session_id IN ({marks})", ids):
        record = local.message_record(host, row)
        if messages.get(record[1]) != record[_HASH_AT]:
            missing[record[_SESSION_AT]] = missing.get(record[_SESSION_AT], 0) + 1
    for session_id, count in missing.items():
        reasons.setdefault(session_id, f"{count} of its messages not in the archive as they are here")
    return reasons


def kept_back(conn: sqlite3.Connection, url: str, host: str | None, ids: Sequence[str]) -> tuple[KeptBack, ...]:
    """The sessions of `ids` the archive at `url` does not hold identically under `host`, with why."""
    host = host or default_host()
    local = LocalFile(conn)
    with connected(url) as (pg, _server):
        if read_version(pg) is None:
            return tuple(KeptBack(session_id, "not in the archive (nothing was pushed yet)") for session_id in ids)
        reasons: dict[str, str] = {}
        for first in range(0, len(ids), _SESSIONS_PER_LOOK):
            reasons.update(_chunk_reasons(pg, local, host, list(ids[first:first + _SESSIONS_PER_LOOK])))
    return tuple(KeptBack(session_id, reasons[session_id]) for session_id in ids if session_id in reasons)
