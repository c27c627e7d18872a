"""`archive status`: per host, what the archive holds of it and when it last pushed (read only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes_state_tools.archive.connect import connected
from hermes_state_tools.archive.schema import LATEST, NAMESPACE, read_version
from hermes_state_tools.core.reports import Report
from hermes_state_tools.errors import UnknownHostError


@dataclass(frozen=True)
class ArchiveStatus(Report):
    archive: str
    schema_version: int | None  # None: nothing was ever pushed
    schema_newer: bool  # written by a newer toolkit: read only
    hosts: tuple[dict[str, Any], ...]


def host_rows(pg: Any) -> list[dict[str, Any]]:
    """One dict per host: host, sessions, messages, last_push (ISO 8601 UTC or None), message_mark."""
    ns = NAMESPACE
    with pg.cursor() as cur:
        cur.execute(f"SELECT h.host, (SELECT count(*) FROM {ns}.sessions s WHERE s.host = h.host), "
                    f"(SELECT count(*) FROM {ns}.messages m WHERE m.host = h.host), h.last_push, h.message_mark "
                    f"FROM {ns}.hosts h ORDER BY h.host")
        found = cur.fetchall()
    return [{"host": host, "sessions": int(sessions), "messages": int(messages),
             "last_push": last.isoformat() if last is not None else None, "message_mark": int(mark)}
            for host, sessions, messages, last, mark in found]


def require_host(pg: Any, host: str, server: str) -> None:
    """UnknownHostError (naming the hosts it holds) unless the archive holds `host`."""
    known = [row["host"] for row in host_rows(pg)] if read_version(pg) is not None else []
    if host not in known:
        listed = ", ".join(known) if known else "none yet"
        raise UnknownHostError(f"archive {server}: holds no host {host!r} (hosts: {listed})")


def archive_status(url: str | None) -> ArchiveStatus:
    with connected(url) as (pg, server):
        version = read_version(pg)
        hosts = host_rows(pg) if version is not None else []
        return ArchiveStatus(server, version, version is not None and version > LATEST, tuple(hosts))
