"""The import's read-ahead: a bounded window of files asked for ahead, never a blocked or failed read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes_state_tools.ingest.planning.readahead import ReadAhead

pytestmark = pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise here")


def _files(folder: Path, count: int, size: int = 3) -> list[Path]:
    folder.mkdir(exist_ok=True)
    for n in range(count):
        (folder / f"{n:03d}.jsonl").write_text("{}\n" + " " * (size - 3))
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


def test_files_in_memory_are_not_asked_for_and_others_are(tmp_path, monkeypatch):
    from hermes_state_tools.ingest.planning import readahead

    asked: list[int] = []
    real = os.posix_fadvise
    monkeypatch.setattr(readahead.os, "posix_fadvise", lambda fd, *a: (asked.append(fd), real(fd, *a))[1])
    files = _files(tmp_path / "s", 40, size=16384)
    ReadAhead(files, window=40, chunk=8)
    if hasattr(os, "RWF_NOWAIT"):
        assert asked == []  # just written: in memory, one look per chunk and no request
    else:
        assert len(asked) == 40  # no way to look: every file is asked for
    # Files the look finds out of memory (whether a file left the cache cannot be arranged here: on a
    # fast disk the look's own read can finish before it answers) are asked for, each of them.
    asked.clear()
    judged: list[str] = []
    monkeypatch.setattr(readahead, "_cached", lambda path: judged.append(path.name) or path.name > "024")
    ReadAhead(files, window=40, chunk=8)
    assert judged == ["007.jsonl", "015.jsonl", "023.jsonl", "031.jsonl", "039.jsonl"]  # each chunk's last file
    assert len(asked) == 24  # the first three chunks' files, not the last two


def test_a_file_just_written_is_found_in_memory(tmp_path):
    from hermes_state_tools.ingest.planning import readahead

    if not hasattr(os, "RWF_NOWAIT"):
        pytest.skip("no read that may not wait here")
    path = tmp_path / "a.jsonl"
    path.write_text("{}\n" * 5000)
    assert readahead._cached(path)
    assert not readahead._cached(tmp_path / "gone.jsonl")
    os.mkfifo(tmp_path / "pipe.jsonl")
    assert not readahead._cached(tmp_path / "pipe.jsonl")  # opened without blocking; no page to read
