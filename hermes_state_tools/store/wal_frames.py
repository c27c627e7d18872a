"""Committed transactions a -wal file holds beyond a damaged frame, which SQLite will never read.

SQLite replays a WAL frame by frame and stops at the first frame whose checksum fails
(https://sqlite.org/fileformat2.html#walformat): every frame after it is ignored, and the next
write restarts the WAL over them. One destroyed frame in the middle (a bad sector, a page written
out of order before a power cut) so hides every later commit, though its bytes are still there.
Each frame's checksum goes on from the one stored in the frame before it, so the frames past
the damage can still be checked one by one; `mend_copy` rewrites a private copy of the WAL
without the damaged frames, so SQLite reads the rest (what `recover` does).
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from hermes_state_tools.core.paths import sidecar_paths

_MAGIC = (0x377F0682, 0x377F0683)  # the low bit: checksums over big-endian words
_HEADER = 32
_FRAME_HEADER = 24
_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class WalBreak:
    """Where SQLite stops reading a WAL, and what of this WAL's generation lies beyond."""

    frame: int  # the first frame SQLite does not read (1-based; 0: the WAL header itself)
    good_after: int  # frames of this WAL's generation after it whose own checksum holds
    commits_after: int  # of those, the ones that end a transaction
    pages_lost: int  # damaged frames whose page no later good frame holds again

    def detail(self) -> str:
        where = "its header" if self.frame == 0 else f"frame {self.frame}"
        lost = f"; {self.pages_lost} damaged page(s) no later frame holds again" if self.pages_lost else ""
        return (f"the -wal holds {self.commits_after} committed transaction(s) past damage at {where}, which SQLite "
                f"does not read, and the next write to the database drops them{lost}")


def _checksum(data: bytes, s0: int, s1: int, big: bool) -> tuple[int, int]:
    """SQLite's WAL checksum of `data` (a multiple of 8 bytes), going on from (s0, s1)."""
    pairs = iter(struct.unpack(f"{'>' if big else '<'}{len(data) // 4}I", data))
    for x0, x1 in zip(pairs, pairs, strict=True):
        s0 = (s0 + x0 + s1) & _MASK
        s1 = (s1 + x1 + s0) & _MASK
    return s0, s1


@dataclass(frozen=True)
class _Header:
    prefix: bytes  # the header's first 24 bytes as SQLite needs them (rebuilt when they were damaged)
    holds: bool  # its own checksum holds (else SQLite reads no frame of the WAL)
    checksum: tuple[int, int]  # as stored: the first frame's checksum goes on from it

    @property
    def big(self) -> bool:
        return bool(int.from_bytes(self.prefix[0:4], "big") & 1)

    @property
    def page_size(self) -> int:
        return int.from_bytes(self.prefix[8:12], "big")

    @property
    def salts(self) -> bytes:
        return self.prefix[16:24]


_PAGE_SIZES = tuple(2**n for n in range(9, 17))


def _header(handle: BinaryIO) -> _Header | None:
    """The WAL's header, read from the start of `handle`, which is left at the first frame. A header
    whose own checksum fails (a flipped bit in its magic, page size or salts) makes SQLite read no
    frame at all; its frames are still there, and the one layout under which they check out (byte
    order, page size, salts) is found from the first two."""
    data = handle.read(_HEADER)
    if len(data) < _HEADER:
        return None
    stored = _stored(data[24:32])
    magic, page_size = int.from_bytes(data[0:4], "big"), int.from_bytes(data[8:12], "big")
    if magic in _MAGIC and page_size in _PAGE_SIZES and _checksum(data[0:24], 0, 0, bool(magic & 1)) == stored:
        return _Header(data[0:24], True, stored)
    sizes = ((page_size,) if page_size in _PAGE_SIZES else ()) + _PAGE_SIZES
    orders = (bool(magic & 1), not magic & 1) if magic in _MAGIC else (True, False)
    for size in sizes:
        handle.seek(_HEADER)
        first, second = handle.read(_FRAME_HEADER + size), handle.read(_FRAME_HEADER + size)
        if len(first) < _FRAME_HEADER + size:
            continue  # not one whole frame of this size
        for big in orders:
            if _frames_check_out(first, second, stored, big):
                handle.seek(_HEADER)
                layout = _MAGIC[big].to_bytes(4, "big") + data[4:8] + size.to_bytes(4, "big") + data[12:16]
                return _Header(layout + first[8:16], False, stored)
    return None


def _frames_check_out(first: bytes, second: bytes, stored: tuple[int, int], big: bool) -> bool:
    """The first frame's checksum goes on from the header's, or (that stored checksum being what was
    damaged) the second's from the first's."""
    if _frame_holds(first, stored, big):
        return True
    return len(second) == len(first) and second[8:16] == first[8:16] and _frame_holds(
        second, _stored(first[16:24]), big)


def _frame_holds(frame: bytes, before: tuple[int, int], big: bool) -> bool:
    head = frame[:_FRAME_HEADER]
    return head[0:4] != b"\0\0\0\0" and _checksum(
        frame[_FRAME_HEADER:], *_checksum(head[0:8], *before, big), big) == _stored(head[16:24])


def _stored(field: bytes) -> tuple[int, int]:
    return int.from_bytes(field[0:4], "big"), int.from_bytes(field[4:8], "big")


@dataclass(frozen=True)
class _Frame:
    head: bytes  # the 24-byte frame header
    page: bytes
    holds: bool  # SQLite would read it, its checksum going on from the one stored before it
    current: bool  # it carries this WAL's salts (written since the last restart)

    @property
    def number(self) -> int:  # the database page it holds
        return int.from_bytes(self.head[0:4], "big")

    @property
    def commits(self) -> bool:
        return self.head[4:8] != b"\0\0\0\0"


def _frames(handle: BinaryIO, header: _Header) -> Iterator[_Frame]:
    """Every whole frame after the header, in order, read one at a time (memory stays flat)."""
    before = header.checksum
    size = _FRAME_HEADER + header.page_size
    while len(frame := handle.read(size)) == size:
        head, page = frame[:_FRAME_HEADER], frame[_FRAME_HEADER:]
        current = head[8:16] == header.salts
        yield _Frame(head, page, current and _frame_holds(frame, before, header.big), current)
        before = _stored(head[16:24])


def _scan(handle: BinaryIO) -> WalBreak | None:
    header = _header(handle)
    if header is None:
        return None
    first: int | None = None if header.holds else 0
    good_pages: set[int] = set()
    damaged: list[int] = []
    good = commits = 0
    for number, frame in enumerate(_frames(handle, header), 1):
        if first is None and frame.holds:
            continue  # the part SQLite reads
        if first is None:
            first = number
        if number > first and frame.holds:
            good, commits = good + 1, commits + frame.commits
            good_pages.add(frame.number)
        elif frame.current:  # a frame of an older generation is no damage: the WAL restarted over it
            damaged.append(frame.number)
    if first is None or not commits:
        return None  # whole, or an unfinished tail: nothing past the break was committed
    return WalBreak(first, good, commits, sum(1 for page in damaged if page not in good_pages))


def scan(data: bytes) -> WalBreak | None:
    """The break in these WAL bytes that hides committed frames, or None (none, or only an unfinished
    tail: frames past the break that end no transaction were never committed)."""
    return _scan(io.BytesIO(data))


# Past this size the look before a write is skipped (about 25 ms per MB): a WAL that large is
# looked at by `check` and `recover`, which read it whole.
SCAN_BEFORE_WRITE = 64 * 2**20


def find_break(db: Path, largest: int | None = None) -> WalBreak | None:
    """`scan` of the database's -wal (None when it is larger than `largest`), read frame by frame.
    A writer that appends or restarts the WAL meanwhile (a live gateway) changes its size or time,
    and then nothing is said: what was read may be torn, and it is no damage."""
    wal = sidecar_paths(db)[0]
    try:
        before = wal.stat()
        if before.st_size == 0 or (largest is not None and before.st_size > largest):
            return None
        with wal.open("rb") as handle:
            found = _scan(handle)
        after = wal.stat()
    except OSError:
        return None
    same = (before.st_size, before.st_mtime_ns, before.st_ino) == (after.st_size, after.st_mtime_ns, after.st_ino)
    return found if same else None


def mend_copy(wal_path: Path) -> int:
    """Rewrite a private copy of a WAL so SQLite reads past its damage: the header's checksum made
    whole, every frame of this generation whose own checksum holds kept in order, the damaged ones
    left out (and those of older generations), the checksums chained again. Returns how many damaged
    frames were left out."""
    mended, dropped = wal_path.with_name(wal_path.name + ".mended"), 0
    with wal_path.open("rb") as source:
        header = _header(source)
        if header is None:
            return 0
        s0, s1 = _checksum(header.prefix, 0, 0, header.big)
        with mended.open("wb") as out:
            out.write(header.prefix + s0.to_bytes(4, "big") + s1.to_bytes(4, "big"))
            for frame in _frames(source, header):
                if not frame.holds:
                    dropped += frame.current
                    continue
                s0, s1 = _checksum(frame.page, *_checksum(frame.head[0:8], s0, s1, header.big), header.big)
                out.write(frame.head[0:16] + s0.to_bytes(4, "big") + s1.to_bytes(4, "big") + frame.page)
    os.replace(mended, wal_path)
    return dropped
