"""Running a search on a connection: FTS5 with bm25 ranking and snippets; a query with CJK text as
a tree of terms (CJK runs as substrings, through the trigram side table when the file has one);
and a literal-substring fallback for Latin words the FTS5 tokenizer did not match."""

from __future__ import annotations

import sqlite3
from typing import Any, NamedTuple

from hermes_state_tools.core.connection import is_lock_error
from hermes_state_tools.core.jsonutil import content_text
from hermes_state_tools.core.layouts import read_layout
from hermes_state_tools.search import newest, trigram
from hermes_state_tools.search.sanitize import contains_cjk, first_term, parse, plain_terms, sanitize_fts5_query
from hermes_state_tools.search.text_functions import TextFunction
from hermes_state_tools.tables.fts import text_index

SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS = ">>>", "<<<", "..."
_SNIPPET_TOKENS = 40
_SNIPPET_CHARS = 120
CONTEXT_CHARS = 200


def _filters(source_filter: Any, exclude_sources: Any, role_filter: Any) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for column, values, negate in (
        ("s.source", source_filter, False), ("s.source", exclude_sources, True), ("m.role", role_filter, False)
    ):
        if values is None:
            continue
        values = [values] if isinstance(values, str) else list(values)
        if not values and not negate:
            clauses.append("0")
        elif values:
            clauses.append(f"{column} {'NOT IN' if negate else 'IN'} ({','.join('?' * len(values))})")
            params += values
    return "".join(f" AND {c}" for c in clauses), params


_SELECT = (
    "SELECT m.id, m.session_id, m.role, m.timestamp, m.tool_name, {snippet} AS snippet, "
    "{content} AS _content, s.source, s.model, s.started_at AS session_started "
)


# A common word matches a large share of all messages, and bm25 ranks every match: the time grows
# with the matches (seconds at a million messages). Chat history is searched for recent things, so
# such a query ranks only its newest RECENT_WINDOW matches (newest by rowid, the order FTS5 walks
# its index in and can stop early); a query with no more matches than that is ranked over all of them.
RECENT_WINDOW = 2000


def window_for(offset: int, limit: int, window: int | None = None) -> int:
    """The window a page is ranked in: whole multiples of RECENT_WINDOW, so the pages of one block
    come from the same candidates (a page past the first block ranks a wider, newest-first window)."""
    base = RECENT_WINDOW if window is None else window
    return base * max(1, -(-(offset + limit) // base))


def _newest_first(where: str, texts: bool = False) -> str:
    """The matches newest first, after the filters in `where` (on `m` and `s`): their rowids, or with
    `texts`, (id, content)."""
    messages = " JOIN messages m ON m.id = messages_fts.rowid" if where or texts else ""
    sessions = " JOIN sessions s ON s.id = m.session_id" if where else ""
    columns = "m.id, m.content" if texts else "messages_fts.rowid"
    return (f"SELECT {columns} FROM messages_fts{messages}{sessions} WHERE messages_fts MATCH ?{where} "
            "ORDER BY messages_fts.rowid DESC")


def recent_floor(conn: sqlite3.Connection, fts_query: str, filters: tuple[str, list[Any]],
                 window: int) -> int | None:
    """The rowid of the `window`-th newest match (after filters); None unless there are more matches."""
    where, params = filters
    rows = conn.execute(_newest_first(where) + " LIMIT 2 OFFSET ?", (fts_query, *params, window - 1)).fetchall()
    return int(rows[0][0]) if len(rows) == 2 else None


def recent_texts(conn: sqlite3.Connection, fts_query: str, filters: tuple[str, list[Any]],
                 window: int) -> list[tuple[int, Any]]:
    """The `window` newest matches (after filters) and the next newest, or all of them when fewer:
    (id, text), newest first."""
    where, params = filters
    sql = _newest_first(where, texts=True) + " LIMIT ?"
    return [(row[0], row[1]) for row in conn.execute(sql, (fts_query, *params, window + 1))]


def fts_search(conn: sqlite3.Connection, fts_query: str, filters: tuple[str, list[Any]],
               limit: int, offset: int, window: int | None = None) -> list[dict[str, Any]]:
    """Best matches first (bm25) for an already-sanitized FTS5 query, among its newest `window`
    (default RECENT_WINDOW, see window_for) matches when it has more."""
    return fts_ranked(conn, fts_query, filters, limit, offset, window)[0]


_SNIPPET_ARGS = f"'{SNIPPET_OPEN}', '{SNIPPET_CLOSE}', '{SNIPPET_ELLIPSIS}', {_SNIPPET_TOKENS}"


def fts_ranked(conn: sqlite3.Connection, fts_query: str, filters: tuple[str, list[Any]],
               limit: int, offset: int, window: int | None = None) -> tuple[list[dict[str, Any]], int | None]:
    """fts_search's results, and how many of the newest matches they were ranked among (None: all)."""
    where, params = filters
    index = text_index(conn)
    fts_query = index.query(fts_query)
    wanted = window_for(offset, limit, window)
    term = newest.lone_term(conn, fts_query)
    found = None
    if term is not None and term.prefix and (found := newest.prefix_counts(conn, term, filters, wanted)):
        floor: int | None = min(found[0])
    elif term is not None:  # a phrase, or a rare prefix: FTS5 finds its newest matches (all when fewer),
        # ranked here as for more: FTS5's ranking would read every row holding it again, for bm25's idf
        matches = recent_texts(conn, fts_query, filters, wanted)
        floor = matches[wanted - 1][0] if len(matches) > wanted else None
        found = newest.texts_counts(term, matches[:wanted])
    else:
        floor = recent_floor(conn, fts_query, filters, wanted)
    average = newest.average_length(conn) if found else None
    if term is not None and found is not None and average is not None:
        counts, texts = found
        # every match ranked: FTS5's own order of ties (oldest first), as a selective query's
        page = newest.ranked(counts, texts, average, limit, offset, newest_first=floor is not None)
        return _rows_in_order(conn, term, page), None if floor is None else wanted
    if floor is not None:
        where, params = f"{where} AND messages_fts.rowid >= ?", [*params, floor]
    sql = _SELECT.format(snippet=f"snippet(messages_fts, {index.column}, {_SNIPPET_ARGS})", content="NULL") + (
        "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
        f"JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ?{where} "
        "ORDER BY rank LIMIT ? OFFSET ?"
    )
    results = [dict(row) for row in conn.execute(sql, (fts_query, *params, limit, offset))]
    return results, None if floor is None else wanted


def _rows_in_order(conn: sqlite3.Connection, term: newest.LoneTerm,
                   page: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    """The result rows of `page` (id, text) in its order, each with FTS5's snippet of it."""
    ids = [rowid for rowid, _text in page]
    sql = _SELECT.format(snippet="NULL", content="NULL") + (
        f"FROM messages m JOIN sessions s ON s.id = m.session_id WHERE m.id IN ({','.join('?' * len(ids))})")
    rows = {row["id"]: dict(row) for row in conn.execute(sql, ids)} if ids else {}
    snips = newest.snippets(term, page, _SNIPPET_ARGS)
    for rowid, row in rows.items():
        row["snippet"] = snips.get(rowid)
    return [rows[rowid] for rowid in ids if rowid in rows]


_ALONE_FUNCTION = "hst_stands_alone"


def stands_alone(content: Any, needle: str) -> bool:
    """Whether `needle` occurs in the text with no letter or digit right before or after it."""
    text = content.lower() if isinstance(content, str) else ""
    needle = needle.lower()
    at = text.find(needle)
    while at >= 0:
        before = text[at - 1] if at else " "
        after = text[at + len(needle)] if at + len(needle) < len(text) else " "
        if not before.isalnum() and not after.isalnum():
            return True
        at = text.find(needle, at + 1)
    return False


# The literal look after a plain-word query found no whole-word match reads each message's text: a
# query of words that never occur together would read the whole history (265 ms for 200,000 messages).
# It reads the newest LITERAL_WINDOW messages only (newest by id); the whole-word search reads them all.
LITERAL_WINDOW = 50_000


def literal_floor(conn: sqlite3.Connection) -> int | None:
    """The id of the LITERAL_WINDOW-th newest message; None when the store holds fewer."""
    row = conn.execute("SELECT id FROM messages ORDER BY id DESC LIMIT 1 OFFSET ?", (LITERAL_WINDOW - 1,)).fetchone()
    return None if row is None else int(row[0])


class Answer(NamedTuple):
    """A search's results; `literal_among`: how many of the newest messages its literal look read,
    when it looked for literal text and did not read every message (else None); `ranked_among`: how
    many of the newest matches were ranked, when the query matched more (a common query; else None)."""

    results: list[dict[str, Any]]
    literal_among: int | None = None
    ranked_among: int | None = None


def substring_search(conn: sqlite3.Connection, needles: list[str], filters: tuple[str, list[Any]],
                     limit: int, offset: int) -> Answer:
    """Messages among the newest LITERAL_WINDOW containing every needle literally (ASCII
    case-insensitive), newest first."""
    where, params = filters
    if (floor := literal_floor(conn)) is not None:
        where, params = f"{where} AND m.id >= ?", [*params, floor]
    # instr() rather than LIKE: LIKE stops at a NUL, and multimodal content starts with one
    # ("\x00json:"); instr() compares whole values, and `%`/`_` in it are plain characters.
    # A single character must stand alone: `a AND OR b` found the `a` of `Can` in every message.
    alone = TextFunction(conn, _ALONE_FUNCTION, stands_alone, more=1)
    likes = " AND ".join(alone.call("m.content", "?") if len(needle) == 1 else
                         "instr(lower(m.content), lower(?)) > 0" for needle in needles)
    sql = _SELECT.format(snippet="NULL", content="m.content") + (
        f"FROM messages m JOIN sessions s ON s.id = m.session_id WHERE {likes}{where} "
        "ORDER BY m.timestamp DESC, m.id DESC LIMIT ? OFFSET ?"
    )
    results = [dict(row) for row in conn.execute(sql, (*needles, *params, limit, offset))]
    alone.check()
    for result in results:
        result["snippet"] = make_snippet(content_text(result["_content"]), needles[0])
    return Answer(results, None if floor is None else LITERAL_WINDOW)


def cjk_search(conn: sqlite3.Connection, query: str, filters: tuple[str, list[Any]],
               limit: int, offset: int) -> list[dict[str, Any]]:
    """Each CJK run and each Latin word a term, with AND/OR/NOT/phrases as for Latin text; newest first."""
    node = parse(query)
    if node is None:
        return []
    where, params, glued = trigram.condition(conn, node)
    extra, extra_params = filters
    sql = _SELECT.format(snippet="NULL", content="m.content") + (
        f"FROM messages m JOIN sessions s ON s.id = m.session_id WHERE {where}{extra} "
        "ORDER BY m.timestamp DESC, m.id DESC LIMIT ? OFFSET ?"
    )
    results = [dict(row) for row in conn.execute(sql, (*params, *extra_params, limit, offset))]
    if glued is not None:
        glued.check()
    needle = first_term(node) or ""
    for result in results:
        result["snippet"] = make_snippet(content_text(result["_content"]), needle)
    return results


def make_snippet(text: str, needle: str) -> str:
    """A window of the text around the first match, the match wrapped in >>> <<<."""
    at = text.lower().find(needle.lower())
    if at < 0:
        return text[:_SNIPPET_CHARS]
    start = max(0, at - _SNIPPET_CHARS // 2)
    end = min(len(text), at + len(needle) + _SNIPPET_CHARS // 2)
    head = SNIPPET_ELLIPSIS if start > 0 else ""
    tail = SNIPPET_ELLIPSIS if end < len(text) else ""
    match = text[at:at + len(needle)]
    return f"{head}{text[start:at]}{SNIPPET_OPEN}{match}{SNIPPET_CLOSE}{text[at + len(needle):end]}{tail}"


# For each match: the id of the previous message of its session, its own id, the id of the next one.
_NEIGHBOURS = (
    "SELECT (SELECT id FROM messages WHERE session_id = hit.session_id AND (timestamp < hit.ts OR "
    "(timestamp = hit.ts AND id < hit.id)) ORDER BY timestamp DESC, id DESC LIMIT 1), hit.id, "
    "(SELECT id FROM messages WHERE session_id = hit.session_id AND (timestamp > hit.ts OR "
    "(timestamp = hit.ts AND id > hit.id)) ORDER BY timestamp, id LIMIT 1) "
    "FROM (SELECT ? AS n, ? AS session_id, ? AS ts, ? AS id{more}) AS hit ORDER BY hit.n"
)


# Matches per pair of statements: 4 values each stays under SQLite's oldest limit of 999 bound values,
# and the UNION ALL under its 500 compound terms.
_CONTEXT_CHUNK = 200


def contexts(conn: sqlite3.Connection, matches: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """For each match, the previous message, the match and the next message of the same session: two
    statements for a page of matches, not three for each."""
    out: list[list[dict[str, Any]]] = []
    for start in range(0, len(matches), _CONTEXT_CHUNK):
        chunk = matches[start:start + _CONTEXT_CHUNK]
        more = " UNION ALL SELECT ?, ?, ?, ?" * (len(chunk) - 1)
        params = [value for n, match in enumerate(chunk)
                  for value in (n, match["session_id"], match["timestamp"], match["id"])]
        trios = conn.execute(_NEIGHBOURS.format(more=more), params).fetchall()
        wanted = sorted({i for trio in trios for i in trio if i is not None})
        rows = {row[0]: row for row in conn.execute(
            f"SELECT id, role, content FROM messages WHERE id IN ({','.join('?' * len(wanted))})", wanted)}
        out += [[{"role": rows[i][1], "content": content_text(rows[i][2])[:CONTEXT_CHARS]}
                 for i in trio if i in rows] for trio in trios]
    return out


def search_messages(
    conn: sqlite3.Connection,
    query: str,
    source_filter: Any = None,
    exclude_sources: Any = None,
    role_filter: Any = None,
    limit: int = 20,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """FTS5 search (CJK as a literal substring), falling back to substrings when FTS finds nothing."""
    return answer(conn, query, source_filter, exclude_sources, role_filter, limit, offset).results


def answer(conn: sqlite3.Connection, query: str, source_filter: Any = None, exclude_sources: Any = None,
           role_filter: Any = None, limit: int = 20, offset: int = 0, *, show_all: bool = False) -> Answer:
    """search_messages' results, and how it found them (Answer). Messages the file's Hermes hides from
    search (rewound ones) are left out unless `show_all`."""
    if not query or not query.strip():
        return Answer([])
    filters = _shown(conn, _filters(source_filter, exclude_sources, role_filter), show_all)
    if contains_cjk(query):
        found = Answer(cjk_search(conn, query, filters, limit, offset))
    else:
        found = _fts_or_fallback(conn, query, filters, limit, offset)
    for result, around in zip(found.results, contexts(conn, found.results), strict=True):
        result.pop("_content", None)
        result["context"] = around
    return found


def _shown(conn: sqlite3.Connection, filters: tuple[str, list[Any]], show_all: bool) -> tuple[str, list[Any]]:
    """The filters, and the condition for the messages the file's Hermes finds by search (core/layouts.py)."""
    shown = "" if show_all else read_layout(conn).shown_messages(searching=True)
    return (f"{filters[0]} AND {shown}", filters[1]) if shown else filters


def _fts_or_fallback(conn: sqlite3.Connection, query: str, filters: tuple[str, list[Any]],
                     limit: int, offset: int) -> Answer:
    fts_query = sanitize_fts5_query(query)
    results: list[dict[str, Any]] = []
    ranked = None
    if fts_query:
        try:
            results, ranked = fts_ranked(conn, fts_query, filters, limit, offset)
        except sqlite3.OperationalError as exc:
            # The sanitizer should make every query valid; should FTS5 still refuse one, the
            # substring search below answers instead. Lock errors are real errors.
            if is_lock_error(exc):
                raise
            fts_query = ""
    terms = plain_terms(query)
    if results or not terms:
        return Answer(results, None, ranked if results else None)
    if offset and fts_query and fts_search(conn, fts_query, filters, 1, 0):
        return Answer(results)  # paged past the end of real word matches
    # Nothing matched as words: the text may still hold the terms inside longer tokens
    # or in characters the unicode61 tokenizer treats as separators.
    return substring_search(conn, terms, filters, limit, offset)
