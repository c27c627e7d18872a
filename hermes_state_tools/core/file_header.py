"""A SQLite file whose header was destroyed, told apart from a file that never was SQLite: past the
first page, most pages of a Hermes store are b-tree pages, each starting with its type byte and a
cell count and content offset that fit the page. Only a sample of pages is read."""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Any

_PAGE_TYPES = {2, 5, 10, 13}  # interior/leaf index, interior/leaf table
_SIZES = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
_SAMPLE = 256
_SHARE = 0.6  # half the size of the real one matches at most half the pages: never this many


def _btree_page(data: Any, at: int, size: int) -> bool:
    kind = data[at]
    if kind not in _PAGE_TYPES:
        return False
    header = 12 if kind in (2, 5) else 8
    cells = int.from_bytes(data[at + 3:at + 5], "big")
    content = int.from_bytes(data[at + 5:at + 7], "big") or 65536
    return header + 2 * cells <= content <= size


def _share(data: Any, size: int) -> float:
    pages = len(data) // size
    step = max(1, (pages - 1) // _SAMPLE)
    sampled = range(1, pages, step)
    return sum(_btree_page(data, page * size, size) for page in sampled) / len(sampled)


def page_size_of_pages(path: Path) -> int | None:
    """The smallest page size under which most pages past the first are b-tree pages; None when no
    size fits (not SQLite, or too small to tell)."""
    with open(path, "rb") as handle:
        length = handle.seek(0, 2)
        if length < 3 * _SIZES[0]:
            return None
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        for size in _SIZES:
            if length % size == 0 and length // size >= 3 and _share(data, size) >= _SHARE:
                return size
        return None
    finally:
        data.close()


def damaged_header_field(path: Path) -> str | None:
    """Which field of an SQLite header (the magic string intact) holds a value no SQLite writes: SQLite
    then calls the whole file 'not a database', though every page past the header is whole."""
    with open(path, "rb") as handle:
        header = handle.read(100)
    if len(header) < 100:
        return None
    size = int.from_bytes(header[16:18], "big")
    if not (size == 1 or (512 <= size <= 32768 and size & (size - 1) == 0)):
        return f"page size {size}"
    if header[19] not in (1, 2):  # (a write version past 2 makes a file read-only, not unreadable)
        return f"file format read version {header[19]}"
    if tuple(header[21:24]) != (64, 32, 32):
        return f"payload fractions {tuple(header[21:24])}"
    return None


def only_header_damaged(path: Path) -> str | None:
    """The damaged header field (damaged_header_field) when the pages past the header are SQLite's own
    (page_size_of_pages finds them): SQLite calls the file 'not a database', recover reads its pages."""
    field = damaged_header_field(path)
    return field if field is not None and page_size_of_pages(path) else None
