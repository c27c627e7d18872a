"""Several real processes sharing one state.db: every write lands once and no lock error escapes."""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import workers
from page_damage import build_db

from hermes_state_tools import SessionDB
from hermes_state_tools.core.paths import sidecar_paths
from hermes_state_tools.maintenance.checks import check_file
from hermes_state_tools.store.opening import prove_sound
from hermes_state_tools.store.read_open import open_for_reading, writer_arrived

WRITERS = 4
PER_WRITER = 150
ctx = multiprocessing.get_context("spawn")


def test_four_writers_and_a_reader_share_the_file(db_path):
    with SessionDB(db_path) as db:
        db.create_session("shared", "cli")
    ready, start, stop, queue = ctx.Queue(), ctx.Event(), ctx.Event(), ctx.Queue()
    writers = [ctx.Process(target=workers.append_many, args=(str(db_path), k, PER_WRITER, ready, start, queue))
               for k in range(WRITERS)]
    reader = ctx.Process(target=workers.read_until, args=(str(db_path), ready, start, stop, queue))
    for process in [*writers, reader]:
        process.start()
    for _ in range(WRITERS + 1):
        ready.get(timeout=60)  # every process has opened the store: now they start together
    start.set()
    outcomes = [queue.get(timeout=60) for _ in writers]
    stop.set()
    outcomes.append(queue.get(timeout=30))
    for process in [*writers, reader]:
        process.join(timeout=30)

    failures = [(role, error) for role, _, error in outcomes if error]
    assert failures == []
    assert all(process.exitcode == 0 for process in [*writers, reader])
    results = {role: value for role, value, _ in outcomes}
    assert results["reader"] >= 1

    with SessionDB(db_path) as db:
        rows = db._conn.execute("SELECT session_id, content, COUNT(*) FROM messages GROUP BY 1, 2").fetchall()
        assert all(n == 1 for _, _, n in rows)
        landed = {(sid, content) for sid, content, _ in rows}
        expected = {(f"w{k}", f"writer{k} own message {i}") for k in range(WRITERS) for i in range(PER_WRITER)}
        expected |= {("shared", f"writer{k} shared message {i}") for k in range(WRITERS) for i in range(PER_WRITER)}
        assert landed == expected
        for session in db.search_sessions(limit=100):
            assert session["message_count"] == db.message_count(session["id"])
        assert db.get_session("shared")["tool_call_count"] == WRITERS * PER_WRITER
        assert len(db.search_messages("shared", limit=1000)) == WRITERS * PER_WRITER


def test_a_long_begin_immediate_in_another_process_only_delays_an_append(db_path):
    with SessionDB(db_path) as db:
        db.create_session("shared", "cli")
        ready, committing = ctx.Event(), ctx.Value("d", 0.0)
        holder = ctx.Process(target=workers.hold_write_lock, args=(str(db_path), 0.5, ready, committing))
        holder.start()
        try:
            assert ready.wait(30)
            db.append_message("shared", "user", "waited for the lock")
            appended = time.monotonic()  # one clock for every process on the machine
        finally:
            holder.join(timeout=30)
        assert holder.exitcode == 0
        assert 0 < committing.value < appended  # the append ended after the holder began to release the lock
        assert [m["content"] for m in db.get_messages("shared")] == ["waited for the lock"]
        assert db.get_session("shared")["system_prompt"] == "held"


def test_a_writer_that_came_and_went_during_an_immutable_look_is_noticed(db_path):
    with SessionDB(db_path) as db:
        db.create_session("s1", "cli")
    conn = open_for_reading(db_path)
    try:
        assert conn.how == "immutable" and not writer_arrived(conn, db_path)
        with SessionDB(db_path) as db:  # opens, writes, checkpoints on close and removes its -wal
            db.append_message("s1", "user", "written during the look")
        assert not sidecar_paths(db_path)[0].exists()
        assert writer_arrived(conn, db_path)  # what the look read may be torn: a problem it saw is looked at again
    finally:
        conn.close()


@contextmanager
def short_lived_writers(path: Path) -> Iterator[None]:
    """workers.come_and_go on `path` while the block runs: it opens, writes, checkpoints and closes, over and over."""
    ready, stop = ctx.Event(), ctx.Event()
    writer = ctx.Process(target=workers.come_and_go, args=(str(path), ready, stop))
    writer.start()
    try:
        assert ready.wait(60)
        yield
    finally:
        stop.set()
        writer.join(timeout=60)
    assert writer.exitcode == 0


@pytest.mark.soak
def test_short_lived_writers_never_make_a_sound_file_look_damaged(tmp_path):
    path = build_db(tmp_path / "state.db", sessions=1500)
    with short_lived_writers(path):
        deadline, looks = time.monotonic() + 60, 0
        while time.monotonic() < deadline:
            prove_sound(path)  # DamagedDatabaseError here is a torn read taken for damage
            looks += 1
            if looks % 5 == 0:
                assert check_file(path) == []
    assert looks > 50


def test_a_stable_read_sees_one_state_of_the_file_while_a_writer_comes_and_goes(db_path):
    with SessionDB(db_path) as db:
        db.create_session("s1", "cli")
        db.append_message("s1", "user", "before the read")
    conn = open_for_reading(db_path, stable=True)  # no -wal: a private copy, not the file read immutable
    try:
        assert conn.snapshot_dir is not None and not sidecar_paths(db_path)[0].exists()
        with SessionDB(db_path) as db:  # writes, checkpoints into the file on close, removes its -wal
            db.append_message("s1", "user", "during the read")
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 1
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
    assert sorted(p.name for p in db_path.parent.iterdir()) == [db_path.name]


@pytest.mark.soak
def test_backup_and_export_of_a_file_short_lived_writers_keep_changing(tmp_path):
    from damage import cli

    path = build_db(tmp_path / "state.db", sessions=1500)
    with short_lived_writers(path):
        for n in range(12):
            result = cli("--db", path, "backup", tmp_path / f"copy{n}.db")
            assert result.exit_code == 0, result.stderr
            exported = cli("--db", path, "export")
            assert exported.exit_code == 0, exported.stderr
            texts: list[str] = []
            for line in exported.stdout.splitlines():  # one state: each session's own count, no text twice
                doc = json.loads(line)
                assert len(doc["messages"]) == doc["session"]["message_count"], doc["session"]["id"]
                texts += [m["content"] for m in doc["messages"]]
            assert len(texts) == len(set(texts))
