"""Process entry points for test_concurrency (a plain module so spawned children can import it)."""

from __future__ import annotations

import sqlite3
import time
import traceback
from typing import Any


def _report(queue: Any, role: str, body: Any) -> None:
    try:
        queue.put((role, body(), None))
    except BaseException:
        queue.put((role, None, traceback.format_exc()))


def append_many(path: str, writer: int, count: int, ready: Any, start: Any, queue: Any) -> None:
    """Append `count` messages to this writer's own session and as many to the shared one."""
    from hermes_state_tools import SessionDB

    def body() -> int:
        with SessionDB(path) as db:
            db.create_session(f"w{writer}", "cli")
            ready.put(writer)
            start.wait(30)
            for i in range(count):
                db.append_message(f"w{writer}", "user", f"writer{writer} own message {i}")
                db.append_message("shared", "assistant", f"writer{writer} shared message {i}",
                                  tool_calls=[{"id": f"{writer}-{i}"}])
        return count

    _report(queue, f"writer{writer}", body)


def read_until(path: str, ready: Any, start: Any, stop: Any, queue: Any) -> None:
    """Search and list in a loop while the writers run; returns how many rounds it made."""
    from hermes_state_tools import SessionDB

    def body() -> int:
        rounds = 0
        with SessionDB(path) as db:
            ready.put("reader")
            start.wait(30)
            while not stop.is_set() or rounds == 0:
                db.search_messages("shared")
                db.search_messages("writer0")
                db.list_sessions_rich(limit=10)
                db.get_messages("shared")
                rounds += 1
        return rounds

    _report(queue, "reader", body)


def hold_write_lock(path: str, seconds: float, ready: Any, committing: Any) -> None:
    """Take the write lock with BEGIN IMMEDIATE, write, hold it for `seconds`, commit; `committing` (a
    shared double) gets time.monotonic() as the COMMIT that releases the lock begins."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE sessions SET system_prompt = 'held' WHERE id = 'shared'")
    ready.set()
    time.sleep(seconds)
    committing.value = time.monotonic()
    conn.execute("COMMIT")
    conn.close()


def come_and_go(path: str, ready: Any, stop: Any) -> None:
    """A short-lived writer, over and over: open, write a batch (sessions and counters kept right),
    close (the last connection checkpoints and removes the -wal), pause. A look that began while no
    -wal existed is torn by the checkpoint, and no -wal is left to say a writer came."""
    import random

    from hermes_state_tools import SessionDB

    rnd, batch = random.Random(3), 0
    ready.set()
    while not stop.is_set():
        with SessionDB(path) as db:
            sid = f"visit-{batch}"
            db.create_session(sid, "cli")
            for _ in range(20):
                db.append_message(sid, "user", " ".join(f"word{rnd.randrange(5000)}" for _ in range(300)))
        batch += 1
        time.sleep(rnd.random() * 0.2)


def append_live(path: str, writer: int, ready: Any, stop: Any, queue: Any, pause: float) -> None:
    """A gateway's writer: one SessionDB kept open, an append every `pause` s until `stop`; what became
    of each append, and how many sessions the store held after each (how far a prune had got)."""
    from hermes_state_tools import SessionDB

    def body() -> dict[str, Any]:
        seen: list[int] = []
        failed: list[str] = []
        appended = 0
        with SessionDB(path) as db:
            sid = f"live-{writer}"
            db.create_session(sid, "gateway")
            while not stop.is_set():
                try:
                    db.append_message(sid, "user", f"live {writer} message {appended}")
                    appended += 1
                except Exception as exc:  # what the test counts: an append that failed
                    failed.append(repr(exc))
                seen.append(db.session_count())
                if appended == 3:
                    ready.set()
                time.sleep(pause)
        return {"appended": appended, "failed": failed, "seen": seen, "sid": sid}

    _report(queue, f"live{writer}", body)
