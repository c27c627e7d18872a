"""Where a file is damaged, and whether what is damaged is canonical data or derived from it.

Canonical: the rows only this file holds (`sessions`, `messages`, `schema_version`,
`sqlite_sequence`, and any other table, such as the toolkit's extras). Derived: what can be
rebuilt from them (every index, the FTS index `messages_fts*`, a duplicated schema entry).

Measured on SQLite 3.40.1: a destroyed page shows as `pagetype = 'corrupted'` in `dbstat`,
which names the b-tree exactly; `quick_check`/`integrity_check` list index damage but *raise*
SQLITE_CORRUPT on a destroyed table page, so they are iterated (keeping the lines before the
error) and, when they raise, run per table to name the damaged ones.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from hermes_state_tools.core.connection import is_corrupt
from hermes_state_tools.core.jsonutil import MULTIMODAL_PREFIX
from hermes_state_tools.store.opening import ReadConnection

CANONICAL_TABLES = frozenset({"sessions", "messages", "schema_version", "sqlite_sequence"})
_MAX_LINES = 100
_PAGE = re.compile(r"(?:Page|On tree page|page) (\d+)")
_NAMED = re.compile(r"(?:index|in) ([A-Za-z_][A-Za-z0-9_]*)")
_NOT_INDEXED = re.compile(r"row (\d+) missing from index ([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Damage:
    """One damaged object: its name, 'canonical' or 'derived', and what SQLite said about it."""

    name: str
    data: str
    detail: str


def _objects(conn: sqlite3.Connection) -> dict[str, str]:
    return {row[0]: row[1] for row in conn.execute("SELECT name, type FROM sqlite_master")}


def classify(name: str, objects: dict[str, str]) -> str:
    """'derived' for indexes and the FTS index (rebuilt from the rows), else 'canonical'."""
    if name.startswith("messages_fts") or objects.get(name) == "index" or name.startswith("sqlite_autoindex_"):
        return "derived"
    return "canonical"


def duplicated_entries(conn: sqlite3.Connection) -> list[Damage]:
    """sqlite_master rows present twice (readable only on a writable_schema connection)."""
    rows = conn.execute("SELECT type, name, COUNT(*) FROM sqlite_master GROUP BY type, name HAVING COUNT(*) > 1")
    return [Damage(name, "derived" if name.startswith("messages_fts") else "canonical",
                   f"sqlite_master holds {count} entries for the {kind} {name}") for kind, name, count in rows]


def corrupted_pages(conn: sqlite3.Connection) -> dict[str, list[int]]:
    """b-tree name -> destroyed page numbers, from dbstat (empty when dbstat is unavailable)."""
    try:
        rows = conn.execute("SELECT name, pageno FROM dbstat WHERE pagetype = 'corrupted' ORDER BY name, pageno")
        out: dict[str, list[int]] = {}
        for name, page in rows:
            out.setdefault(name, []).append(page)
        return out
    except sqlite3.DatabaseError:
        return {}


def _lines(conn: sqlite3.Connection, sql: str) -> tuple[list[str], str | None]:
    """The lines a check pragma returns, split, and the error that stopped it (if any)."""
    lines: list[str] = []
    try:
        for (text,) in conn.execute(sql):
            lines += [line for line in str(text).split("\n") if line and line != "ok"]
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise
        return lines, " ".join(str(exc).split())
    return lines, None


def _owner(conn: sqlite3.Connection, line: str, objects: dict[str, str]) -> str | None:
    for name in _NAMED.findall(line):
        if name in objects:
            return str(name)
    match = _PAGE.search(line)
    if match:
        try:
            row = conn.execute("SELECT name FROM dbstat WHERE pageno = ?", (int(match.group(1)),)).fetchone()
        except sqlite3.DatabaseError:
            row = None
        return str(row[0]) if row else None
    return None


_MULTIMODAL = MULTIMODAL_PREFIX.encode()


def stray_zero(text: str | bytes) -> bool:
    """A zero byte in stored text other than the one that starts Hermes' own JSON-content marker."""
    if isinstance(text, bytes):
        return b"\0" in text.removeprefix(_MULTIMODAL)
    return "\0" in text.removeprefix(MULTIMODAL_PREFIX)


def written_text(raw: bytes) -> bool:
    """Whether stored text is what a writer could have written: no stray zero byte, valid UTF-8 (Hermes
    writes Python strings; zeros and stray bytes are what a destroyed page leaves)."""
    if stray_zero(raw):
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass(frozen=True)
class _Mismatch:
    """'row N missing from index I': the N-th row of I's table and its entry in I differ. N counts the
    rows of the table's scan (rowid order), not the rowid: the two part once a row was deleted."""

    line: str
    position: int
    index: str
    table: str


def _mismatches(conn: sqlite3.Connection, lines: list[str]) -> dict[int, _Mismatch]:
    """The integrity lines (by their place in `lines`) that say a row and its index entry differ."""
    tables = {str(name): str(table) for name, table in conn.execute(
        "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'")}
    found = {}
    for at, line in enumerate(lines):
        match = _NOT_INDEXED.search(line)
        if match is not None and match.group(2) in tables:
            found[at] = _Mismatch(line, int(match.group(1)), match.group(2), tables[match.group(2)])
    return found


def _rowids_at(conn: sqlite3.Connection, table: str, positions: set[int]) -> tuple[dict[int, int], str | None]:
    """position -> rowid in the table's scan, all in one pass up to the last position asked (not a scan
    per integrity line), and SQLite's error when the scan stopped at a destroyed page before it."""
    rowids: dict[int, int] = {}
    cursor = conn.execute(f'SELECT rowid FROM "{table}" NOT INDEXED')
    try:
        for position, (rowid,) in enumerate(cursor, 1):
            if position in positions:
                rowids[position] = int(rowid)
            if position >= max(positions):
                break
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise
        return rowids, " ".join(str(exc).split())
    finally:
        cursor.close()
    return rowids, None


def _destroyed_row(conn: sqlite3.Connection, mismatch: _Mismatch, rowid: int | None,
                   unreadable: str | None) -> Damage | None:
    """A row and its index entry differ (see _Mismatch), and SQLite does not say which one changed. The
    last page of a long row's overflow chain, zeroed (a well-formed end of the chain), changes the row:
    its last values (the indexed timestamp) read 0 and its text ends in zero bytes. Then the table's
    rows are damaged (canonical), and a rebuild of the index would make the destroyed row its truth.
    `rowid`: the row at the line's position (None: the scan ended before it, or stopped at `unreadable`)."""
    table, line = mismatch.table, mismatch.line
    if rowid is None:
        return None if unreadable is None else Damage(
            table, "canonical", f"{line}: row {mismatch.position} of {table} cannot be read ({unreadable})")
    try:
        columns = [str(row[1]) for row in conn.execute(f'PRAGMA table_info("{table}")')]
        indexed = {str(row[2]) for row in conn.execute(f'PRAGMA index_info("{mismatch.index}")')}
        # as bytes, and a REAL as itself (text read as text would fail to decode on stray bytes)
        both = ", ".join(f'CAST("{c}" AS BLOB), CASE typeof("{c}") WHEN \'real\' THEN "{c}" END' for c in columns)
        values = conn.execute(f'SELECT {both} FROM "{table}" NOT INDEXED WHERE rowid = ?', (rowid,)).fetchone()
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise
        why = " ".join(str(exc).split())
        return Damage(table, "canonical", f"{line}: row {rowid} of {table} cannot be read ({why})")
    if values is None:
        return None
    pairs = zip(columns, values[0::2], values[1::2], strict=True)
    if not any((isinstance(raw, bytes) and not written_text(raw)) or (name in indexed and value == 0.0
               and isinstance(value, float)) for name, raw, value in pairs):
        return None
    return Damage(table, "canonical", f"{line}: row {rowid} of {table} itself reads zeros or stray bytes where "
                                      "its values were (a destroyed page of it)")


def _row_or_entry(mismatch: _Mismatch, objects: dict[str, str]) -> Damage:
    """A row that differs from its entry in an index which itself reads whole (no page of it destroyed,
    its entries all counted): one bit of the row may have flipped (a timestamp, a session id) as well as
    one of the entry, and SQLite cannot say which. Rebuilding the index would make the row's value the
    truth without a word; it is canonical damage: `recover` copies the rows as they read, and says so."""
    return Damage(mismatch.table, classify(mismatch.table, objects), f"{mismatch.line}: the row or its entry "
                  "changed, and SQLite cannot say which (the index itself reads whole)")


def _rows_readable(conn: sqlite3.Connection, table: str) -> bool:
    """A full scan of the table's own b-tree (no index) reads every row, each value whole: a count
    alone never follows a row's overflow pages, and passed a table whose long rows cannot be read."""
    try:
        for _row in conn.execute(f'SELECT * FROM "{table}" NOT INDEXED'):
            pass
        return True
    except sqlite3.DatabaseError as exc:
        if not is_corrupt(exc):
            raise
        return False


def _per_table(conn: sqlite3.Connection, pragma: str, objects: dict[str, str]) -> list[Damage]:
    """Run the check on each table (with its indexes) when the whole-file check raised."""
    found = []
    for table in sorted(n for n, t in objects.items() if t == "table"):
        lines, error = _lines(conn, f'PRAGMA {pragma}("{table}")')
        if not lines and error is None:
            continue
        what = error or lines[0]
        if _rows_readable(conn, table):
            found.append(Damage(f"an index of {table}", "derived", what))
        else:
            found.append(Damage(table, classify(table, objects), what))
    return found


def diagnose(conn: sqlite3.Connection, quick: bool = False) -> list[Damage]:
    """Every damaged object of the file on `conn`, each once, canonical ones first."""
    pragma = "quick_check" if quick else "integrity_check"
    if isinstance(conn, ReadConnection) and conn.schema_damaged:
        found = duplicated_entries(conn) or [Damage("sqlite_master", "canonical", conn.schema_damaged)]
    else:
        found = duplicated_entries(conn)
    objects = _objects(conn)
    lines, error = _lines(conn, f"PRAGMA {pragma}({_MAX_LINES})")
    # dbstat names the destroyed pages: a pass over every page as long as quick_check itself, so a
    # quick check that found nothing skips it (quick_check walks the same b-trees and fails on any
    # page dbstat would call corrupted).
    if not (quick and not lines and error is None):
        for name, pages in corrupted_pages(conn).items():
            shown = ", ".join(map(str, pages[:5])) + (f", ... ({len(pages)} pages)" if len(pages) > 5 else "")
            found.append(Damage(name, classify(name, objects), f"page {shown} destroyed"))
    mismatches = _mismatches(conn, lines)
    owners = [_owner(conn, line, objects) for line in lines]
    broken = {d.name for d in found} | {owner for at, owner in enumerate(owners)
                                         if owner is not None and not _NOT_INDEXED.search(lines[at])}
    located = {table: _rowids_at(conn, table, {m.position for m in mismatches.values() if m.table == table})
               for table in {m.table for m in mismatches.values()}}
    for at, (line, owner) in enumerate(zip(lines, owners, strict=True)):
        mismatch = mismatches.get(at)
        if mismatch is not None:
            rowids, unreadable = located[mismatch.table]
            destroyed = _destroyed_row(conn, mismatch, rowids.get(mismatch.position), unreadable)
            if destroyed is not None:
                found.append(destroyed)
                continue
            if mismatch.index not in broken:
                found.append(_row_or_entry(mismatch, objects))
                continue
        found.append(Damage(owner or "file structure", classify(owner, objects) if owner else "derived", line))
    if error is not None and not any(d.name in objects for d in found):
        found += _per_table(conn, pragma, objects) or [Damage("unknown", "canonical", error)]
    return _merge(found)


def _merge(found: list[Damage]) -> list[Damage]:
    """One entry per object (its first detail); canonical damage first."""
    seen: dict[str, Damage] = {}
    for damage in found:
        seen.setdefault(damage.name, damage)
    pages_only = {d.name for d in seen.values() if d.name == "file structure"}
    if pages_only and len(seen) > 1:
        seen.pop("file structure")  # 'Page N is never used' follows from a destroyed tree already named
    return sorted(seen.values(), key=lambda d: (d.data != "canonical", d.name))
