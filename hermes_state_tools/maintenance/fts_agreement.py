"""Does each search index agree with `messages`? Answered without writing to the live file.

Every FTS table of the file's layout (core/layouts.py) is compared: v6's messages_fts, a later
Hermes' messages_fts_trigram, each in its own form. Three questions, answered at different costs:

- which ids disagree: the ids the index holds (`messages_fts_docsize`, one row per indexed
  message) against the ids of `messages` finds rows written or deleted while a trigger was
  missing (cheap: two index scans);
- whether the indexed tokens are those of the current content: FTS5's own
  `INSERT INTO messages_fts(messages_fts, rank) VALUES('integrity-check', 1)` re-tokenizes the
  content table once and compares it with the index (~one tokenizing pass). It is an INSERT:
  refused on a read-only connection and needing the write lock on a writable one, so `check`
  runs it on a private snapshot of the file made with the backup API (see `snapshot_agrees`);
  a repair, which holds the write lock anyway, runs it in its own transaction.

- for an inline index (v11+, the table holds its own text), whether the text it holds is the text
  that layout indexes (`SearchIndex.text()` over each message): FTS5's integrity-check only compares
  the index with the table's own stored text, so the stored rows are compared with `messages` by id
  (one join on the primary keys).

Only when the integrity-check fails are the drifted messages named, by the slow audit
(`token_differences`): the content tokenized again into a contentless FTS5 table in the temp
schema, compared with the index token by token through fts5vocab 'instance' tables.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core import scratch
from hermes_state_tools.core.layouts import SearchIndex
from hermes_state_tools.core.schema import FTS_TABLE, object_names
from hermes_state_tools.errors import HermesStateError
from hermes_state_tools.maintenance.locate_damage import written_text
from hermes_state_tools.store.opening import open_read_connection

DOCSIZE = f"{FTS_TABLE}_docsize"
_INDEX_VOCAB = "temp.hst_audit_index_vocab"
_PROBE = "temp.hst_audit_probe"
_PROBE_VOCAB = "temp.hst_audit_probe_vocab"
_TOKENIZE = re.compile(r"tokenize\s*=\s*('(?:[^']|'')*'|\"[^\"]*\"|\w+)", re.IGNORECASE)
_CHUNK = 500
_SPACE_MARGIN = 1.1  # the snapshot needs the file's pages, plus room for the temp file system's own use
_SPACE_SLACK = 64 << 20


@dataclass(frozen=True)
class FtsDrift:
    """Message ids on which the index and `messages` disagree."""

    unindexed: tuple[int, ...] = ()  # messages the index lacks
    stale: tuple[int, ...] = ()  # index entries whose message is gone
    changed: tuple[int, ...] = ()  # messages indexed with other content than they hold
    unexplained: bool = False  # FTS5's integrity-check fails, yet no message can be named
    destroyed: tuple[int, ...] = ()  # messages whose text itself was destroyed (see _destroyed), not in changed


def _ids(conn: sqlite3.Connection, sql: str) -> tuple[int, ...]:
    return tuple(row[0] for row in conn.execute(sql))


def has_index(conn: sqlite3.Connection, name: str = FTS_TABLE) -> bool:
    return {name, f"{name}_docsize"} <= object_names(conn, "table")


def _tokenize_clause(conn: sqlite3.Connection, name: str) -> str:
    """The index's own `tokenize=...` option, so the probe splits text exactly as it does."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    match = _TOKENIZE.search(row[0] if row and row[0] else "")
    return f", tokenize={match.group(1)}" if match else ""


def _drop_probe(conn: sqlite3.Connection) -> None:
    """Remove the temp tables of a comparison (a repair's re-check runs inside its own transaction)."""
    for table in (_INDEX_VOCAB, _PROBE_VOCAB, _PROBE):
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def token_differences(conn: sqlite3.Connection, name: str = FTS_TABLE, inline: bool = False) -> set[int]:
    """Ids of documents whose indexed tokens differ from the text they index (slow: names them): the
    message's content for an external-content index, the index's own stored text for an inline one."""
    _drop_probe(conn)
    source = f"SELECT id, c0 FROM main.{name}_content" if inline else "SELECT id, content FROM main.messages"
    try:
        conn.execute(f"CREATE VIRTUAL TABLE {_PROBE} USING fts5(content, content=''{_tokenize_clause(conn, name)})")
        conn.execute(f"INSERT INTO {_PROBE}(rowid, content) {source}")
        conn.execute(f"CREATE VIRTUAL TABLE {_INDEX_VOCAB} USING fts5vocab(main, {name}, instance)")
        conn.execute(f"CREATE VIRTUAL TABLE {_PROBE_VOCAB} USING fts5vocab(temp, hst_audit_probe, instance)")
        columns = "term, doc, col, offset"  # the order fts5vocab streams in: EXCEPT then appends, not sorts
        rows = conn.execute(
            f"SELECT doc FROM (SELECT {columns} FROM {_INDEX_VOCAB} EXCEPT SELECT {columns} FROM {_PROBE_VOCAB}) "
            f"UNION SELECT doc FROM (SELECT {columns} FROM {_PROBE_VOCAB} EXCEPT SELECT {columns} FROM {_INDEX_VOCAB})"
        )
        return {row[0] for row in rows}
    finally:
        _drop_probe(conn)


def integrity_check(conn: sqlite3.Connection, name: str = FTS_TABLE) -> bool | None:
    """FTS5's own check of the index `name` against the text it indexes (True: they agree); None when
    this connection cannot run it (read-only, or the write lock is held elsewhere)."""
    try:
        conn.execute(f"INSERT INTO {name}({name}, rank) VALUES('integrity-check', 1)")
    except sqlite3.OperationalError:
        return None  # SQLITE_READONLY, locked, busy: the check did not run
    except sqlite3.DatabaseError:
        return False  # SQLITE_CORRUPT_VTAB: the index does not match the content
    return True


def _snapshot_dir(path: Path, size: int) -> Path | None:
    """A folder with room for a copy of the file: the temp folder, else the database's own; None if neither."""
    for folder in (Path(tempfile.gettempdir()), path.parent):
        try:
            if shutil.disk_usage(folder).free >= size * _SPACE_MARGIN + _SPACE_SLACK:
                return folder
        except OSError:
            continue
    return None


Agreements = dict[str, "bool | None"]  # FTS5's integrity-check of each search index, by table name


def snapshot_agrees(path: Path, names: tuple[str, ...] = (FTS_TABLE,)) -> Agreements:
    """FTS5's integrity-check of each index in `names` on a private copy of `path` (backup API from a
    read-only connection, one step, so one consistent snapshot): the live file is only read. Empty
    when no folder has room for the copy or the copy cannot be made (the caller falls back to the
    token audit)."""
    size = path.stat().st_size + _wal_size(path)
    folder = _snapshot_dir(path, size)
    if folder is None:
        return {}
    try:
        scratch_dir = scratch.make_dir("check", folder)
    except OSError:
        return {}
    try:
        return _check_copy(path, scratch_dir / "copy.db", names)
    except (sqlite3.Error, OSError, HermesStateError):
        return {}
    finally:
        shutil.rmtree(scratch_dir, ignore_errors=True)


def _wal_size(path: Path) -> int:
    try:
        return path.with_name(path.name + "-wal").stat().st_size
    except FileNotFoundError:
        return 0


def _check_copy(path: Path, copy: Path, names: tuple[str, ...] = (FTS_TABLE,)) -> Agreements:
    source = open_read_connection(path)  # leaves nothing beside the file, as every read does
    try:
        dest = sqlite3.connect(str(copy), isolation_level=None, check_same_thread=False)
        try:
            dest.execute("PRAGMA journal_mode=OFF")  # a throwaway copy: no journal, no fsync
            dest.execute("PRAGMA synchronous=OFF")
            source.backup(dest)
            return {name: integrity_check(dest, name) for name in names}
        finally:
            dest.close()
    finally:
        source.close()


def id_drift(conn: sqlite3.Connection, name: str = FTS_TABLE) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(unindexed, stale) message ids: messages the index lacks, index entries whose message is gone."""
    docsize = f"{name}_docsize"
    unindexed = _ids(conn, f"SELECT id FROM messages WHERE id NOT IN (SELECT id FROM {docsize}) ORDER BY id")
    stale = _ids(conn, f"SELECT id FROM {docsize} WHERE id NOT IN (SELECT id FROM messages) ORDER BY id")
    return unindexed, stale


def inline_text_drift(conn: sqlite3.Connection, index: SearchIndex) -> tuple[int, ...]:
    """Messages an inline index holds other text for than its layout indexes (`SearchIndex.text()`):
    one walk of `messages` joined by id to the index's stored rows."""
    return _ids(conn, f"SELECT m.id FROM messages m JOIN main.{index.name}_content c ON c.id = m.id "
                      f"WHERE c.c0 IS NOT {index.text('m')} ORDER BY m.id")


def drift(conn: sqlite3.Connection, index: SearchIndex, quick: bool = False,
          agrees: bool | None = None) -> FtsDrift | None:
    """Where `index` and `messages` disagree; None when the file lacks that FTS table.

    `agrees` is FTS5's integrity-check already run on a snapshot of this file; without it the check
    runs on `conn` when it can (a write transaction), and the token audit when it cannot.
    """
    if not has_index(conn, index.name) or (index.inline and f"{index.name}_content" not in object_names(conn, "table")):
        return None
    unindexed, stale = id_drift(conn, index.name)
    if quick:
        return FtsDrift(unindexed, stale)
    already = set(unindexed) | set(stale)
    texts = tuple(doc for doc in inline_text_drift(conn, index) if doc not in already) if index.inline else ()
    if agrees is None:
        agrees = integrity_check(conn, index.name)
    if agrees:
        return FtsDrift(unindexed, stale, texts)
    already |= set(texts)
    tokens = {doc for doc in token_differences(conn, index.name, index.inline) if doc not in already}
    changed = tuple(sorted(tokens | set(texts)))
    # The integrity-check also fails on damage no message explains (the index's own structure).
    unexplained = agrees is False and not (unindexed or stale or changed)
    destroyed = _destroyed(conn, changed)
    return FtsDrift(unindexed, stale, tuple(doc for doc in changed if doc not in destroyed), unexplained,
                    tuple(sorted(destroyed)))


def _destroyed(conn: sqlite3.Connection, ids: tuple[int, ...]) -> set[int]:
    """Of the messages the index holds other words for, those whose stored text is not what a writer
    wrote (locate_damage.written_text: stray zero bytes, bytes that are not UTF-8): bytes destroyed
    inside a page whose structure held, out of integrity_check's reach. Their text is what was lost,
    not their index entry, and rebuilding the index from it would erase the last record of the words."""
    rows = _of_messages(conn, "id, CAST(content AS BLOB)", ids)
    return {doc for doc, raw in rows if isinstance(raw, bytes) and not written_text(raw)}


def _of_messages(conn: sqlite3.Connection, columns: str, message_ids: Iterable[int]) -> Iterator[sqlite3.Row]:
    """`SELECT columns FROM messages` for these ids, _CHUNK ids a statement."""
    ids = list(message_ids)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        yield from conn.execute(f"SELECT {columns} FROM messages WHERE id IN ({','.join('?' * len(chunk))})", chunk)


def sessions_of(conn: sqlite3.Connection, message_ids: Iterable[int]) -> tuple[str, ...]:
    """The sessions these messages belong to, sorted."""
    return tuple(sorted({row[0] for row in _of_messages(conn, "DISTINCT session_id", message_ids)}))
