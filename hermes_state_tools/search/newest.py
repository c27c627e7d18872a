"""A lone prefix or phrase query ranked among its newest matches without FTS5's whole-index costs.

FTS5 answers a prefix (`deploy*`) by merging the lists of every word that starts with it, each time
it is asked (the floor of the window, the ranking, bm25's statistics: seconds at a million messages),
and bm25 counts every row that holds a phrase before it ranks one (its idf). The order a lone term
gets from bm25 needs neither: with one phrase in the query, the idf is the same factor in every row's
score. So for a query that is one prefix or one phrase (on a v6 index: one column, the default
tokenizer), the newest matches are found (a phrase's by FTS5, all of them when it has fewer than the
window; a prefix's among the newest messages), and each is scored as bm25 scores it, from its
instances and its length in tokens against the file's average. The tokens are counted here for
ASCII text, which the default tokenizer splits into runs of letters and digits, and by FTS5 itself
in a private in-memory table for any other text. The results are the ones FTS5 ranks first among
the same matches (ties as FTS5 orders them, oldest first, when every match is ranked; newest first
among the newest matches of a common query), with FTS5's snippets; anything else is left to FTS5
(None).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from hermes_state_tools.core.schema import FTS_TABLE

# bm25's constants in FTS5 (fts5_aux.c)
K1, B = 1.2, 0.75
# The newest messages a prefix query indexes for itself, as a multiple of its window: a prefix rarer
# than one message in PREFIX_SCAN_FACTOR is left to FTS5 (whose prefix merge is small for it).
PREFIX_SCAN_FACTOR = 5
_MARK = "\x01"
_ASCII_TOKEN = re.compile(r"[0-9a-z]+")
_LONE_TERM = re.compile(r'^(?:([^\W_]+)(\*?)|"([^"]+)"(\*?))$')
_SCRATCH = "hst_newest"


@dataclass(frozen=True)
class LoneTerm:
    """A query of one term: a prefix, or a phrase of several words (a plain word is FTS5's to rank)."""

    text: str  # the FTS5 query
    prefix: bool
    ascii_needle: bytes = b""  # its instances in ASCII text as _ascii_words spells it ("": a word is not ASCII)


def lone_term(conn: sqlite3.Connection, fts_query: str) -> LoneTerm | None:
    """The query as a lone prefix (of one word) or phrase (of several) when this file's index can be
    ranked here, else None."""
    found = _LONE_TERM.match(fts_query)
    if found is None or not _plain_index(conn):
        return None
    words = _tokens(found.group(1) or found.group(3) or "")
    prefix = bool(found.group(2) or found.group(4))
    if len(words) != 1 if prefix else len(words) < 2 or _overlaps_itself(words):
        return None
    needle = " " + "  ".join(words) + ("" if prefix else " ")
    return LoneTerm(fts_query, prefix, needle.encode() if all(map(_ASCII_TOKEN.fullmatch, words)) else b"")


# The default tokenizer on ASCII text: runs of letters and digits, lower-cased; all else separates.
_ASCII_FOLD = bytes(c + 32 if 65 <= c <= 90 else c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))


def _ascii_words(text: str) -> tuple[bytes, int]:
    """ASCII text's tokens, each between two spaces (" a  b  c "), and how many. A prefix's instances are
    then its occurrences after a space, a phrase's those of its words so spelt: counted by bytes.count
    (instances of a phrase never overlap: lone_term sees to it)."""
    words = text.encode("ascii").translate(_ASCII_FOLD).split()
    return b" " + b"  ".join(words) + b" ", len(words)


def _overlaps_itself(words: list[str]) -> bool:
    """Whether two instances of the phrase can overlap ("go go" in "go go go"): highlight() marks them
    as one, which would count the phrase short."""
    return any(words[:k] == words[-k:] for k in range(1, len(words)))


def _tokens(text: str) -> list[str]:
    """The text's tokens as the default tokenizer makes them (folded), in order."""
    scratch = Scratch()
    try:
        scratch.add([(1, text)])
        scratch.conn.execute(f"CREATE VIRTUAL TABLE temp.words USING fts5vocab(main, {_SCRATCH}, instance)")
        return [row[0] for row in scratch.conn.execute("SELECT term FROM temp.words ORDER BY offset")]
    finally:
        scratch.close()


def _plain_index(conn: sqlite3.Connection) -> bool:
    """The v6 index: `content` alone, the default tokenizer, sizes kept (bm25's lengths read here)."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (FTS_TABLE,)).fetchone()
    names = [r[1] for r in conn.execute(f"PRAGMA table_info({FTS_TABLE})")]
    sql = str(row[0] if row else "").lower()
    return names == ["content"] and not any(word in sql for word in ("tokenize", "columnsize", "detail"))


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints, as FTS5 writes its statistics."""
    values, at = [], 0
    while at < len(blob):
        value = 0
        for n in range(9):
            byte = blob[at]
            at += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values


# id -> (instances of the term, length in tokens): what bm25 reads of a row
Counts = dict[int, tuple[int, int]]


def ranked(counts: Counts, texts: dict[int, Any], average: float, limit: int, offset: int,
           newest_first: bool = True) -> list[tuple[int, Any]]:
    """One page (id, text) in bm25's order, ties newest first (or, not `newest_first`, oldest first as
    FTS5 orders them). bm25 in FTS5 is -idf * this score: one phrase, one idf for every row, so the
    order is the score's (computed as fts5_aux.c computes it)."""

    scores = {rowid: (tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * float(length) / average))
              for rowid, (tf, length) in counts.items()}
    tie = -1 if newest_first else 1
    order = sorted(scores, key=lambda rowid: (-scores[rowid], tie * rowid))[offset:offset + limit]
    return [(rowid, texts[rowid]) for rowid in order]


# Ids per statement: under SQLite's oldest limit of 999 bound values.
_CHUNK = 500


def _sizes(conn: sqlite3.Connection, table: str, ids: list[int]) -> dict[int, int]:
    """Each row's length in tokens, as FTS5 keeps it."""
    sizes: dict[int, int] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        rows = conn.execute(f"SELECT id, sz FROM {table}_docsize WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        sizes.update((int(rowid), size[0] if len(size) == 1 else (_varints(bytes(size)) or [0])[0])
                     for rowid, size in rows)
    return sizes


def _highlighted(conn: sqlite3.Connection, table: str, found: list[Any]) -> Counts | None:
    """Counts from highlight()'s marks (those the text held before subtracted) and FTS5's lengths."""
    sizes = _sizes(conn, table, [row[0] for row in found])
    counts: Counts = {}
    for rowid, marked, text in found:
        if not (isinstance(marked, str) and isinstance(text, str)) or rowid not in sizes:
            return None
        counts[rowid] = (marked.count(_MARK) - text.count(_MARK), sizes[rowid])
    return counts


def texts_counts(term: LoneTerm, rows: list[tuple[int, Any]]) -> tuple[Counts, dict[int, Any]] | None:
    """Counts and texts of matches FTS5 found, (id, text) each: a phrase's newest, or all of them
    (FTS5 would read every row that holds the phrase for bm25's idf, which orders nothing here)."""
    counts = _counts(term, rows)
    # every row is a match: one the count finds none in is an index that disagrees with the text
    return None if counts is None or len(counts) != len(rows) else (counts, dict(rows))


def _scratch_counts(term: LoneTerm, rows: list[tuple[int, Any]]) -> Counts | None:
    """Counts of the rows that match, indexed in a scratch table (matched as the file's index does)."""
    if not rows:
        return {}
    scratch = Scratch()
    try:
        scratch.add(rows)
        found = scratch.conn.execute(f"SELECT rowid, highlight({_SCRATCH}, 0, ?, ''), content "
                                     f"FROM {_SCRATCH} WHERE {_SCRATCH} MATCH ?", (_MARK, term.text))
        return _highlighted(scratch.conn, _SCRATCH, found.fetchall())
    finally:
        scratch.close()


def _counts(term: LoneTerm, rows: list[tuple[int, Any]]) -> Counts | None:
    """Counts of the rows that match: ASCII text tokenized here as the default tokenizer tokenizes
    it, any other text in a scratch table."""
    counts: Counts = {}
    rest = rows
    if term.ascii_needle:
        rest = []
        for rowid, text in rows:
            if not (isinstance(text, str) and text.isascii()):
                rest.append((rowid, text))
                continue
            spelt, length = _ascii_words(text)
            if tf := spelt.count(term.ascii_needle):
                counts[rowid] = (tf, length)
    others = _scratch_counts(term, rest)
    return None if others is None else {**counts, **others}


class Scratch:
    """A private in-memory FTS5 table with the file's tokenizer."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:", isolation_level=None)
        self.conn.execute(f"CREATE VIRTUAL TABLE {_SCRATCH} USING fts5(content)")

    def add(self, rows: list[tuple[int, Any]]) -> None:
        """Rows in any order; one transaction, ids ascending (FTS5 then writes one segment)."""
        self.conn.execute("BEGIN")
        self.conn.executemany(f"INSERT INTO {_SCRATCH}(rowid, content) VALUES (?, ?)", sorted(rows))
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


def snippets(term: LoneTerm, rows: list[tuple[int, Any]], args: str) -> dict[int, Any]:
    """FTS5's snippet of each row: it reads that row alone, so a scratch table of these rows gives the
    file's (and FTS5 never merges a prefix's lists over the whole index for it)."""
    scratch = Scratch()
    try:
        scratch.add(rows)
        return dict(scratch.conn.execute(f"SELECT rowid, snippet({_SCRATCH}, 0, {args}) FROM {_SCRATCH} "
                                         f"WHERE {_SCRATCH} MATCH ?", (term.text,)).fetchall())
    finally:
        scratch.close()


def _join(where: str) -> str:
    return " JOIN sessions s ON s.id = m.session_id" if where else ""


def prefix_counts(conn: sqlite3.Connection, term: LoneTerm, filters: tuple[str, list[Any]],
                  window: int) -> tuple[Counts, dict[int, Any]] | None:
    """Counts and texts of the prefix's newest `window` matches (after filters), read from the newest
    messages; None unless it has more (one more match is read to know it), or when finding them would
    read more than PREFIX_SCAN_FACTOR times that many messages."""
    where, params = filters
    sql = (f"SELECT m.id, m.content FROM messages m{_join(where)} WHERE m.id < ?{where} "
           "ORDER BY m.id DESC LIMIT ?")
    counts: Counts = {}
    texts: dict[int, Any] = {}
    below, read, chunk = 1 << 62, 0, window
    while True:
        rows = [(row[0], row[1]) for row in conn.execute(sql, (below, *params, chunk))]
        found = _counts(term, rows)
        if found is None:
            return None
        counts.update(found)
        texts.update((rowid, text) for rowid, text in rows if rowid in found)
        read += len(rows)
        if len(counts) > window:
            newest = sorted(counts, reverse=True)[:window]
            return {rowid: counts[rowid] for rowid in newest}, {rowid: texts[rowid] for rowid in newest}
        # the next read from the matches so far: enough for the rest, with a margin
        needed = (window + 1 - len(counts)) * read // max(1, len(counts)) * 5 // 4 + 1
        if len(rows) < chunk or needed > PREFIX_SCAN_FACTOR * window - read:
            return None
        below, chunk = rows[-1][0], needed


def average_length(conn: sqlite3.Connection) -> float | None:
    """Tokens per row over the whole index, as bm25 reads it (FTS5's averages record)."""
    row = conn.execute(f"SELECT block FROM {FTS_TABLE}_data WHERE id = 1").fetchone()
    counts = _varints(bytes(row[0])) if row and row[0] else []
    return counts[1] / counts[0] if len(counts) > 1 and counts[0] else None
