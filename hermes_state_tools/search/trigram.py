"""CJK search: a query tree (sanitize.parse) as one SQL condition on `messages m`, and the trigram
side table that finds CJK substrings without reading every message.

The side table `hst_messages_trigram` (FTS5, tokenize='trigram') holds only the CJK runs of each
message, plus the Latin words unicode61 glued to CJK (`東京nginxが` is ONE messages_fts token, so
the word nginx in it is otherwise unfindable). It has no trigger on `messages`: the v6 schema
Hermes sees stays as it is. `refresh` indexes messages with id > the watermark in
`hst_messages_trigram_state` (AUTOINCREMENT ids are never reused) and drops rows of deleted
messages; a search treats every message past the watermark as a candidate, and every candidate
is checked with instr() on the live row, so a stale entry never gives a false hit. Without the
side table (a file `maintain` never ran on), CJK terms are instr() over every message. A file
whose Hermes keeps its own trigram index (`messages_fts_trigram`, schema 10 and later) is not
given the side table: that Hermes' index already finds CJK substrings.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

from hermes_state_tools.core.schema import object_names
from hermes_state_tools.search.sanitize import CJK_CLASS, CJK_RUN, And, Latin, Node, Not, Or, Substring
from hermes_state_tools.search.text_functions import TextFunction
from hermes_state_tools.tables.fts import Index, text_index

TRIGRAM_TABLE = "hst_messages_trigram"
HERMES_TRIGRAM_TABLE = "messages_fts_trigram"  # Hermes' own trigram index (schema 10 and later)
STATE_TABLE = "hst_messages_trigram_state"
GLUED_FUNCTION = "hst_glued"
_REFRESH_BATCH = 5000
_CJK = re.compile(f"[{CJK_CLASS}]")
_TOKEN_CHARS = re.compile(r"[^\W_]+")
_LATIN_RUN = re.compile(f"[^\\W_{CJK_CLASS}]+")


def cjk_text(content: str | None) -> str:
    """Only the CJK runs of a message, one per line: all the trigram table needs to hold."""
    return "\n".join(CJK_RUN.findall(content or ""))


def glued_text(content: str | None) -> str:
    """The Latin words unicode61 glued to CJK, lower-cased and space-delimited (' nginx ')."""
    words: list[str] = []
    for token in _TOKEN_CHARS.findall(content if isinstance(content, str) else ""):
        if _CJK.search(token) and not CJK_RUN.fullmatch(token):
            words += [word.lower() for word in _LATIN_RUN.findall(token)]
    return (" " + " ".join(words) + " ") if words else ""


def available(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has the trigram tokenizer (3.34+)."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.hst_trigram_probe USING fts5(x, tokenize='trigram')")
        conn.execute("DROP TABLE temp.hst_trigram_probe")
        return True
    except sqlite3.OperationalError:
        return False


def watermark(conn: sqlite3.Connection) -> int:
    """The highest message id indexed; -1 when the file has no side table."""
    if STATE_TABLE not in object_names(conn, "table") or TRIGRAM_TABLE not in object_names(conn, "table"):
        return -1
    row = conn.execute(f"SELECT last_id FROM {STATE_TABLE} WHERE id = 1").fetchone()
    return int(row[0]) if row else -1


def _ensure(conn: sqlite3.Connection) -> None:
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {TRIGRAM_TABLE} USING fts5(cjk, glued, tokenize='trigram')")
    conn.execute(f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} "
                 "(id INTEGER PRIMARY KEY CHECK (id = 1), last_id INTEGER NOT NULL)")
    conn.execute(f"INSERT OR IGNORE INTO {STATE_TABLE} (id, last_id) VALUES (1, 0)")


def holds_cjk(conn: sqlite3.Connection) -> bool:
    """Whether some message holds CJK text. Only messages with a non-ASCII character can (SQLite tells
    them by their byte length, without decoding them), and those are read with the pattern: a tenth of
    a second for 200,000 messages, where a GLOB over the CJK class read every message in 4 s."""
    rows = conn.execute("SELECT content FROM messages WHERE length(CAST(content AS BLOB)) != length(content)")
    return any(isinstance(row[0], str) and _CJK.search(row[0]) for row in rows)


def refresh(conn: sqlite3.Connection, rebuild: bool = False) -> dict[str, int]:
    """Index the messages past the watermark and drop rows of deleted ones, in the caller's
    transaction. Created only when some message holds CJK; `rebuild` starts from scratch."""
    if rebuild and watermark(conn) >= 0:
        conn.execute(f"DROP TABLE {TRIGRAM_TABLE}")
        conn.execute(f"DROP TABLE {STATE_TABLE}")
    return catch_up(conn, lambda fn, *args: fn(conn, *args))


def catch_up(conn: sqlite3.Connection, run: Callable[..., Any]) -> dict[str, int]:
    """`refresh` with each batch of messages in a write transaction of its own (`run(fn, *args)`: the
    write runner's run, for `maintain` beside a live Hermes, whose appends then wait for one batch, not
    the whole table); the search for a first CJK message is a read, made before any write."""
    last = watermark(conn)
    if last < 0 and (HERMES_TRIGRAM_TABLE in object_names(conn, "table") or not holds_cjk(conn)
                     or not available(conn)):
        return {"indexed": 0, "dropped": 0, "last_id": -1}
    added = 0
    while (batch := run(_index_batch, max(last, 0))) is not None:
        indexed, last = batch
        added += indexed
    dropped = run(_drop_deleted)
    return {"indexed": added, "dropped": dropped, "last_id": watermark(conn)}


def _index_batch(conn: sqlite3.Connection, after: int) -> tuple[int, int] | None:
    """The next _REFRESH_BATCH messages past `after` indexed and the watermark moved past them: (how many
    held CJK, the new watermark); None when none is left."""
    _ensure(conn)
    rows = conn.execute("SELECT id, content FROM messages WHERE id > ? ORDER BY id LIMIT ?",
                        (after, _REFRESH_BATCH)).fetchall()
    if not rows:
        return None
    docs = [(row[0], cjk_text(row[1]), glued_text(row[1])) for row in rows
            if isinstance(row[1], str) and _CJK.search(row[1])]
    conn.executemany(f"INSERT OR REPLACE INTO {TRIGRAM_TABLE} (rowid, cjk, glued) VALUES (?, ?, ?)", docs)
    conn.execute(f"UPDATE {STATE_TABLE} SET last_id = ? WHERE id = 1", (rows[-1][0],))
    return len(docs), rows[-1][0]


def _drop_deleted(conn: sqlite3.Connection) -> int:  # (after a batch, which made the tables)
    dropped: int = conn.execute(f"DELETE FROM {TRIGRAM_TABLE} WHERE rowid NOT IN (SELECT id FROM messages)").rowcount
    return dropped


def _has_bareword(node: Node) -> bool:
    if isinstance(node, Latin):
        return not node.phrase
    if isinstance(node, Not):
        return _has_bareword(node.child)
    if isinstance(node, (And, Or)):
        return any(_has_bareword(child) for child in node.children)
    return False


def fts_expression(node: Node) -> str | None:
    """The FTS5 query for a Latin-only subtree (None when it holds a substring or only NOTs)."""
    if isinstance(node, Latin):
        return node.fts()
    if isinstance(node, Or):
        parts = [fts_expression(child) for child in node.children]
        return None if None in parts else "(" + " OR ".join(p for p in parts if p) + ")"
    if isinstance(node, And):
        positive = [fts_expression(c) for c in node.children if not isinstance(c, Not)]
        negative = [fts_expression(c.child) for c in node.children if isinstance(c, Not)]
        if not positive or None in positive or None in negative:
            return None
        expression = "(" + " AND ".join(p for p in positive if p) + ")"
        for part in negative:
            expression = f"({expression} NOT {part})"
        return expression
    return None


class Compiler:
    """A query tree -> a WHERE condition on `messages m` and its parameters."""

    def __init__(self, mark: int, index: Index, glued: TextFunction | None = None) -> None:
        self.mark = mark  # -1: no side table, substrings are instr() over every message
        self.index = index
        self.glued = glued  # glued_text as a SQL function, for the messages past the side table's mark
        self.params: list[Any] = []

    def mergeable(self, node: Node) -> bool:
        # With the side table a bareword also matches glued words, which FTS5 alone cannot say.
        return fts_expression(node) is not None and (self.mark < 0 or not _has_bareword(node))

    def sql(self, node: Node) -> str:
        if isinstance(node, Latin) and not node.phrase and self.mark >= 0:
            return self.latin_word(node)
        if not isinstance(node, Not) and (expression := fts_expression(node)) is not None and self.mergeable(node):
            self.params.append(self.index.query(expression))
            return "m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?)"
        if isinstance(node, Substring):
            return self.substring(node)
        if isinstance(node, Not):
            return f"NOT ({self.sql(node.child)})"
        if isinstance(node, Latin):
            raise AssertionError(node)  # a Latin leaf always has an FTS5 form
        children = list(node.children)
        if isinstance(node, And):
            # The Latin parts as one FTS5 query first: it narrows the rows instr() has to read.
            latin = [c for c in children if not isinstance(c, Not) and self.mergeable(c)]
            if len(latin) > 1:
                children = [And(tuple(latin)), *[c for c in children if c not in latin]]
        joiner = " AND " if isinstance(node, And) else " OR "
        return "(" + joiner.join(self.sql(child) for child in children) + ")"

    def latin_word(self, node: Latin) -> str:
        """A Latin word: an FTS5 token, or the same word glued to CJK (side table, or the tail)."""
        word = node.text.lower()
        assert self.glued is not None, "a side table (mark >= 0) comes with the glued function"
        self.params += [self.index.query(node.fts()), f"% {word}%" if node.prefix else f"% {word} %", self.mark,
                        f" {word}" if node.prefix else f" {word} "]
        return (f"m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? "
                f"UNION ALL SELECT rowid FROM {TRIGRAM_TABLE} WHERE glued LIKE ? "
                f"UNION ALL SELECT id FROM messages WHERE id > ? AND instr({self.glued.call('content')}, ?) > 0)")

    def substring(self, node: Substring) -> str:
        # CJK only: exact; a phrase mixing Latin and CJK: ASCII case-insensitive, like FTS5.
        check = "instr(m.content, ?) > 0" if node.cjk_only else "instr(lower(m.content), lower(?)) > 0"
        runs = CJK_RUN.findall(node.text)
        if self.mark < 0 or not runs:
            self.params.append(node.text)
            return check
        run = max(runs, key=len)
        if len(run) >= 3:  # a trigram MATCH; shorter runs scan the side table's small CJK-only text
            candidates = f"SELECT rowid FROM {TRIGRAM_TABLE} WHERE {TRIGRAM_TABLE} MATCH ?"
            self.params.append('"' + run + '"')
        else:
            candidates = f"SELECT rowid FROM {TRIGRAM_TABLE} WHERE instr(cjk, ?) > 0"
            self.params.append(run)
        self.params += [self.mark, node.text]
        return f"(m.id IN ({candidates} UNION ALL SELECT id FROM messages WHERE id > ?) AND {check})"


def condition(conn: sqlite3.Connection, node: Node) -> tuple[str, list[Any], TextFunction | None]:
    """The WHERE condition for `node` on this connection (with or without its side table), and the SQL
    function it calls (its `check` after the statement ran)."""
    mark = watermark(conn)
    glued = TextFunction(conn, GLUED_FUNCTION, glued_text) if mark >= 0 else None
    compiler = Compiler(mark, text_index(conn), glued)
    return compiler.sql(node), compiler.params, glued
