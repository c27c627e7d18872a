"""`rebuild-fts`: rebuild messages_fts from `messages`, recreating the FTS table or triggers first if missing."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core.reports import Report
from hermes_state_tools.search import trigram
from hermes_state_tools.store.opening import refuse_long_lock_while_open, writing
from hermes_state_tools.tables import fts


@dataclass(frozen=True)
class RebuildReport(Report):
    path: str
    messages_indexed: int
    recreated: tuple[str, ...]  # FTS objects that were missing and were created again
    ok: bool = True


def rebuild_fts_file(path: Path) -> RebuildReport:
    """Rebuild messages_fts from `messages`, recreating the FTS table or triggers first if missing."""

    def rebuild(conn: sqlite3.Connection) -> tuple[list[str], int]:
        missing = fts.missing_objects(conn)
        fts.recreate(conn)
        trigram.refresh(conn, rebuild=True)  # the CJK side table, from scratch as well
        return missing, conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]

    with writing(path, full=True) as (_conn, runner):
        refuse_long_lock_while_open(path, "rebuild-fts")
        recreated, count = runner.run(rebuild)
    return RebuildReport(str(path), count, tuple(recreated))


