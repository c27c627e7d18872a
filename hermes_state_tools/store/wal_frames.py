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

import sys
from array import array
from dataclasses import dataclass
from pathlib import Path

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


def _words(data: bytes, big: bool) -> array[int]:
    words: array[int] = array("I")
    if words.itemsize != 4:
        words = array("L")  # a platform whose unsigned int is not 32 bits
    words.frombytes(data)
    if big != (sys.byteorder == "big"):
        words.byteswap()
    return words


def _checksum(data: bytes, s0: int, s1: int, big: bool) -> tuple[int, int]:
    words = _words(data, big)
    pairs = iter(words)
    for x0, x1 in zip(pairs, pairs, strict=True):
        s0 = (s0 + x0 + s1) & _MASK
        s1 = (s1 + x1 + s0) & _MASK
    return s0, s1


@dataclass(frozen=True)
class _Wal:
    data: bytes
    big: bool
    page_size: int
    salts: bytes

    @property
    def frames(self) -> int:
        return (len(self.data) - _HEADER) // (_FRAME_HEADER + self.page_size)

    def at(self, number: int) -> int:
        return _HEADER + (number - 1) * (_FRAME_HEADER + self.page_size)

    def stored(self, number: int) -> tuple[int, int]:
        """The checksum stored in frame `number` (0: the header's)."""
        at = 24 if number == 0 else self.at(number) + 16
        return int.from_bytes(self.data[at:at + 4], "big"), int.from_bytes(self.data[at + 4:at + 8], "big")

    def holds(self, number: int, start: tuple[int, int]) -> bool:
        """Whether frame `number` is one SQLite reads, its checksum going on from `start`."""
        at = self.at(number)
        head = self.data[at:at + _FRAME_HEADER]
        if head[8:16] != self.salts or head[0:4] == b"\0\0\0\0":
            return False
        page = self.data[at + _FRAME_HEADER:at + _FRAME_HEADER + self.page_size]
        s0, s1 = _checksum(head[0:8], *start, self.big)
        return _checksum(page, s0, s1, self.big) == self.stored(number)

    def commits(self, number: int) -> bool:
        at = self.at(number)
        return self.data[at + 4:at + 8] != b"\0\0\0\0"

    def page(self, number: int) -> int:
        at = self.at(number)
        return int.from_bytes(self.data[at:at + 4], "big")

    def generation(self, number: int) -> bool:
        """Whether the frame carries this WAL's salts (written since its last restart)."""
        at = self.at(number)
        return self.data[at + 8:at + 16] == self.salts


def _parse(data: bytes) -> _Wal | None:
    if len(data) < _HEADER:
        return None
    magic = int.from_bytes(data[0:4], "big")
    page_size = int.from_bytes(data[8:12], "big")
    if magic not in _MAGIC or page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        return None
    return _Wal(data, bool(magic & 1), page_size, data[16:24])


def _header_holds(wal: _Wal) -> bool:
    return _checksum(wal.data[0:24], 0, 0, wal.big) == wal.stored(0)


def scan(data: bytes) -> WalBreak | None:
    """The break in these WAL bytes that hides committed frames, or None (none, or only an unfinished
    tail: frames past the break that end no transaction were never committed)."""
    wal = _parse(data)
    if wal is None or wal.frames == 0:
        return None
    first = 0 if not _header_holds(wal) else next(
        (n for n in range(1, wal.frames + 1) if not wal.holds(n, wal.stored(n - 1))), None)
    if first is None:
        return None
    good, damaged = [], []
    for number in range(max(first, 1), wal.frames + 1):
        if number > first and wal.holds(number, wal.stored(number - 1)):
            good.append(number)
        elif wal.generation(number):  # a frame of an older generation is no damage: the WAL restarted over it
            damaged.append(number)
    commits = sum(1 for n in good if wal.commits(n))
    if not commits:
        return None  # an unfinished tail: nothing past the break was committed
    pages = {wal.page(n) for n in good}
    return WalBreak(first, len(good), commits, sum(1 for n in damaged if wal.page(n) not in pages))


def find_break(db: Path) -> WalBreak | None:
    """`scan` of the database's -wal, read twice: a writer that appends or restarts the WAL meanwhile
    (a live gateway) makes the two reads differ, and then nothing is said (it is no damage)."""
    wal = db.with_name(db.name + "-wal")
    try:
        first = wal.read_bytes()
        if not first or scan(first) is None:
            return None
        again = wal.read_bytes()
    except OSError:
        return None
    return scan(again) if again == first else None


def mend_copy(wal_path: Path) -> int:
    """Rewrite a private copy of a WAL so SQLite reads past its damage: the header's checksum made
    whole, every frame of this generation whose own checksum holds kept in order, the damaged ones
    left out (and those of older generations), the checksums chained again. Returns how many damaged
    frames were left out."""
    wal = _parse(wal_path.read_bytes())
    if wal is None:
        return 0
    header = bytearray(wal.data[:_HEADER])
    s0, s1 = _checksum(bytes(header[0:24]), 0, 0, wal.big)
    header[24:32] = s0.to_bytes(4, "big") + s1.to_bytes(4, "big")
    out, dropped = [bytes(header)], 0
    for number in range(1, wal.frames + 1):
        if not wal.holds(number, wal.stored(number - 1)):
            dropped += wal.generation(number)
            continue
        at = wal.at(number)
        head = bytearray(wal.data[at:at + _FRAME_HEADER])
        page = wal.data[at + _FRAME_HEADER:at + _FRAME_HEADER + wal.page_size]
        s0, s1 = _checksum(page, *_checksum(bytes(head[0:8]), s0, s1, wal.big), wal.big)
        head[16:24] = s0.to_bytes(4, "big") + s1.to_bytes(4, "big")
        out += [bytes(head), page]
    wal_path.write_bytes(b"".join(out))
    return dropped
