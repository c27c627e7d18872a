"""The import's read-ahead: a bounded window of files asked for ahead, never a blocked or failed read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_state_tools.ingest.readahead import ReadAhead

pytestmark = pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise here")


def _files(folder: Path, count: int) -> list[Path]:
    folder.mkdir(exist_ok=True)
    for n in range(count):
        (folder / f"{n:03d}.jsonl").write_text("{}\n")
    return sorted(folder.iterdir())


def test_the_window_moves_on_a_chunk_at_a_time_and_stays_bounded(tmp_path):
    ahead = ReadAhead(_files(tmp_path / "s", 100), window=20, chunk=5)
    assert ahead.asked == 20  # the first window, before anything is read
    seen = []
    for _ in range(100):
        ahead.read()
        seen.append(ahead.asked)
    assert all(asked - read <= 20 for read, asked in enumerate(seen, 1))  # never more than a window ahead
    assert all(asked - read >= 20 - 5 for read, asked in enumerate(seen, 1) if asked < 100)  # nor far behind
    assert seen[-1] == 100


def test_a_fifo_or_a_missing_file_never_stops_it(tmp_path):
    listed = _files(tmp_path / "s", 3)
    os.mkfifo(tmp_path / "s" / "pipe.jsonl")  # opening it for reading would block without O_NONBLOCK
    ahead = ReadAhead([listed[0], tmp_path / "s" / "pipe.jsonl", tmp_path / "gone.jsonl", *listed[1:]], window=10)
    assert ahead.asked == 5


def test_a_closed_one_asks_for_nothing_more(tmp_path):
    ahead = ReadAhead(_files(tmp_path / "s", 50), window=10, chunk=5)
    ahead.close()
    ahead.read(30)
    assert ahead.asked == 10


def _evict(paths: list[Path]) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages are not dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def test_files_in_memory_are_not_asked_for_and_evicted_ones_are(tmp_path, monkeypatch):
    from hermes_state_tools.ingest import readahead

    asked: list[int] = []
    real = os.posix_fadvise
    monkeypatch.setattr(readahead.os, "posix_fadvise", lambda fd, *a: (asked.append(fd), real(fd, *a))[1])
    files = _files(tmp_path / "s", 40)
    ReadAhead(files, window=40, chunk=8)
    assert asked == []  # just written: in memory, one look per chunk and no request
    if not hasattr(os, "RWF_NOWAIT"):
        pytest.skip("no read that may not wait here: every file is asked for")
    _evict(files[16:])
    asked.clear()  # (the eviction's own calls)
    # (A look that misses starts that file's read: look at one the groups are not judged by.)
    if readahead._cached(files[16]):
        pytest.skip("this filesystem keeps files in memory (tmpfs): nothing to evict")
    ReadAhead(files, window=40, chunk=8)
    assert len(asked) == 24  # the three chunks whose files left memory, each file asked for
