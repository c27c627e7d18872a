"""`search` on a database file: read-only, with a clear error when the index is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_state_tools.errors import SearchIndexMissingError
from hermes_state_tools.search.query import answer, ranked_among
from hermes_state_tools.store.opening import reading
from hermes_state_tools.tables.fts import missing_objects
from hermes_state_tools.views.sessions import require_sources


def search_report(path: Path, query: str, source_filter: Any = None, role_filter: Any = None,
                  limit: int = 20) -> dict[str, Any]:
    """The results; `ranked_among`: None when every match was ranked, else how many of the newest
    matches were (the query matched more: a common word); `literal_among`: None unless no whole word
    matched and the literal look read only the newest messages, then how many."""
    with reading(path, allow_newer=True) as conn:
        if missing_objects(conn):
            raise SearchIndexMissingError(
                f"{path}: the search index (messages_fts) or its triggers are missing; "
                "run `hermes-state repair` to rebuild it")
        require_sources(conn, [source_filter] if isinstance(source_filter, str) else source_filter)
        conn.execute("BEGIN")  # the results and the count from one snapshot
        try:
            found = answer(conn, query, source_filter, None, role_filter, limit)
            window = ranked_among(conn, query, source_filter, role_filter, limit) if found.results else None
        finally:
            conn.execute("ROLLBACK")
        return {"results": found.results, "ranked_among": window, "literal_among": found.literal_among}
