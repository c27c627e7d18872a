"""A new store's pages are written back while it is built (store/writeback.py): only the time of the
final fsync changes, never the file, and a system that cannot be asked changes nothing."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from hermes_state_tools.store import writeback
from hermes_state_tools.store.writeback import writing_back

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sync_file_range is Linux's")


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "hermes-state-writeback"]


def test_the_file_written_during_the_block_is_all_there_and_nothing_is_left_running(tmp_path: Path) -> None:
    path = tmp_path / "building.db"
    path.write_bytes(b"")
    written = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY)
    try:
        with writing_back(path, interval=0.01):
            for n in range(32):  # pages dirtied while the write-back is asked for again and again
                os.pwrite(fd, written, n << 20)
                os.pwrite(fd, written[-4096:], 0)  # a page changed again after it may have been written
                threading.Event().wait(0.002)
            assert sys.platform.startswith("linux") == bool(_threads())
    finally:
        os.close(fd)
    assert _threads() == []
    data = path.read_bytes()
    assert len(data) == 32 << 20 and data[:4096] == written[-4096:] and data[4096:1 << 20] == written[4096:]
    assert data[-(1 << 20):] == written


@linux_only
def test_the_call_starts_write_back_of_a_file_and_is_refused_for_a_pipe() -> None:
    start = writeback._sync_file_range()
    assert start is not None
    read_end, write_end = os.pipe()
    try:
        assert start(read_end) == -1  # a pipe has no pages to write: ESPIPE
    finally:
        os.close(read_end)
        os.close(write_end)
    fd = os.open(__file__, os.O_RDONLY)
    try:
        assert start(fd) == 0
    finally:
        os.close(fd)


@linux_only
def test_a_refused_call_ends_the_asking_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    monkeypatch.setattr(writeback, "_sync_file_range", lambda: lambda fd: asked.append(fd) or -1)
    path = tmp_path / "f"
    path.write_bytes(b"x")
    with writing_back(path, interval=0.001):
        while not asked:
            threading.Event().wait(0.01)
        threading.Event().wait(0.05)  # 50 more intervals: no more asking after the refusal
        assert len(asked) == 1
    assert path.read_bytes() == b"x"


def test_where_the_system_cannot_be_asked_the_block_runs_as_it_is(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(writeback, "_sync_file_range", lambda: None)
    ran = []
    with writing_back(tmp_path / "missing too"):
        ran.append(_threads())
    assert ran == [[]]
    with writing_back(tmp_path / "no such file"):  # a file that cannot be opened: nothing to ask for
        ran.append(_threads())
    assert ran == [[], []]
