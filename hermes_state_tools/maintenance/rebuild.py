"""`rebuild-fts`: rebuild messages_fts from `messages`, recreating the FTS table or triggers first if missing."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from hermes_state_tools.search import trigram
from hermes_state_tools.store.opening import writing
from hermes_state_tools.tables import fts


def rebuild_fts_file(path: Path) -> dict[str, Any]:
    """Rebuild messages_fts from `messages`, recreating the FTS table or triggers first if missing."""

    def rebuild(conn: sqlite3.Connection) -> tuple[list[str], int]:
        missing = fts.missing_objects(conn)
        fts.recreate(conn)
        trigram.refresh(conn, rebuild=True)  # the CJK side table, from scratch as well
        return missing, conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]

    with writing(path) as (_conn, runner):
        recreated, count = runner.run(rebuild)
    return {"ok": True, "path": str(path), "messages_indexed": count, "recreated": recreated}


