"""`search` on a database file: read-only, with a clear error when the index is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_state_tools.errors import SearchIndexMissingError
from hermes_state_tools.search.query import search_messages
from hermes_state_tools.store.opening import reading
from hermes_state_tools.tables.fts import missing_objects


def search_file(path: Path, query: str, source_filter: Any = None, role_filter: Any = None,
                limit: int = 20) -> list[dict[str, Any]]:
    """`search_messages` on the database at `path`, read-only; a missing index is a clear error."""
    with reading(path, allow_newer=True) as conn:
        if missing_objects(conn):
            raise SearchIndexMissingError(
                f"{path}: the search index (messages_fts) or its triggers are missing; "
                "run `hermes-state repair` to rebuild it")
        return search_messages(conn, query, source_filter, None, role_filter, limit)
