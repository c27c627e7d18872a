"""Rows still on table-leaf pages that the b-tree no longer reaches (a destroyed interior or root page).

Pure Python over the file format (https://sqlite.org/fileformat2.html): every page of type 0x0D
not on the freelist is decoded cell by cell, overflow chains followed. The file is only read.
A cell that does not decode, or a rowid seen twice with different values (a stale copy), is
left out; the caller keeps only rows that look like rows of the table.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_state_tools.core.file_header import damaged_header_field, page_size_of_pages

Cell = tuple[int, int, list[Any]]  # (page number, rowid, values)
_LEAF_TABLE = 0x0D


def _varint(buf: Any, i: int) -> tuple[int, int]:
    value = 0
    for k in range(8):
        byte = buf[i + k]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, i + k + 1
    return (value << 8) | buf[i + 8], i + 9


def _value(serial: int, payload: bytes, at: int) -> tuple[Any, int]:
    if serial == 0:
        return None, at
    if 1 <= serial <= 7:
        size = (1, 2, 3, 4, 6, 8, 8)[serial - 1]
        raw = bytes(payload[at:at + size])
        if len(raw) != size:
            raise ValueError("short record")  # a destroyed page: the header promises more than is there
        value = struct.unpack(">d", raw)[0] if serial == 7 else int.from_bytes(raw, "big", signed=True)
        return value, at + size
    if serial in (8, 9):
        return serial - 8, at
    if serial >= 12:
        size = (serial - 12) // 2
        raw = bytes(payload[at:at + size])
        if len(raw) != size:
            raise ValueError("short record")
        return (raw.decode("utf-8") if serial % 2 else raw), at + size
    raise ValueError("reserved serial type")


def decode_record(payload: bytes) -> list[Any]:
    """One record (header of serial types, then the values) as a list of Python values."""
    header_len, i = _varint(payload, 0)
    serials = []
    while i < header_len:
        serial, i = _varint(payload, i)
        serials.append(serial)
    out, at = [], header_len
    for serial in serials:
        value, at = _value(serial, payload, at)
        out.append(value)
    if at != len(payload):
        raise ValueError("record length mismatch")
    return out


def _freelist(data: Any, page_size: int, usable: int, pages: int) -> set[int]:
    free, trunk, guard = set(), int.from_bytes(data[32:36], "big"), 0
    while 0 < trunk <= pages and guard < pages:  # trunk chain, best effort on a damaged file
        off = (trunk - 1) * page_size
        free.add(trunk)
        count = int.from_bytes(data[off + 4:off + 8], "big")
        for k in range(min(count, (usable - 8) // 4)):
            free.add(int.from_bytes(data[off + 8 + 4 * k:off + 12 + 4 * k], "big"))
        trunk, guard = int.from_bytes(data[off:off + 4], "big"), guard + 1
    return free


def _payload(data: Any, i: int, size: int, page_size: int, usable: int, pages: int) -> bytes:
    most, least = usable - 35, ((usable - 12) * 32 // 255) - 23
    if size <= most:
        return bytes(data[i:i + size])
    keep = least + ((size - least) % (usable - 4))
    local = keep if keep <= most else least
    parts, got, hops = [bytes(data[i:i + local])], local, 0
    nxt = int.from_bytes(data[i + local:i + local + 4], "big")
    while got < size:
        if not 1 < nxt <= pages or hops > pages:
            raise ValueError("bad overflow chain")
        off = (nxt - 1) * page_size
        take = min(usable - 4, size - got)
        parts.append(bytes(data[off + 4:off + 4 + take]))
        got, nxt, hops = got + take, int.from_bytes(data[off:off + 4], "big"), hops + 1
    return b"".join(parts)


def _cells(data: Any, page: int, page_size: int, usable: int, pages: int) -> list[Cell]:
    off, out = (page - 1) * page_size, []
    for c in range(int.from_bytes(data[off + 3:off + 5], "big")):
        try:
            i = off + int.from_bytes(data[off + 8 + 2 * c:off + 10 + 2 * c], "big")
            size, i = _varint(data, i)
            rowid, i = _varint(data, i)
            rowid = rowid - (1 << 64) if rowid >= 1 << 63 else rowid
            out.append((page, rowid, decode_record(_payload(data, i, size, page_size, usable, pages))))
        except (ValueError, IndexError, UnicodeDecodeError, struct.error, OverflowError, MemoryError):
            continue  # not a cell (garbage): skipped, never an error
    return out


_MOST_PAGES = 0xFFFFFFFE  # SQLite's largest page count (SQLITE_MAX_PAGE_COUNT)


def pages_missing(path: Path) -> int:
    """How many pages the file's header says it has beyond its end (a file cut short: a copy that
    stopped, a full disk, a truncate) that its -wal does not hold either; 0 when the header's count
    is not valid (SQLite before 3.7)."""
    with path.open("rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00") or damaged_header_field(path):
        return 0
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    counted, changes, valid_for = (int.from_bytes(header[at:at + 4], "big") for at in (28, 24, 92))
    if not page_size or not counted or changes != valid_for:
        return 0
    present = path.stat().st_size // page_size
    if counted <= present or counted > _MOST_PAGES:  # (more than SQLite ever makes: a damaged header)
        return 0
    held = sum(1 for page in _wal_pages(Path(f"{path}-wal"), page_size) if present < page <= counted)
    return counted - present - held


def _wal_pages(wal: Path, page_size: int) -> set[int]:
    """The page numbers of the frames of the WAL's current generation (its header's salts); a WAL of
    another page size, or none, holds none."""
    try:
        data = wal.read_bytes()
    except OSError:
        return set()
    if len(data) < 32 or int.from_bytes(data[8:12], "big") != page_size:
        return set()
    salts, pages = data[16:24], set()
    for at in range(32, len(data) - 24 - page_size + 1, 24 + page_size):
        if data[at + 8:at + 16] != salts:
            break
        pages.add(int.from_bytes(data[at:at + 4], "big"))
    return pages


def scan_table_leaves(path: Path) -> list[Cell]:
    """Every decodable cell of every table-leaf page not on the freelist; the file is opened 'rb'."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size < 512:
            return []
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        # a header whose fields no SQLite writes is read as destroyed: its page size says nothing
        header = data[:16] == b"SQLite format 3\x00" and damaged_header_field(path) is None
        page_size = int.from_bytes(data[16:18], "big") if header else page_size_of_pages(path) or 4096
        page_size = 65536 if page_size == 1 else page_size
        usable, pages = page_size - (data[20] if header else 0), len(data) // page_size
        # a destroyed header's freelist pointer is garbage: no page is taken for free (stale copies
        # of rows on free pages are told apart by candidates())
        free = _freelist(data, page_size, usable, pages) if header else set()
        cells: list[Cell] = []
        for page in range(2, pages + 1):
            if page not in free and data[(page - 1) * page_size] == _LEAF_TABLE:
                cells += _cells(data, page, page_size, usable, pages)
        return cells
    finally:
        data.close()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def plausible_message(row: dict[str, Any]) -> bool:
    """A messages row: the id column NULL (it is the rowid), session_id and role text, a numeric timestamp."""
    content = row.get("content")
    return (row.get("id") is None and isinstance(row.get("session_id"), str) and isinstance(row.get("role"), str)
            and _is_number(row.get("timestamp")) and (content is None or isinstance(content, str)))


def plausible_session(row: dict[str, Any]) -> bool:
    """A sessions row: text id and source, a numeric started_at."""
    return isinstance(row.get("id"), str) and isinstance(row.get("source"), str) and _is_number(row.get("started_at"))


def candidates(cells: list[Cell], columns: list[str], defaults: dict[str, Any],
               plausible: Callable[[dict[str, Any]], bool]) -> dict[int, dict[str, Any]]:
    """{rowid: row} of cells that look like rows of the table. Rows written before an ALTER TABLE ADD
    COLUMN carry fewer values (the defaults apply); a rowid seen with two different rows is dropped."""
    found: dict[int, dict[str, Any]] = {}
    ambiguous: set[int] = set()
    for _page, rowid, values in cells:
        if len(values) > len(columns):
            continue
        row = dict(zip(columns, list(values) + [defaults.get(c) for c in columns[len(values):]], strict=True))
        if not plausible(row):
            continue
        if rowid in found and found[rowid] != row:
            ambiguous.add(rowid)
        found.setdefault(rowid, row)
    for rowid in ambiguous:
        found.pop(rowid, None)
    return found
