"""The write runner: whole-transaction rollback, lock retries with a budget, PASSIVE checkpoint cadence."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator

import pytest

from hermes_state_tools import DatabaseLockedError, SessionDB


def insert_then(error: BaseException):
    """A write function that inserts a session and a message, then fails."""
    def write(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('half', 'cli', 1.0)")
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('half', 'user', 'x', 1.0)")
        raise error
    return write


@pytest.fixture
def holder(db_path, db) -> Iterator[sqlite3.Connection]:
    """A second connection to the same file; the test decides when it takes the write lock."""
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=0, check_same_thread=False)
    yield conn
    if conn.in_transaction:
        conn.execute("ROLLBACK")
    conn.close()


@pytest.fixture
def locked(db, holder) -> list[str]:
    """Session "s1" exists, `holder` has the write lock; returns the store's traced statements from now on."""
    db.create_session("s1", "cli")
    # Shorten SQLite's own wait so the test spends its time in the application-level retries.
    db._conn.execute("PRAGMA busy_timeout = 5")
    holder.execute("BEGIN IMMEDIATE")
    return traced(db)


def traced(db: SessionDB) -> list[str]:
    """Record every statement the store's own connection runs."""
    statements: list[str] = []
    db._conn.set_trace_callback(statements.append)
    return statements


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt(), sqlite3.IntegrityError("bad")],
                         ids=["exception", "keyboard-interrupt", "sqlite-error"])
def test_failed_write_leaves_nothing_half_written(db, error):
    with pytest.raises(type(error)):
        db._writer.run(insert_then(error))
    assert not db._conn.in_transaction
    assert db.get_session("half") is None
    assert db.message_count() == 0
    assert db.search_messages("x") == []
    db.create_session("after", "cli")
    assert db.get_session("after") is not None


def test_conflicting_title_rolls_back_the_whole_call(db):
    db.create_session("s1", "cli")
    db.create_session("s2", "cli")
    db.set_session_title("s1", "taken")
    db.set_session_title("s2", "mine")
    with pytest.raises(ValueError, match="already in use"):
        db.set_session_title("s2", "taken")
    assert db.get_session_title("s2") == "mine"


def test_other_errors_are_not_retried(db):
    statements = traced(db)
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        db._writer.run(lambda conn: conn.execute("INSERT INTO no_such_table VALUES (1)"))
    assert statements.count("BEGIN IMMEDIATE") == 1


def test_writes_use_begin_immediate(db):
    statements = traced(db)
    db.create_session("s1", "cli")
    db.append_message("s1", "user", "hi")
    assert statements.count("BEGIN IMMEDIATE") == 2


def test_lock_held_past_the_budget_raises_database_locked(db, holder, locked):
    started = time.monotonic()
    with pytest.raises(DatabaseLockedError) as caught:
        db.append_message("s1", "user", "blocked")
    elapsed = time.monotonic() - started
    assert isinstance(caught.value, sqlite3.OperationalError)
    assert str(caught.value) == f"database is locked: gave up after {SessionDB._WRITE_MAX_RETRIES} retries"
    assert locked.count("BEGIN IMMEDIATE") == 1 + SessionDB._WRITE_MAX_RETRIES
    assert elapsed >= SessionDB._WRITE_MAX_RETRIES * SessionDB._WRITE_RETRY_MIN_S
    holder.execute("ROLLBACK")
    assert db.message_count() == 0
    db.append_message("s1", "user", "free again")
    assert db.message_count() == 1


def test_lock_released_within_the_budget_lets_the_write_through(db, holder, locked):
    timer = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    timer.start()
    try:
        db.append_message("s1", "user", "eventually")
    finally:
        timer.join()
    assert locked.count("BEGIN IMMEDIATE") > 1
    assert [m["content"] for m in db.get_messages("s1")] == ["eventually"]


def test_retry_constants_match_the_contract():
    assert (SessionDB._WRITE_MAX_RETRIES, SessionDB._WRITE_RETRY_MIN_S, SessionDB._WRITE_RETRY_MAX_S,
            SessionDB._CHECKPOINT_EVERY_N_WRITES) == (15, 0.020, 0.150, 50)


def test_passive_checkpoint_every_50_writes(db, db_path):
    """With SQLite's auto-checkpoint off, the main file only grows when the runner checkpoints."""
    db._conn.execute("PRAGMA wal_autocheckpoint = 0")
    db.create_session("s1", "cli")
    sizes = [db_path.stat().st_size]
    for i in range(120):
        db.append_message("s1", "user", f"{i} " + "padding " * 200)
        sizes.append(db_path.stat().st_size)
    growth = [i for i in range(1, len(sizes)) if sizes[i] > sizes[i - 1]]
    assert len(growth) == 2
    assert growth[1] - growth[0] == SessionDB._CHECKPOINT_EVERY_N_WRITES
    assert growth[0] <= SessionDB._CHECKPOINT_EVERY_N_WRITES
    assert os.path.getsize(db_path.with_name("state.db-wal")) > 0
