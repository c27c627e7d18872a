"""`hermes-state search`: read-only full-text search."""

from __future__ import annotations

from typing import Any

import click

from hermes_state_tools.cli import main
from hermes_state_tools.cli.base import common_options, emit, settings, when
from hermes_state_tools.views.search import search_report


def _human(doc: dict[str, Any]) -> str:
    if not doc["results"]:
        return "no matches"
    lines = []
    if doc["ranked_among"]:
        lines.append(f"(a common query: best of the newest {doc['ranked_among']:,} matches)")
    for hit in doc["results"]:
        lines.append(f"{hit['session_id']}  {when(hit['timestamp'])}  {hit['source']}  {hit['role']}")
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

    A query matching more than 2,000 messages (a common word) is ranked among its 2,000 most
    recent matches only, so it answers in milliseconds at any size; --json then reports
    "ranked_among": 2000 (null when every match was ranked).

    \b
    Examples:
      hermes-state search "disk usage"
      hermes-state search deploy* --source telegram --role assistant --json
    """
    report = search_report(settings().db, query, list(sources) or None, list(roles) or None, limit)
    emit({"ok": True, "query": query, **report}, _human)
