"""The import's read-ahead thread: a bounded window of files asked for, never a blocked or failed read."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_state_tools.ingest.readahead import ReadAhead

pytestmark = pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise here")


class Watched(list[Path]):
    """The paths, counting how many the thread has taken (a list: what ReadAhead is given)."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__(paths)
        self.taken = 0
        self.done = threading.Event()

    def __iter__(self) -> Iterator[Path]:
        for path in super().__iter__():
            self.taken += 1
            yield path
        self.done.set()


def _settled(paths: Watched, expected: int) -> int:
    """How many the thread took once it stops taking more (it blocks on its window)."""
    deadline = time.monotonic() + 10
    while paths.taken < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # room to take one too many, which the assertions would see
    return paths.taken


def _files(folder: Path, count: int) -> list[Path]:
    folder.mkdir(exist_ok=True)
    for n in range(count):
        (folder / f"{n:03d}.jsonl").write_text("{}\n")
    return sorted(folder.iterdir())


def test_the_thread_stays_a_window_ahead_of_the_reading(tmp_path):
    paths = Watched(_files(tmp_path / "s", 20))
    ahead = ReadAhead(paths, window=3)
    try:
        # Three asked for, the fourth taken and waiting for a slot.
        assert _settled(paths, 4) == 4
        ahead.read(5)
        assert _settled(paths, 9) == 9
        ahead.read(100)
        assert paths.done.wait(10)
    finally:
        ahead.close()


def test_a_fifo_or_a_missing_file_never_stops_it(tmp_path):
    listed = _files(tmp_path / "s", 3)
    os.mkfifo(tmp_path / "s" / "pipe.jsonl")  # opening it for reading would block without O_NONBLOCK
    paths = Watched([listed[0], tmp_path / "s" / "pipe.jsonl", tmp_path / "gone.jsonl", *listed[1:]])
    ahead = ReadAhead(paths, window=10)
    try:
        assert paths.done.wait(10)
    finally:
        ahead.close()


def test_closing_ends_the_thread(tmp_path):
    paths = Watched(_files(tmp_path / "s", 10))
    before = threading.active_count()
    ahead = ReadAhead(paths, window=2)
    _settled(paths, 3)
    ahead.close()
    deadline = time.monotonic() + 10
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before
    assert paths.taken < 10  # it stopped, it did not run to the end
