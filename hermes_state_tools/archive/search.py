"""`archive search`: the local search's syntax (search/sanitize.parse: words, phrases, OR, NOT, prefix*,
CJK substrings) over every host's messages in the archive.

Words, phrases and prefixes become one `tsquery` per all-Latin subtree (the `simple` configuration,
no stemming, as FTS5's unicode61 does), answered by the GIN index on `messages.tsv`; a CJK substring
is a LIKE on `messages.cjk` (the text of messages that hold CJK), answered by its pg_trgm index.
Results are the newest matches first, so a common word stops at the first LIMIT matches it meets
walking back in time instead of ranking every match. Rewound messages (active = 0, not compacted)
are left out unless `everything`, as the local search leaves them out.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any

from hermes_state_tools.archive.connect import connected, driver
from hermes_state_tools.archive.schema import NAMESPACE, read_version
from hermes_state_tools.core.reports import Report
from hermes_state_tools.search.query import make_snippet
from hermes_state_tools.search.sanitize import And, Latin, Node, Not, Or, Substring, first_term, parse

_SNIPPET_SOURCE_CHARS = 20_000


@dataclass(frozen=True)
class SearchFilters:
    host: str | None = None
    source: str | None = None
    role: str | None = None
    since: float | None = None  # epoch seconds, inclusive
    until: float | None = None  # epoch seconds, exclusive
    everything: bool = False  # rewound messages too


@dataclass(frozen=True)
class ArchiveSearchReport(Report):
    query: str
    archive: str
    results: tuple[dict[str, Any], ...]


def _latin_tsquery(node: Latin, params: list[Any]) -> str:
    words = node.text.split()
    if node.prefix and len(words) == 1 and words[0].isalnum():
        params.append("'" + words[0].lower().replace("'", "''") + "':*")
        return "to_tsquery('simple', %s)"
    params.append(node.text)
    return "phraseto_tsquery('simple', %s)"


def _tsquery(node: Node, params: list[Any]) -> str | None:
    """One tsquery expression for a subtree of words only (None: it holds a CJK substring)."""
    if isinstance(node, Latin):
        return _latin_tsquery(node, params)
    if isinstance(node, Substring):
        return None
    mark = len(params)
    if isinstance(node, Not):
        inner = _tsquery(node.child, params)
        return None if inner is None else f"!!({inner})"
    parts = [_tsquery(child, params) for child in node.children]
    if any(part is None for part in parts):
        del params[mark:]
        return None
    return "(" + (" && " if isinstance(node, And) else " || ").join(p for p in parts if p) + ")"


def _has_word(node: Node) -> bool:
    """Whether `node` holds a plain word (which is also looked for glued to CJK, so not in one tsquery)."""
    if isinstance(node, Latin):
        return not node.phrase and node.text.isascii()
    if isinstance(node, Substring):
        return False
    if isinstance(node, Not):
        return _has_word(node.child)
    return any(_has_word(child) for child in node.children)


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _glued(node: Latin, params: list[Any]) -> str:
    """A word glued to CJK (`東京nginxが`) is inside one CJK token of the tsvector: it is also looked
    for in the CJK messages' text, delimited by anything but an ASCII letter or digit (as the local
    search's trigram side table holds such words)."""
    word = node.text.lower()
    params.append("(^|[^a-z0-9])" + re.escape(word) + ("" if node.prefix else "([^a-z0-9]|$)"))
    return "m.cjk ~* %s"


def condition(node: Node, params: list[Any]) -> str:
    """The SQL condition on `messages m` that `node` asks for."""
    if isinstance(node, Latin) and not node.phrase and node.text.isascii():
        query = _latin_tsquery(node, params)
        return f"(m.tsv @@ {query} OR {_glued(node, params)})"
    combined = _tsquery(node, params) if not _has_word(node) else None
    if combined is not None:
        return f"m.tsv @@ {combined}"
    if isinstance(node, Substring):
        params.append(_like(node.text))
        return "m.cjk LIKE %s"
    if isinstance(node, Not):
        return f"NOT coalesce({condition(node.child, params)}, false)"
    assert isinstance(node, (And, Or))
    joined = (" AND " if isinstance(node, And) else " OR ").join(condition(c, params) for c in node.children)
    return f"({joined})"


def _filters(filters: SearchFilters, params: list[Any]) -> str:
    clauses = []
    for column, value in (("m.host", filters.host), ("s.source", filters.source), ("m.role", filters.role)):
        if value is not None:
            clauses.append(f"{column} = %s")
            params.append(value)
    if filters.since is not None:
        clauses.append("m.timestamp >= %s")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append("m.timestamp < %s")
        params.append(filters.until)
    if not filters.everything:
        clauses.append("(m.active IS DISTINCT FROM 0 OR m.compacted = 1)")
    return "".join(f" AND {clause}" for clause in clauses)


_FROM = (f"FROM {NAMESPACE}.messages m LEFT JOIN {NAMESPACE}.sessions s "
         "ON s.host = m.host AND s.id = m.session_id")
_COLUMNS = ("m.host, m.session_id, m.local_id, m.role, m.timestamp, m.tool_name, s.source, s.title, "
            f"left(m.content, {_SNIPPET_SOURCE_CHARS})")
_NEWEST = "ORDER BY m.timestamp DESC, m.host DESC, m.local_id DESC LIMIT %s"
# Up to this many estimated matches, every match is collected through the word and CJK indexes and the
# newest kept; beyond, the messages are walked newest first until LIMIT matches are met.
FEW_MATCHES = 5000


def search_sql(node: Node, filters: SearchFilters, limit: int, many: bool) -> tuple[str, list[Any]]:
    """The search statement and its parameters (newest first, bounded by `limit`): for `many` matches
    the newest-first walk, else all matches collected through the indexes, then sorted."""
    params: list[Any] = []
    where = condition(node, params) + _filters(filters, params)
    params.append(limit)
    if many:
        return f"SELECT {_COLUMNS} {_FROM} WHERE {where} {_NEWEST}", params
    # Every match's key and time first, through the GIN indexes (planned without the ORDER BY and LIMIT,
    # which would let the planner walk the time index for a term it expects evenly spread in time),
    # the newest kept, and only those joined for their text and session.
    return (f"WITH matches AS MATERIALIZED (SELECT m.host, m.local_id, m.timestamp {_FROM} WHERE {where}), "
            f"hits AS MATERIALIZED (SELECT * FROM matches m {_NEWEST}) "
            f"SELECT {_COLUMNS} FROM hits JOIN {NAMESPACE}.messages m USING (host, local_id) "
            f"LEFT JOIN {NAMESPACE}.sessions s ON s.host = m.host AND s.id = m.session_id "
            "ORDER BY m.timestamp DESC, m.host DESC, m.local_id DESC"), params


def _estimated_matches(cur: Any, node: Node, filters: SearchFilters) -> float:
    """The planner's estimate of how many messages the indexes give as candidates (its statistics of
    the words' frequency). A phrase is estimated as its words together: every message holding them is
    read to check their order, and the planner's guess of a phrase's own matches is far too low."""
    params: list[Any] = []
    where = condition(node, params) + _filters(filters, params)
    where = where.replace("phraseto_tsquery(", "plainto_tsquery(")  # same arguments, the words in any order
    cur.execute(f"EXPLAIN (FORMAT JSON) SELECT 1 {_FROM} WHERE {where}", params)
    return float(cur.fetchone()[0][0]["Plan"]["Plan Rows"])


def _found(pg: Any, node: Node, filters: SearchFilters, limit: int) -> list[tuple[Any, ...]]:
    """The matching rows. A common term is walked newest first (the planner is kept from collecting
    every match to sort them); a rare one is collected whole through the indexes (walking would read
    every message to find it). The planner's own estimate of the term's frequency chooses. A rare
    term costs two round trips (the estimate, the search), each one statement: a search's latency
    is mostly its round trips."""
    with pg.cursor() as cur:
        many = _estimated_matches(cur, node, filters) > FEW_MATCHES
        sql, params = search_sql(node, filters, limit, many)
        with pg.transaction() if many else contextlib.nullcontext():
            if many:  # the setting lasts for this statement's transaction only
                cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute(sql, params)
            return list(cur.fetchall())


def run_search(pg: Any, query: str, filters: SearchFilters, limit: int) -> list[dict[str, Any]]:
    """The matches of `query` on an archive connection (autocommit), newest first, each with a
    snippet. An archive no push created yet (no `hermes.messages`) finds nothing."""
    node = parse(query)
    if node is None:
        return []
    try:
        found = _found(pg, node, filters, limit)
    except (driver().errors.UndefinedTable, driver().errors.InvalidSchemaName):
        if read_version(pg) is not None:
            raise
        return []
    needle = first_term(node) or ""
    keys = ("host", "session_id", "message_id", "role", "timestamp", "tool_name", "source", "title")
    return [{**dict(zip(keys, row[:-1], strict=True)), "snippet": make_snippet(row[-1] or "", needle)}
            for row in found]


def search_archive(url: str | None, query: str, filters: SearchFilters, limit: int = 20) -> ArchiveSearchReport:
    """Search every host's messages in the archive (read only)."""
    with connected(url) as (pg, server):
        return ArchiveSearchReport(query, server, tuple(run_search(pg, query, filters, limit)))
