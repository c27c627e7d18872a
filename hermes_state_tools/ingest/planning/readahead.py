"""Asking the kernel to read the next files while this process parses the current ones.

Old transcripts are rarely in the page cache, and an import of thousands of small files would
otherwise wait on the disk for each one in turn: 10,000 files (84 MB) read one by one took 1.22 s
cold and 0.14 s cached; with the next 256 files asked for ahead, 0.27 s cold. Every `CHUNK` files
read, the next chunk beyond a window of `WINDOW` is asked for with `posix_fadvise(WILLNEED)`,
which only starts the reads, so only the window, not the whole history, sits in the cache. A chunk
whose last file can be read at once (in memory: files just written, or read before) is not asked for. This
runs in the reading thread: a thread of its own fought the reader for the GIL at every system
call and cost a cached import more than it saved. Where the call does not exist (Windows,
macOS), nothing is asked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

WINDOW = 256
CHUNK = 64


class ReadAhead:
    """Files asked for ahead of their reading, in the order they will be read."""

    def __init__(self, paths: Sequence[Path | str], window: int = WINDOW, chunk: int = CHUNK) -> None:
        self._paths = paths if hasattr(os, "posix_fadvise") else ()
        self._window, self._chunk = window, chunk
        self._read = self._asked = 0
        self._ask()

    def read(self, files: int = 1) -> None:
        """`files` more of the paths were read: the window moves on, a chunk at a time."""
        self._read += files
        if self._asked - self._read < self._window - self._chunk:
            self._ask()

    def _ask(self) -> None:
        end = min(len(self._paths), self._read + self._window)
        for start in range(self._asked, end, self._chunk):
            group = self._paths[start:min(start + self._chunk, end)]
            if _cached(group[-1]):
                continue  # files just written (or read before) are in memory: nothing to ask for
            for path in group:
                with contextlib.suppress(OSError):  # a file that cannot be opened is reported by its reader
                    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO never blocks this
                    try:
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
                    finally:
                        os.close(fd)
        self._asked = max(self._asked, end)

    @property
    def asked(self) -> int:
        """How many of the paths have been asked for so far."""
        return self._asked

    def close(self) -> None:
        self._paths = ()


_NOWAIT = getattr(os, "RWF_NOWAIT", None)


def _cached(path: Path | str) -> bool:
    """Whether the file's first byte can be read without waiting (a read with RWF_NOWAIT, Linux 4.14 and
    later): in the page cache, or on a disk fast enough that the read the look itself starts is done
    before it answers (read-ahead gains little there). The last of a group of files says for the
    group, in one look instead of a request each. False where it cannot tell."""
    if _NOWAIT is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        os.preadv(fd, [bytearray(1)], 0, _NOWAIT)
    except OSError:  # not in memory (EAGAIN), not a file, or no such read here
        return False
    finally:
        os.close(fd)
    return True
