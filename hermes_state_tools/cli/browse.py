"""`hermes-state search`: read-only full-text search."""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from ..fts import missing_objects
from ..readonly import open_readonly, require_supported
from ..search import search_messages
from . import main
from .base import EXIT_PROBLEMS, common_options, emit, fail, settings


def _human(doc: dict[str, Any]) -> str:
    if not doc["results"]:
        return "no matches"
    lines = []
    for hit in doc["results"]:
        when = dt.datetime.fromtimestamp(hit["timestamp"]).isoformat(sep=" ", timespec="seconds")
        lines.append(f"{hit['session_id']}  {when}  {hit['source']}  {hit['role']}")
        lines.append("    " + " ".join(str(hit["snippet"] or "").split()))
    return "\n".join(lines)


@main.command()
@click.argument("query")
@click.option("--source", "sources", multiple=True, metavar="NAME", help="Only this source (repeatable).")
@click.option("--role", "roles", multiple=True, metavar="ROLE", help="Only this role (repeatable).")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 10_000))
@common_options()
def search(query: str, sources: tuple[str, ...], roles: tuple[str, ...], limit: int, as_json: bool) -> None:
    """Full-text search over every message, best matches first, with snippets.

    Words are ANDed; "quoted phrases", OR, NOT and prefix* work; any other text is searched
    literally (hyphens, dots, CJK included).

    \b
    Examples:
      hermes-state search "disk usage"
      hermes-state search deploy* --source telegram --role assistant --json
    """
    path = settings().db
    conn = open_readonly(path)
    try:
        require_supported(conn, path)
        if missing_objects(conn):
            fail(f"{path}: the search index (messages_fts) or its triggers are missing; "
                 "run `hermes-state repair` to rebuild it", EXIT_PROBLEMS)
        results = search_messages(conn, query, list(sources) or None, None, list(roles) or None, limit)
    finally:
        conn.close()
    emit({"ok": True, "query": query, "results": results}, _human)
