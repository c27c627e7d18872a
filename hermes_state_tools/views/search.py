"""`search` on a database file: read-only, with a clear error when the index is missing."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_state_tools.core.layouts import read_layout
from hermes_state_tools.core.reports import Report
from hermes_state_tools.core.schema import FTS_TABLE, is_newer, read_version
from hermes_state_tools.errors import DamagedDatabaseError, SearchIndexMissingError
from hermes_state_tools.search.query import answer
from hermes_state_tools.search.text_functions import UndecodableTextError
from hermes_state_tools.store.opening import reading
from hermes_state_tools.tables.fts import missing_objects
from hermes_state_tools.views.sessions import require_sources


@dataclass(frozen=True, kw_only=True)
class SearchReport(Report):
    """`search`'s --json, in its order; each result the dict the search gives (snippet, context)."""

    ok: bool = True
    query: str
    results: tuple[dict[str, Any], ...]
    ranked_among: int | None
    literal_among: int | None


def search_report(path: Path, query: str, source_filter: Any = None, role_filter: Any = None,
                  limit: int = 20, show_all: bool = False) -> SearchReport:
    """The results; `ranked_among`: None when every match was ranked, else how many of the newest
    matches were (the query matched more: a common word); `literal_among`: None unless no whole word
    matched and the literal look read only the newest messages, then how many."""
    with reading(path, allow_newer=True) as conn:
        _require_index(path, conn)
        require_sources(conn, [source_filter] if isinstance(source_filter, str) else source_filter)
        conn.execute("BEGIN")  # the results and the count from one snapshot
        try:
            found = answer(conn, query, source_filter, None, role_filter, limit, show_all=show_all)
        except UndecodableTextError as exc:
            raise DamagedDatabaseError(path, str(exc)) from exc
        finally:
            conn.execute("ROLLBACK")
        return SearchReport(query=query, results=tuple(found.results), ranked_among=found.ranked_among,
                            literal_among=found.literal_among)


def _require_index(path: Path, conn: sqlite3.Connection) -> None:
    """The FTS table this search reads, and for a file of a known layout its triggers (without them it
    drifts: repair). A Hermes newer than every known layout may keep its index otherwise; repair never
    writes its file, so it is not advised."""
    missing = missing_objects(conn)
    if not missing:
        return
    version = read_version(conn)
    if not is_newer(version) or read_layout(conn).known:  # a layout repair rebuilds in its own form
        raise SearchIndexMissingError(f"{path}: the search index ({FTS_TABLE}) or its triggers are missing; "
                                      "run `hermes-state repair` to rebuild it")
    if f"table {FTS_TABLE}" in missing:
        raise SearchIndexMissingError(f"{path}: written by a newer Hermes (schema {version}), it keeps no search "
                                      f"index named {FTS_TABLE}, so this tool cannot search it")
