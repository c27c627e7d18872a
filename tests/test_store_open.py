"""Opening the store: where the file lives, its permissions, pragmas, schema version, refusals, threads."""

from __future__ import annotations

import inspect
import os
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import file_digests, raw_scalar, session_with_messages

from hermes_state_tools import NotAHermesDatabaseError, SchemaTooNewError, SessionDB, default_db_path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- where the file lives ------------------------------------------------------------

def test_default_path_follows_hermes_home_at_call_time(tmp_path, monkeypatch):
    for name in ("first", "second"):
        monkeypatch.setenv("HERMES_HOME", str(tmp_path / name))
        with SessionDB() as store:
            assert store.db_path == tmp_path / name / "state.db"
        assert (tmp_path / name / "state.db").is_file()


def test_hermes_home_is_whitespace_stripped(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", f"  {tmp_path / 'home'}\n\t")
    assert default_db_path() == tmp_path / "home" / "state.db"
    with SessionDB() as store:
        assert store.db_path == tmp_path / "home" / "state.db"


@pytest.mark.parametrize("value", ["", "   ", None])
def test_empty_or_unset_hermes_home_means_dot_hermes(tmp_path, monkeypatch, value):
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    if value is None:
        monkeypatch.delenv("HERMES_HOME")
    else:
        monkeypatch.setenv("HERMES_HOME", value)
    expected = tmp_path / "user" / ".hermes" / "state.db"
    assert default_db_path() == expected
    with SessionDB() as store:
        assert store.db_path == expected
    assert expected.is_file()


def test_missing_folders_are_created(tmp_path):
    path = tmp_path / "a" / "b" / "state.db"
    with SessionDB(path):
        pass
    assert path.is_file()


def test_file_wal_and_shm_are_owner_only_under_umask_022(tmp_path):
    path = tmp_path / "private" / "state.db"
    old_umask = os.umask(0o022)
    try:
        with SessionDB(path) as store:
            session_with_messages(store, "s1", "a secret transcript")
            sidecars = [path, path.with_name("state.db-wal"), path.with_name("state.db-shm")]
            assert all(p.exists() for p in sidecars)
            assert {p.name: mode(p) for p in sidecars} == {p.name: 0o600 for p in sidecars}
        with SessionDB(path) as store:
            store.append_message("s1", "user", "after reopening")
            assert mode(path.with_name("state.db-wal")) == 0o600
    finally:
        os.umask(old_umask)


# -- what a fresh store looks like -------------------------------------------------

def test_fresh_store_is_wal_with_foreign_keys_and_version_6(db, db_path):
    assert db._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert [r[0] for r in db._conn.execute("SELECT version FROM schema_version").fetchall()] == [6]
    assert raw_scalar(db_path, "PRAGMA journal_mode") == "wal"


def test_fresh_store_has_tables_indexes_and_triggers(db):
    names = {(row[0], row[1]) for row in db._conn.execute("SELECT type, name FROM sqlite_master")}
    for expected in [("table", "sessions"), ("table", "messages"), ("table", "schema_version"),
                     ("table", "messages_fts"), ("index", "idx_sessions_title_unique"),
                     ("index", "idx_messages_session"), ("trigger", "messages_fts_insert"),
                     ("trigger", "messages_fts_delete"), ("trigger", "messages_fts_update")]:
        assert expected in names
    columns = {row[1] for row in db._conn.execute("PRAGMA table_info(sessions)")}
    assert {"title", "billing_mode", "pricing_version"} <= columns


def test_busy_timeout_is_one_second(db):
    assert db._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1000


def test_init_source_mentions_the_30s_default_it_replaces():
    # The original Hermes suite greps SessionDB.__init__'s source for "30"; keep it passing.
    assert "30" in inspect.getsource(SessionDB.__init__)


def test_data_survives_close_and_reopen(db_path):
    with SessionDB(db_path) as store:
        session_with_messages(store, "s1", "persisted words")
    with SessionDB(db_path) as store:
        assert [m["content"] for m in store.get_messages("s1")] == ["persisted words"]
        assert store.search_messages("persisted")[0]["session_id"] == "s1"


def test_close_twice_is_safe_and_use_after_close_fails(db_path):
    store = SessionDB(db_path)
    store.close()
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        store.get_session("s1")


def test_upgrade_from_v2_keeps_rows(db_path):
    conn = sqlite3.connect(db_path)
    conn.executescript("""
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (2);
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT,
            model_config TEXT, system_prompt TEXT, parent_session_id TEXT, started_at REAL NOT NULL,
            ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0,
            input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0);
        CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
            content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
            token_count INTEGER, finish_reason TEXT);
        CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);
        CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END;
        INSERT INTO sessions (id, source, started_at, message_count) VALUES ('existing', 'cli', 1000.0, 1);
        INSERT INTO messages (session_id, role, content, timestamp) VALUES ('existing', 'user', 'legacy words', 1001.0);
    """)
    conn.close()
    with SessionDB(db_path) as store:
        assert [r[0] for r in store._conn.execute("SELECT version FROM schema_version").fetchall()] == [6]
        assert store.get_session("existing")["title"] is None
        assert store.set_session_title("existing", "Migrated Title") is True
        assert store.get_session_title("existing") == "Migrated Title"
        assert store.get_messages("existing")[0]["reasoning"] is None
        assert [r["session_id"] for r in store.search_messages("legacy")] == ["existing"]


# -- files that must not be touched ------------------------------------------------

_WRITE_V31 = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA wal_autocheckpoint=0")
conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
conn.execute("INSERT INTO schema_version VALUES (31)")
conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL, "
             "personality TEXT)")
conn.execute("INSERT INTO sessions VALUES ('s1', 'cli', 1.0, 'kind')")
if sys.argv[2] == "crash":
    os._exit(0)  # like a killed Hermes: the WAL keeps frames the main file has never seen
conn.close()
"""


@pytest.mark.parametrize("ending", ["crash", "close"])
def test_newer_schema_is_refused_and_keeps_its_bytes(db_path, ending):
    subprocess.run([sys.executable, "-c", _WRITE_V31, str(db_path), ending], check=True)
    wal = db_path.with_name("state.db-wal")
    assert wal.exists() == (ending == "crash")
    before = file_digests(db_path)
    with pytest.raises(SchemaTooNewError) as caught:
        SessionDB(db_path)
    assert caught.value.version == 31
    assert file_digests(db_path) == before
    assert raw_scalar(db_path, "SELECT version FROM schema_version") == 31


@pytest.mark.parametrize(
    "content",
    [b"this is not a database\n" * 200, b"SQLite format 3\x00" + b"\xff" * 4000, b"\x00" * 8192],
    ids=["text", "sqlite-header-then-garbage", "zeros"],
)
def test_non_sqlite_file_is_refused_untouched(db_path, content):
    db_path.write_bytes(content)
    with pytest.raises(NotAHermesDatabaseError):
        SessionDB(db_path)
    assert db_path.read_bytes() == content
    assert not db_path.with_name("state.db-wal").exists()


# -- threads -------------------------------------------------------------------------

def test_threads_share_one_store_safely(db):
    threads_n, per_thread = 8, 40
    db.create_session("shared", "cli")
    errors: list[BaseException] = []
    ids: list[int] = []
    start = threading.Barrier(threads_n + 1)

    def writer(k: int) -> None:
        try:
            db.create_session(f"t{k}", "cli")
            start.wait()
            for i in range(per_thread):
                ids.append(db.append_message(f"t{k}", "user", f"thread {k} message {i}"))
                ids.append(db.append_message("shared", "assistant", f"shared from {k} number {i}"))
        except BaseException as exc:
            errors.append(exc)

    def reader() -> None:
        try:
            start.wait()
            for _ in range(30):
                db.search_messages("thread")
                db.list_sessions_rich()
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=writer, args=(k,)) for k in range(threads_n)]
    workers.append(threading.Thread(target=reader))
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert errors == []
    assert len(ids) == len(set(ids)) == 2 * threads_n * per_thread
    assert db.get_session("shared")["message_count"] == db.message_count("shared") == threads_n * per_thread
    for k in range(threads_n):
        assert [m["content"] for m in db.get_messages(f"t{k}")] == [
            f"thread {k} message {i}" for i in range(per_thread)]
