"""Committed transactions past a damaged -wal frame: SQLite stops at the first bad checksum and the next
write drops everything after it. `check` says so, writing commands refuse, `recover` reads past it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from damage import cli

from hermes_state_tools import SessionDB
from hermes_state_tools.store import wal_frames

MESSAGES = 60


def _frame_size(wal: bytes) -> int:
    return 24 + int.from_bytes(wal[8:12], "big")


def _frames(wal: bytes) -> list[tuple[int, int]]:
    """(page number, commit size) of every whole frame."""
    size = _frame_size(wal)
    return [(int.from_bytes(wal[at:at + 4], "big"), int.from_bytes(wal[at + 4:at + 8], "big"))
            for at in range(32, len(wal) - size + 1, size)]


@pytest.fixture(scope="module")
def crash(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose -wal holds MESSAGES committed transactions, copied as a crash leaves it (the
    writer still open, nothing checkpointed)."""
    root = tmp_path_factory.mktemp("wal")
    live = root / "live.db"
    with SessionDB(live) as db:
        db.create_session("s1", "cli")
    conn = sqlite3.connect(live, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    for n in range(MESSAGES):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', ?, ?)",
                     (f"message {n} " + "words " * 300, 1000.0 + n))
        conn.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = 's1'")
        conn.execute("COMMIT")
    folder = root / "crash"
    folder.mkdir()
    for suffix in ("", "-wal"):
        shutil.copyfile(f"{live}{suffix}", folder / f"state.db{suffix}")
    conn.close()
    return folder / "state.db"


def _copy(crash: Path, folder: Path) -> Path:
    folder.mkdir()
    for suffix in ("", "-wal"):
        shutil.copyfile(f"{crash}{suffix}", folder / f"state.db{suffix}")
    return folder / "state.db"


def _damage_frame(db: Path, number: int) -> bytes:
    """Overwrite part of frame `number`'s page; returns the -wal's bytes after."""
    wal = db.with_name(db.name + "-wal")
    data = bytearray(wal.read_bytes())
    at = 32 + (number - 1) * _frame_size(bytes(data)) + 24 + 200
    data[at:at + 16] = b"destroyed sector"
    wal.write_bytes(bytes(data))
    return bytes(data)


def _seen(db: Path) -> int:
    """Messages SQLite itself reads (on a copy, so the -wal under test is never touched)."""
    folder = db.parent / "seen"
    shutil.rmtree(folder, ignore_errors=True)
    copy = _copy(db, folder)
    conn = sqlite3.connect(copy)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        conn.close()
        shutil.rmtree(folder)


def _superseded_frame(wal: bytes) -> int:
    """A frame early in the WAL whose page a later frame holds again."""
    frames = _frames(wal)
    return next(n for n, (page, _) in enumerate(frames, 1)
                if n > 10 and any(p == page for p, _ in frames[n:]))


def test_an_intact_wal_has_no_break_and_checks_clean(crash, tmp_path):
    db = _copy(crash, tmp_path / "intact")
    assert wal_frames.scan(db.with_name("state.db-wal").read_bytes()) is None
    assert _seen(db) == MESSAGES
    assert cli("--db", db, "check", "--json").exit_code == 0


def test_a_damaged_frame_hides_later_commits_check_says_so_and_writes_refuse(crash, tmp_path):
    db = _copy(crash, tmp_path / "damaged")
    wal = _damage_frame(db, _superseded_frame(crash.with_name("state.db-wal").read_bytes()))
    found = wal_frames.scan(wal)
    assert found is not None and found.commits_after > 0 and found.pages_lost == 0
    assert _seen(db) < MESSAGES  # what SQLite alone gives: the later commits are gone from its view
    result = cli("--db", db, "check", "--json")
    assert result.exit_code == 1
    problems = json.loads(result.stdout)["problems"]
    assert [p["kind"] for p in problems] == ["integrity"] and "-wal" in problems[0]["detail"]
    backup = cli("--db", db, "backup", tmp_path / "copy.db")  # a copy would silently lack the later commits
    assert backup.exit_code == 65 and "recover" in backup.stderr and not (tmp_path / "copy.db").exists()
    for command in (["vacuum"], ["rebuild-fts"], ["repair"]):
        refused = cli("--db", db, *command, "--no-progress")
        assert refused.exit_code == 65, (command, refused.stderr)
        assert db.with_name("state.db-wal").read_bytes() == wal  # nothing wrote over the hidden frames


def test_recover_reads_past_the_damaged_frame(crash, tmp_path):
    db = _copy(crash, tmp_path / "damaged")
    wal = _damage_frame(db, _superseded_frame(crash.with_name("state.db-wal").read_bytes()))
    out = tmp_path / "out"
    out.mkdir()
    result = cli("--db", db, "recover", out / "new.db", "--json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["complete"] and doc["wal_transactions_past_damage"] > 0, result.stderr
    conn = sqlite3.connect(out / "new.db")
    try:
        contents = [row[0].split(" words")[0] for row in conn.execute("SELECT content FROM messages ORDER BY id")]
    finally:
        conn.close()
    assert contents == [f"message {n}" for n in range(MESSAGES)]
    assert db.with_name("state.db-wal").read_bytes() == wal  # the source is only read


def test_a_damaged_page_no_later_frame_holds_is_counted_lost(crash, tmp_path):
    db = _copy(crash, tmp_path / "damaged")
    frames = _frames(crash.with_name("state.db-wal").read_bytes())
    alone = next(n for n, (page, _) in enumerate(frames, 1)
                 if n < len(frames) - 5 and all(p != page for p, _ in frames[n:]))
    found = wal_frames.scan(_damage_frame(db, alone))
    assert found is not None and found.pages_lost == 1
    out = tmp_path / "out"
    out.mkdir()
    result = cli("--db", db, "recover", out / "new.db", "--json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and not doc["complete"] and doc["wal_pages_lost"] == 1


def test_an_unfinished_tail_is_no_damage(crash, tmp_path):
    # A crash while the last transaction was being written: its frames are torn, nothing after them.
    db = _copy(crash, tmp_path / "torn")
    wal = db.with_name("state.db-wal")
    data = wal.read_bytes()
    wal.write_bytes(_damage_frame(db, len(_frames(data)))[:len(data) - 100])
    assert wal_frames.scan(wal.read_bytes()) is None
    assert cli("--db", db, "check", "--json").exit_code == 0


def test_frames_of_an_older_generation_after_a_restart_are_no_damage(tmp_path):
    db = tmp_path / "state.db"
    with SessionDB(db) as store:
        store.create_session("s1", "cli")
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    insert = "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', ?, ?)"
    for n in range(40):
        conn.execute(insert, ("x" * 2000 + str(n), 1000.0 + n))
    conn.execute("PRAGMA wal_checkpoint(RESTART)")
    conn.execute(insert, ("after the restart", 2000.0))
    wal = db.with_name("state.db-wal").read_bytes()
    assert len(_frames(wal)) > 10  # the old generation's frames are still there, past the new ones
    assert wal_frames.scan(wal) is None and wal_frames.find_break(db) is None
    conn.close()


@pytest.mark.soak
def test_four_live_writers_are_never_taken_for_a_damaged_wal(tmp_path):
    # Writers append, checkpoint and restart the WAL over its old frames while it is scanned: a scan
    # that raced a write must never say damage (check would fail, and writing commands refuse).
    import multiprocessing

    import workers

    ctx = multiprocessing.get_context("spawn")
    db = tmp_path / "state.db"
    with SessionDB(db) as store:
        store.create_session("shared", "cli")
    ready, start, queue = ctx.Queue(), ctx.Event(), ctx.Queue()
    writers = [ctx.Process(target=workers.append_many, args=(str(db), k, 400, ready, start, queue)) for k in range(4)]
    for process in writers:
        process.start()
    for _ in writers:
        ready.get(timeout=60)
    start.set()
    scans = 0
    while any(process.is_alive() for process in writers):
        assert wal_frames.find_break(db) is None
        scans += 1
    outcomes = [queue.get(timeout=60) for _ in writers]
    for process in writers:
        process.join(timeout=30)
    assert [error for _role, _value, error in outcomes if error] == [] and scans > 10
    assert cli("--db", db, "check", "--json").exit_code == 0


def test_a_write_after_the_damage_is_kept_by_recover(crash, tmp_path):
    """After the power cut Hermes writes again: SQLite recovers up to the damaged frame and appends there,
    over it; the frames past it (the older history) still chain. recover must not lose what SQLite reads."""
    db = _copy(crash, tmp_path / "damaged")
    _damage_frame(db, len(_frames(db.with_name("state.db-wal").read_bytes())) // 2)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("INSERT INTO sessions (id, source, started_at) VALUES ('s2', 'telegram', 4999)")
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s2', 'user', 'later', 5000)")
    after = tmp_path / "after"
    after.mkdir()
    for suffix in ("", "-wal"):  # as the gateway leaves it, still open
        shutil.copyfile(f"{db}{suffix}", after / f"state.db{suffix}")
    conn.close()
    out = tmp_path / "out"
    out.mkdir()
    seen = _seen(after / "state.db")
    result = cli("--db", after / "state.db", "recover", out / "new.db", "--json")
    doc = json.loads(result.stdout)
    assert doc["sessions_lost_ids"] == [] and doc["placeholder_sessions"] == []  # s2's row was lost
    # The older frames past the damage are another history: not applied over the newer write, said so.
    assert doc["wal_transactions_not_applied"] > 0 and doc["wal_transactions_past_damage"] == 0
    assert result.exit_code == 1 and not doc["complete"]
    conn = sqlite3.connect(out / "new.db")
    try:
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == seen  # all SQLite itself reads
        assert conn.execute("SELECT content FROM messages WHERE session_id = 's2'").fetchall() == [("later",)]
    finally:
        conn.close()


# A flipped bit in the WAL header: SQLite reads none of its frames (and the next write starts the WAL
# over them), though every frame still checks out under the header as it was.
HEADER_FIELDS = {"magic": 3, "page size": 10, "salt": 17, "checksum": 26}


@pytest.mark.parametrize("field", HEADER_FIELDS)
def test_a_damaged_wal_header_hides_every_commit_and_recover_reads_them(crash, tmp_path, field):
    db = _copy(crash, tmp_path / "damaged")
    wal_path = db.with_name("state.db-wal")
    data = bytearray(wal_path.read_bytes())
    data[HEADER_FIELDS[field]] ^= 0x10
    wal_path.write_bytes(bytes(data))
    found = wal_frames.scan(bytes(data))
    assert found is not None and found.frame == 0 and found.pages_lost == 0
    assert found.commits_after >= MESSAGES - (field == "checksum")  # the first frame is then unproven
    assert _seen(db) < MESSAGES
    result = cli("--db", db, "check", "--json")
    assert result.exit_code == 1 and "its header" in result.stdout
    for command in (["vacuum"], ["maintain"]):
        assert cli("--db", db, *command, "--no-progress").exit_code == 65
        assert wal_path.read_bytes() == bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    doc = json.loads(cli("--db", db, "recover", out / "new.db", "--json").stdout)
    assert doc["wal_transactions_past_damage"] > 0
    conn = sqlite3.connect(out / "new.db")
    try:
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == MESSAGES  # frame 1 is held again later
    finally:
        conn.close()


def test_a_wal_that_never_was_one_is_no_hidden_commit(tmp_path):
    assert wal_frames.scan(bytes(4096)) is None
    assert wal_frames.scan(bytes(range(256)) * 64) is None
