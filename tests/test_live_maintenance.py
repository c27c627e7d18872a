"""vacuum, maintain and prune beside a live writer in another process (a gateway keeps its connection
open): no append fails, nothing is lost or doubled, the rewrites wait for a time the file is free, and
prune's batches let the writer's appends in between them."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import workers
from damage import cli, cli_json, raw
from page_damage import build_db

from hermes_state_tools.maintenance.checks import check_file
from hermes_state_tools.store.live import Pace
from hermes_state_tools.tables.deleting import batches

ctx = multiprocessing.get_context("spawn")


@contextmanager
def live_writer(path: Path, pause: float = 0.005) -> Iterator[dict[str, Any]]:
    """A writer process appending to `path` for the length of the block; its outcome fills the dict."""
    ready, stop, queue = ctx.Event(), ctx.Event(), ctx.Queue()
    process = ctx.Process(target=workers.append_live, args=(str(path), 0, ready, stop, queue, pause))
    process.start()
    outcome: dict[str, Any] = {}
    try:
        assert ready.wait(60)
        yield outcome
    finally:
        stop.set()
        _, value, error = queue.get(timeout=60)
        process.join(timeout=30)
        assert error is None, error
        outcome.update(value)


def assert_kept(path: Path, outcome: dict[str, Any]) -> None:
    """No append failed, and each one is in the store once."""
    assert outcome["failed"] == []
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT COUNT(*), COUNT(DISTINCT content) FROM messages WHERE session_id = ?",
                            (outcome["sid"],)).fetchone()
    finally:
        conn.close()
    assert rows == (outcome["appended"], outcome["appended"]) and outcome["appended"] >= 3


def ended_store(path: Path, sessions: int = 120, per_session: int = 20) -> Path:
    """A store of ended sessions a year old (all prunable), no -wal beside it."""
    build_db(path, sessions=sessions, per_session=per_session, size=60)
    raw(path, "UPDATE sessions SET ended_at = started_at + 60, end_reason = 'user_exit'",
        "PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def test_vacuum_beside_a_live_writer_exits_75_and_changes_nothing(db_path):
    build_db(db_path)
    _drop_after(db_path, "sess-00060")
    free = _pragma(db_path, "freelist_count")
    with live_writer(db_path) as outcome:
        result = cli("--db", db_path, "vacuum")
        # Not vacuumed (a VACUUM leaves no free page); the writer's appends may reuse a few.
        assert _pragma(db_path, "freelist_count") > free // 2 > 0
    assert result.exit_code == 75
    assert "another process has the database open" in result.stderr and "nothing was changed" in result.stderr
    assert_kept(db_path, outcome)
    assert check_file(db_path) == []


def test_maintain_beside_a_live_writer_defers_the_rewrites_and_says_why(db_path):
    build_db(db_path)
    _drop_after(db_path, "sess-00030")
    with live_writer(db_path) as outcome:
        code, doc = cli_json("--db", db_path, "maintain")
    assert code == 0 and doc["ok"]
    assert (doc["optimized"], doc["vacuumed"]) == (False, False) and "another process" in doc["deferred"]
    assert doc["free_bytes"] > 0  # a vacuum would have been worth it
    for when in ("before", "after"):
        assert doc[f"bytes_{when}"] == doc[f"database_bytes_{when}"] + doc[f"wal_bytes_{when}"]
    assert_kept(db_path, outcome)
    assert check_file(db_path) == []


def test_vacuum_reports_the_wal_apart_and_empties_it(db_path):
    build_db(db_path)
    holder = sqlite3.connect(db_path, isolation_level=None)  # this process: not "another process"
    try:
        holder.execute("DELETE FROM messages WHERE session_id > 'sess-00060'")
        wal = Path(f"{db_path}-wal").stat().st_size
        code, doc = cli_json("--db", db_path, "vacuum")
        assert code == 0 and doc["wal_bytes_before"] == wal > 0
        assert doc["bytes_before"] == doc["database_bytes_before"] + wal
        assert doc["wal_bytes_after"] == Path(f"{db_path}-wal").stat().st_size == 0
        assert doc["bytes_after"] == doc["database_bytes_after"] == db_path.stat().st_size
    finally:
        holder.close()


def test_prune_beside_a_live_writer_lets_its_appends_in_between_batches(db_path):
    ended_store(db_path, sessions=120, per_session=50)  # 6,000 messages: six batches or more
    with live_writer(db_path) as outcome:
        code, doc = cli_json("--db", db_path, "prune", "--older-than", "1", "--yes")
    assert code == 0 and doc["sessions_deleted"] == 120 and doc["messages_deleted"] == 6000
    seen = outcome["seen"]
    assert seen[0] == 121 and seen[-1] == 1
    # Appends landed while some sessions were gone and others not yet: between prune's transactions.
    between = {count for count in seen if 1 < count < 121}
    assert len(between) >= 2, sorted(set(seen))
    assert_kept(db_path, outcome)
    assert check_file(db_path) == []


def test_a_killed_prune_leaves_every_session_whole_or_gone(db_path):
    ended_store(db_path, sessions=200, per_session=50)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with live_writer(db_path) as outcome:  # its presence makes prune pause between batches
        prune = subprocess.Popen([sys.executable, "-m", "hermes_state_tools", "--db", str(db_path), "prune",
                                  "--older-than", "1", "--yes", "--no-progress"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        left = 201
        while left == 201 and prune.poll() is None:
            left = _count(db_path, "SELECT COUNT(*) FROM sessions")
        prune.send_signal(signal.SIGKILL)
        prune.wait()
    assert 1 < left < 201, "prune was killed after its first batch and before its last"
    sessions = _count(db_path, "SELECT COUNT(*) FROM sessions WHERE id LIKE 'sess-%'")
    assert 0 < sessions < 200
    # Every session left has all its 50 messages; no message lost its session.
    assert _count(db_path, "SELECT COUNT(*) FROM sessions s WHERE id LIKE 'sess-%' AND "
                           "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id) != 50") == 0
    assert _count(db_path, "SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)") == 0
    assert check_file(db_path) == []
    assert_kept(db_path, outcome)
    code, doc = cli_json("--db", db_path, "prune", "--older-than", "1", "--yes")
    assert code == 0 and doc["sessions_deleted"] == sessions and doc["messages_deleted"] == sessions * 50


def test_batches_keep_each_session_whole_and_in_order():
    ids = ["a", "b", "c", "d", "e"]
    counts = {"a": 400, "b": 400, "c": 2500, "d": 10, "e": 300}
    assert list(batches(ids, counts, lambda: 1000)) == [["a", "b"], ["c"], ["d", "e"]]
    assert list(batches(ids, {}, lambda: 2)) == [["a", "b"], ["c", "d"], ["e"]]
    assert list(batches([], counts, lambda: 1000)) == []
    sizes = iter([2, 1, 3])  # asked again for each batch
    assert list(batches(ids, {}, lambda: next(sizes))) == [["a", "b"], ["c"], ["d", "e"]]


def test_pace_scales_each_batch_toward_its_target_time():
    pace = Pace(first=1000, fewest=50, most=5000)
    pace.took(0.8, 0.2)  # four times too long
    assert pace() == 250
    pace.took(0.01, 0.2)  # far too short: at most doubled
    assert pace() == 500
    pace.took(100.0, 0.2)
    assert pace() == 50
    for _ in range(10):
        pace.took(0.1, 2.0)  # alone with the file: a longer target, up to the most
    assert pace() == 5000


def _drop_after(path: Path, last: str) -> None:
    """Delete the sessions after `last` with their messages: free pages a vacuum would give back."""
    raw(path, f"DELETE FROM messages WHERE session_id > '{last}'", f"DELETE FROM sessions WHERE id > '{last}'",
        "PRAGMA wal_checkpoint(TRUNCATE)")


def _pragma(path: Path, name: str) -> int:
    return _count(path, f"PRAGMA {name}")


def _count(path: Path, sql: str) -> int:
    conn = sqlite3.connect(path, timeout=10)
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()
