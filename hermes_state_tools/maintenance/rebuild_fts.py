"""`rebuild-fts`: rebuild every search index of the file's layout from `messages`, recreating its FTS
tables and triggers first where missing or altered, in that layout's own form."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core.reports import Report
from hermes_state_tools.maintenance import layout_rules
from hermes_state_tools.search import trigram
from hermes_state_tools.store.opening import refuse_long_lock_while_open, writing
from hermes_state_tools.tables import fts


@dataclass(frozen=True)
class RebuildReport(Report):
    path: str
    messages_indexed: int
    recreated: tuple[str, ...]  # FTS objects that were missing or altered and were created again
    indexes: tuple[str, ...] = ()  # the search indexes rebuilt, the layout's own (messages_fts, ...)
    ok: bool = True


def rebuild_fts_file(path: Path) -> RebuildReport:
    """Rebuild every search index from `messages`, recreating its FTS tables or triggers first if missing
    or altered (in the file's own layout)."""

    def rebuild(conn: sqlite3.Connection) -> tuple[list[str], int, tuple[str, ...]]:
        missing = fts.missing_objects(conn)
        fts.recreate(conn)  # missing tables and triggers, then every index rebuilt
        missing += [f"trigger {t.name}" for t in layout_rules.restore_triggers(conn)]  # altered ones
        rebuilt = tuple(index.name for index in fts.search_indexes(conn))
        if trigram.refresh(conn, rebuild=True)["last_id"] >= 0:  # the CJK side table, from scratch as well
            rebuilt += (trigram.TRIGRAM_TABLE,)
        return missing, conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0], rebuilt

    with writing(path, full=True) as (_conn, runner):
        refuse_long_lock_while_open(path, "rebuild-fts")
        recreated, count, rebuilt = runner.run(rebuild)
    return RebuildReport(str(path), count, tuple(recreated), rebuilt)


