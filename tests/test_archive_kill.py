"""A push killed with SIGKILL at any moment, then run again, leaves what one clean push leaves."""

from __future__ import annotations

import gc
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from archive_helpers import archive_dump, build_store, push

from hermes_state_tools import SessionDB
from hermes_state_tools.archive.push import push_file

_PUSH = ("import sys; from pathlib import Path; from hermes_state_tools.archive.push import push_file; "
         "push_file(Path(sys.argv[1]), sys.argv[2], 'h', rows_per_batch=int(sys.argv[3]))")


def _start(db: Path, url: str, rows: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", _PUSH, str(db), url, str(rows)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _fork(db: Path, url: str, rows: int) -> multiprocessing.process.BaseProcess:
    """The same push in a process forked from this one: a real process on the same file and archive, with
    no new interpreter to load first, so a kill lands inside the push (a started `python -c` spends most of
    a small push loading). Frozen in the child, as helpers.invoke freezes it: a connection this process
    dropped is never collected (and closed) there."""
    gc.collect()
    gc.freeze()
    try:
        child = multiprocessing.get_context("fork").Process(target=push_file, args=(db, url, "h"),
                                                            kwargs={"rows_per_batch": rows})
        child.start()
    finally:
        gc.unfreeze()
    return child


def _grow(db: Path, round_: int) -> None:
    """Between kills the host keeps working: messages appended, a session ended and retitled."""
    with SessionDB(db) as store:
        for k in range(30):
            store.append_message("s1", "user", f"round {round_} message {k} 晴れ")
        store.set_session_title("s2", f"round {round_}")


def test_pushes_killed_at_random_moments_then_rerun_equal_one_clean_push(
        tmp_path: Path, archive_url: str, second_archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=12, messages=250)
    chance = random.Random(27)
    started = time.monotonic()
    timing = None
    for round_ in range(10):
        child = _fork(db, archive_url, 100)
        if timing is None:  # the first push runs to its end: how long a whole push takes here
            child.join()
            assert child.exitcode == 0  # (its traceback is in this test's captured stderr)
            timing = time.monotonic() - started
            _grow(db, round_)
            continue
        time.sleep(chance.uniform(0, timing))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        if round_ % 3 == 0:
            _grow(db, round_)
    push(db, archive_url, "h")
    push(db, second_archive_url, "h")
    assert archive_dump(archive_url) == archive_dump(second_archive_url)


def test_a_push_killed_before_anything_committed_leaves_the_next_one_whole(
        tmp_path: Path, archive_url: str, second_archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=4, messages=400)
    for delay in (0.05, 0.2, 0.4):
        child = _start(db, archive_url, 50)
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    push(db, archive_url, "h")
    push(db, second_archive_url, "h")
    assert archive_dump(archive_url) == archive_dump(second_archive_url)
