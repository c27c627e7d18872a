"""Does the FTS index agree with `messages`? Answered on a read-only connection.

FTS5's own `INSERT INTO messages_fts(messages_fts, rank) VALUES('integrity-check', 1)` compares
an external-content index with its table, but it is an INSERT: on a read-only connection it
fails with SQLITE_READONLY, and on a writable one it needs the write lock. So instead:

- always: the ids the index holds (`messages_fts_docsize`, one row per indexed message) are
  compared with the ids of `messages`, which finds rows written or deleted while a trigger was
  missing;
- unless quick: `messages.content` is tokenized again into a contentless FTS5 table in the temp
  schema (never in the file) and both indexes are compared token by token through fts5vocab
  'instance' tables, which also finds content updated without the index following.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from hermes_state_tools.core.schema import FTS_TABLE, object_names

_DOCSIZE = f"{FTS_TABLE}_docsize"
_INDEX_VOCAB = "temp.hst_audit_index_vocab"
_PROBE = "temp.hst_audit_probe"
_PROBE_VOCAB = "temp.hst_audit_probe_vocab"
_TOKENIZE = re.compile(r"tokenize\s*=\s*('(?:[^']|'')*'|\"[^\"]*\"|\w+)", re.IGNORECASE)
_CHUNK = 500


@dataclass(frozen=True)
class FtsDrift:
    """Message ids on which the index and `messages` disagree."""

    unindexed: tuple[int, ...] = ()  # messages the index lacks
    stale: tuple[int, ...] = ()  # index entries whose message is gone
    changed: tuple[int, ...] = ()  # messages indexed with other content than they hold


def _ids(conn: sqlite3.Connection, sql: str) -> tuple[int, ...]:
    return tuple(row[0] for row in conn.execute(sql))


def _tokenize_clause(conn: sqlite3.Connection) -> str:
    """The index's own `tokenize=...` option, so the probe splits text exactly as it does."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (FTS_TABLE,)).fetchone()
    match = _TOKENIZE.search(row[0] if row and row[0] else "")
    return f", tokenize={match.group(1)}" if match else ""


def _drop_probe(conn: sqlite3.Connection) -> None:
    """Remove the temp tables of a comparison (a repair's re-check runs inside its own transaction)."""
    for table in (_INDEX_VOCAB, _PROBE_VOCAB, _PROBE):
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def _token_differences(conn: sqlite3.Connection) -> set[int]:
    """Ids of documents whose indexed tokens differ from their current content's tokens."""
    _drop_probe(conn)
    try:
        conn.execute(f"CREATE VIRTUAL TABLE {_PROBE} USING fts5(content, content=''{_tokenize_clause(conn)})")
        conn.execute(f"INSERT INTO {_PROBE}(rowid, content) SELECT id, content FROM main.messages")
        conn.execute(f"CREATE VIRTUAL TABLE {_INDEX_VOCAB} USING fts5vocab(main, {FTS_TABLE}, instance)")
        conn.execute(f"CREATE VIRTUAL TABLE {_PROBE_VOCAB} USING fts5vocab(temp, hst_audit_probe, instance)")
        columns = "term, doc, col, offset"  # the order fts5vocab streams in: EXCEPT then appends, not sorts
        rows = conn.execute(
            f"SELECT doc FROM (SELECT {columns} FROM {_INDEX_VOCAB} EXCEPT SELECT {columns} FROM {_PROBE_VOCAB}) "
            f"UNION SELECT doc FROM (SELECT {columns} FROM {_PROBE_VOCAB} EXCEPT SELECT {columns} FROM {_INDEX_VOCAB})"
        )
        return {row[0] for row in rows}
    finally:
        _drop_probe(conn)


def drift(conn: sqlite3.Connection, quick: bool = False) -> FtsDrift | None:
    """Where the index and `messages` disagree; None when the file has no FTS table to compare."""
    if not {FTS_TABLE, _DOCSIZE} <= object_names(conn, "table"):
        return None
    unindexed = _ids(conn, f"SELECT id FROM messages WHERE id NOT IN (SELECT id FROM {_DOCSIZE}) ORDER BY id")
    stale = _ids(conn, f"SELECT id FROM {_DOCSIZE} WHERE id NOT IN (SELECT id FROM messages) ORDER BY id")
    changed: tuple[int, ...] = ()
    if not quick:
        already = set(unindexed) | set(stale)
        changed = tuple(sorted(doc for doc in _token_differences(conn) if doc not in already))
    return FtsDrift(unindexed, stale, changed)


def sessions_of(conn: sqlite3.Connection, message_ids: Iterable[int]) -> tuple[str, ...]:
    """The sessions these messages belong to, sorted."""
    ids = list(message_ids)
    found: set[str] = set()
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        rows = conn.execute(
            f"SELECT DISTINCT session_id FROM messages WHERE id IN ({','.join('?' * len(chunk))})", chunk
        )
        found.update(row[0] for row in rows)
    return tuple(sorted(found))
