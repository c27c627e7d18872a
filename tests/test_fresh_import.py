"""A first import into a file that does not exist yet is built aside and placed whole (store/fresh.py):
the same database as an import into an existing file, and never a partial file under the real name."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from import_helpers import LEGACY_HOME, ROOT, content, fts_in_sync, interruptible, write_corpus
from test_import import wait_until_group_gone
from test_odd_files import small_disk  # noqa: F401 (a fixture)

from hermes_state_tools import SessionDB
from hermes_state_tools.cli.base import INTERRUPTED
from hermes_state_tools.core.export_format import export_line
from hermes_state_tools.core.paths import unclaimed
from hermes_state_tools.errors import ImportReaderError
from hermes_state_tools.ingest import import_paths, run
from hermes_state_tools.ingest.reader import launch
from hermes_state_tools.ingest.run import PARALLEL_FROM_FILES
from hermes_state_tools.store import fresh
from hermes_state_tools.store.files import TEMP_MARK

SEARCHES = ("hello", "hello from child_a", "deploy", "kernel alpha", "café", "corpus s1")


def _sample(folder: Path, corpus_files: int) -> list[Path]:
    """The legacy home (every file shape, a damaged line, a code page), sessions whose parents come
    later or never (parked parents, a cycle), and `corpus_files` gateway transcripts."""
    shutil.copytree(LEGACY_HOME, folder)
    links = [("child_a", "parent_b"), ("parent_b", None), ("orphan_c", "missing_d"), ("loop_e", "loop_f"),
             ("loop_f", "loop_e")]
    export = folder.parent / "export.jsonl"  # an export file is imported when named
    export.write_bytes(b"".join(
        export_line({"id": sid, "source": "cli", "started_at": 1.0 + n, "parent_session_id": parent},
                    [{"role": "user", "content": f"hello from {sid}", "timestamp": 2.0 + n}], {}, [])
        for n, (sid, parent) in enumerate(links)))
    if corpus_files:
        write_corpus(folder / "sessions", corpus_files, 12)
    return [folder, export]


def _schema(db: Path) -> dict[str, Any]:
    """What Hermes sees of the file as a whole: the schema, the journal mode, the versions (call it first:
    SessionDB, which other checks open, would switch a file to WAL itself)."""
    header = db.read_bytes()[:100]
    assert header[18:20] == b"\x02\x02", "not a WAL-mode file"  # the file format's read/write versions
    conn = sqlite3.connect(db)
    try:
        return {
            "master": conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY 1, 2").fetchall(),
            "journal_mode": conn.execute("PRAGMA journal_mode").fetchone()[0],
            "user_version": conn.execute("PRAGMA user_version").fetchone()[0],
            "layout": [conn.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_size", "auto_vacuum",
                                                                                   "encoding")],
            "schema_version": conn.execute("SELECT * FROM schema_version").fetchall(),
        }
    finally:
        conn.close()


def _search(db: Path) -> dict[str, list[Any]]:
    """What Hermes' search finds (messages_fts), and the index's own word list."""
    with SessionDB(db) as store:
        found: dict[str, list[Any]] = {word: store.search_messages(word, limit=500) for word in SEARCHES}
        assert store._conn is not None
        store._conn.execute("CREATE VIRTUAL TABLE temp.words USING fts5vocab(main, messages_fts, row)")
        found["vocabulary"] = [tuple(r) for r in store._conn.execute("SELECT term, doc, cnt FROM temp.words")]
    return found


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if TEMP_MARK in p.name)


def _created_empty(db: Path) -> Path:
    """A store with the v6 schema and no session: an import into it takes the usual path."""
    SessionDB(db).close()
    return db


@pytest.mark.parametrize("corpus_files", [0, PARALLEL_FROM_FILES + 16], ids=["in-process", "reader-process"])
def test_a_new_file_is_the_database_an_import_into_an_existing_file_makes(tmp_path, corpus_files):
    sample = _sample(tmp_path / "sample", corpus_files)
    new, existing = tmp_path / "new" / "state.db", _created_empty(tmp_path / "existing" / "state.db")
    new.parent.mkdir()
    built = import_paths(new, sample)
    usual = import_paths(existing, sample)

    # counts, problems, files read: the same report, but for saying which run made its file
    assert (built.database_created, usual.database_created) == (str(new), None)
    assert {**built.as_dict(), "database_created": None} == usual.as_dict()
    assert _schema(new) == _schema(existing) and _schema(new)["journal_mode"] == "wal"
    assert built.sessions_created > 0 and any(p.kind == "parent_cycle" for p in built.problems)
    assert content(new) == content(existing)  # every row, message ids included
    searched = _search(new)
    assert searched == _search(existing) and searched["hello from child_a"] and searched["vocabulary"]
    assert fts_in_sync(new)
    assert sorted(p.name for p in new.parent.iterdir()) == ["state.db"]  # no temporary file, no -wal/-shm
    assert stat.S_IMODE(new.stat().st_mode) == 0o600


def test_a_new_file_merges_its_index_in_larger_steps_while_built_and_ends_with_fts5s_defaults(tmp_path):
    # While the file is built nobody searches it: FTS5 merges a level's segments once it holds 16 of
    # them instead of 4 (a fifth less indexing work). The file placed holds FTS5's defaults again, as a
    # file Hermes made does: no 'automerge' entry in its config table.
    from hermes_state_tools.store.fresh import build_new_store

    def config(conn: sqlite3.Connection) -> list[tuple[str, object]]:
        return sorted(tuple(row) for row in conn.execute("SELECT k, v FROM messages_fts_config"))

    def build(db: SessionDB) -> list[tuple[str, object]]:
        assert db._conn is not None
        for n in range(40):  # forty transactions: forty segments, merged on the way
            db.create_session(f"s{n}", "cli")
            db.append_message(f"s{n}", "user", f"word{n} shared text")
        return config(db._conn)

    during = build_new_store(tmp_path / "state.db", build)
    assert during == [("automerge", 16), ("version", 4)]
    conn = sqlite3.connect(tmp_path / "state.db")
    try:
        assert config(conn) == [("version", 4)]
        assert conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'shared'").fetchone() == (40,)
    finally:
        conn.close()
    assert fts_in_sync(tmp_path / "state.db")


@pytest.mark.parametrize("kind", ["empty", "store"])
def test_an_existing_file_even_an_empty_one_is_imported_into_in_place(tmp_path, monkeypatch, kind):
    db = tmp_path / "state.db"
    db.touch() if kind == "empty" else _created_empty(db)
    inode = db.stat().st_ino

    def no_build(*_args: Any) -> None:
        raise AssertionError("an existing file is never rebuilt aside")

    monkeypatch.setattr(run, "build_new_store", no_build)
    stats = import_paths(db, [LEGACY_HOME])
    assert stats.sessions_created > 0 and db.stat().st_ino == inode


class _Recorder:
    def __init__(self) -> None:
        self.starts: list[int] = []
        self.files = 0

    def start(self, files: int) -> None:
        self.starts.append(files)
        self.files = 0

    def advance(self, files: int = 0, messages: int = 0) -> None:
        self.files += files


def test_a_file_created_meanwhile_gets_the_usual_import_and_keeps_what_it_holds(tmp_path, monkeypatch):
    # Hermes' gateway creates state.db while the import builds its own: the private build is dropped
    # and the files are imported into the gateway's file, as if it had been there from the start.
    sample = _sample(tmp_path / "sample", PARALLEL_FROM_FILES + 16)
    db, reference = tmp_path / "live" / "state.db", tmp_path / "reference" / "state.db"
    db.parent.mkdir()
    real_place = fresh.place

    def gateway_writes(store: Path) -> None:
        with SessionDB(store) as gateway:
            gateway.create_session("gateway_own", "telegram")
            gateway.append_message("gateway_own", "user", "written by the gateway meanwhile")

    def created_first(temp: Path, dest: Path) -> None:
        assert temp.exists() and not dest.exists()
        gateway_writes(dest)
        real_place(temp, dest)

    monkeypatch.setattr(fresh, "place", created_first)
    progress = _Recorder()
    stats = import_paths(db, sample, progress=progress)
    monkeypatch.setattr(fresh, "place", real_place)
    gateway_writes(reference)
    usual = import_paths(reference, sample)

    assert stats.as_dict() == usual.as_dict() and stats.sessions_created > 0
    assert _schema(db) == _schema(reference)
    assert progress.starts == [progress.starts[0]] * 2 and progress.files == stats.files_read  # counted again
    assert _temps(db.parent) == []

    def without_gateway(found: dict[str, list[Any]]) -> dict[str, list[Any]]:
        # The gateway's rows carry the time they were written; everything else must be equal.
        return {"sessions": [r for r in found["sessions"] if r["id"] != "gateway_own"],
                "messages": [{k: v for k, v in r.items() if k != "timestamp" or r["session_id"] != "gateway_own"}
                             for r in found["messages"]],
                "extras": [found["hst_session_extra"], found["hst_message_extra"]]}

    assert without_gateway(content(db)) == without_gateway(content(reference))
    with SessionDB(db) as store:
        assert [m["content"] for m in store.get_messages("gateway_own")] == ["written by the gateway meanwhile"]


def test_a_failed_build_leaves_no_database_and_no_temporary_file(tmp_path, monkeypatch):
    sample = _sample(tmp_path / "sample", PARALLEL_FROM_FILES + 16)
    db = tmp_path / "home" / "state.db"
    # A real reader process that dies at once: the import fails with the reader's error.
    monkeypatch.setattr(launch, "_launch_code", lambda: "import os, sys; sys.stdin.buffer.read(1); os._exit(3)")
    with pytest.raises(ImportReaderError, match="re-run the import to finish") as failed:
        import_paths(db, sample)
    assert "kept" not in str(failed.value)  # nothing of a new file is kept: the message must not say so
    assert not db.exists() and list(db.parent.iterdir()) == []
    monkeypatch.undo()
    assert import_paths(db, sample).sessions_created > 0


def test_an_exception_in_the_build_leaves_nothing(tmp_path, monkeypatch):
    db = tmp_path / "state.db"
    original = run.write_batch

    def fail(conn: sqlite3.Connection, *args: Any) -> Any:
        original(conn, *args)
        raise KeyboardInterrupt  # Ctrl-C inside a write transaction

    monkeypatch.setattr(run, "write_batch", fail)
    with pytest.raises(KeyboardInterrupt, match=r"nothing of it was kept.*a re-run starts over"):
        import_paths(db, [LEGACY_HOME])
    assert list(tmp_path.iterdir()) == []



# -- real processes: a kill, a Ctrl-C, a full disk ---------------------------------------------------------

def _command(db: Path, folder: Path) -> list[str]:
    return [sys.executable, "-m", "hermes_state_tools", "--db", str(db), "import-jsonl", str(folder), "--no-progress",
            "--json"]


def _env(scratch: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch)}


@dataclass(frozen=True)
class Corpus:
    folder: Path
    sessions: int
    reference: Path  # the same folder imported into an existing (empty) store


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """300 transcripts, 36,000 messages: an import long enough to interrupt once its build has begun."""
    root = tmp_path_factory.mktemp("fresh")
    written = write_corpus(root / "corpus", 300, 120)
    reference = _created_empty(root / "reference.db")
    assert import_paths(reference, [root / "corpus"]).sessions_created == len(written)
    return Corpus(root / "corpus", len(written), reference)


def _started_build(process: subprocess.Popen[bytes], folder: Path) -> Path:
    """The import's temporary database, once its first batches are in (the file has grown)."""
    temp = folder / f"state.db{TEMP_MARK}{fresh.TEMP_PURPOSE}-{process.pid}"
    deadline = time.monotonic() + 120
    while not (temp.exists() and temp.stat().st_size > 2**20):
        assert process.poll() is None, "the import ended before it could be interrupted"
        assert time.monotonic() < deadline, f"{temp} never grew"
        time.sleep(0.005)
    return temp


def test_a_killed_first_import_leaves_no_database_and_the_next_run_cleans_up_and_imports_all(tmp_path, corpus):
    db, scratch = tmp_path / "state.db", tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(_command(db, corpus.folder), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True, env=_env(scratch))
    temp = _started_build(process, tmp_path)
    process.send_signal(signal.SIGKILL)  # the CLI only: its reader process must follow by itself
    process.wait()
    wait_until_group_gone(process.pid)
    assert not db.exists() and temp.exists()  # the half-built file under its temporary name only

    rerun = subprocess.run(_command(db, corpus.folder), capture_output=True, env=_env(scratch), timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["sessions_created"] == corpus.sessions
    assert _schema(db) == _schema(corpus.reference)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.db", "tmp"]  # the leftover is gone
    assert content(db) == content(corpus.reference)


def test_ctrl_c_during_a_first_import_leaves_nothing(tmp_path, corpus):
    db, scratch = tmp_path / "state.db", tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(_command(db, corpus.folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, env=_env(scratch), preexec_fn=interruptible)
    _started_build(process, tmp_path)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
    out, err = process.communicate(timeout=60)
    wait_until_group_gone(process.pid)
    assert process.returncode == 1, err
    error = json.loads(out)["error"]
    assert error != INTERRUPTED and "nothing of it was kept" in error and "a re-run starts over" in error
    assert b"Traceback" not in err and err.decode().strip().splitlines()[-1] == f"hermes-state: {error}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"] and list(scratch.iterdir()) == []


def test_a_full_disk_during_a_first_import_is_exit_74_and_leaves_nothing(tmp_path, corpus, small_disk):  # noqa: F811
    db = small_disk / "state.db"
    scratch = tmp_path / "tmp"  # the reader's staging files: on the big disk
    scratch.mkdir()
    result = subprocess.run(_command(db, corpus.folder), capture_output=True, text=True, env=_env(scratch),
                            timeout=300)
    assert result.returncode == 74, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert json.loads(result.stdout)["ok"] is False
    assert list(small_disk.iterdir()) == []  # no database, no temporary file, no journal


def test_a_missing_file_with_what_sqlite_left_beside_it_is_imported_the_usual_way(tmp_path):
    # A -wal of another database beside a deleted state.db: a file built aside and placed there would
    # be read through that WAL. The usual path opens the name as SQLite does and the result is sound.
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("PRAGMA journal_mode=WAL")
    other.execute("PRAGMA wal_autocheckpoint=0")
    other.execute("CREATE TABLE t (a)")
    other.executemany("INSERT INTO t VALUES (?)", [("z" * 500,)] * 200)
    other.commit()
    shutil.copy(tmp_path / "other.db-wal", tmp_path / "state.db-wal")
    other.close()
    write_corpus(tmp_path / "sessions", 3, 4)
    assert not unclaimed(tmp_path / "state.db")
    stats = import_paths(tmp_path / "state.db", [tmp_path / "sessions"])
    assert stats.sessions_created == 3 and not stats.failed
    conn = sqlite3.connect(tmp_path / "state.db")
    try:
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 3
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_a_parked_parent_on_a_new_session_written_in_a_run_is_linked_by_the_final_pass(tmp_path):
    # A child whose parent is not in its database keeps the link in its extra data; merged into a
    # database that holds the parent, the final pass links it (and drops the key), as before runs.
    (tmp_path / "child").mkdir()
    (tmp_path / "parent").mkdir()
    (tmp_path / "child" / "20260301_100000_bbbbbbbb.jsonl").write_text(
        '{"role":"session_meta","parent_session_id":"20260301_090000_aaaaaaaa"}\n'
        '{"role":"user","content":"child","timestamp":1772000100}\n')
    (tmp_path / "parent" / "20260301_090000_aaaaaaaa.jsonl").write_text(
        '{"role":"user","content":"parent","timestamp":1772000000}\n')
    import_paths(tmp_path / "a.db", [tmp_path / "child"])
    import_paths(tmp_path / "b.db", [tmp_path / "parent"])
    from hermes_state_tools.ingest.merge_db import merge_database

    stats = merge_database(tmp_path / "b.db", tmp_path / "a.db")
    assert not stats.failed and [p.kind for p in stats.problems] == []
    conn = sqlite3.connect(tmp_path / "b.db")
    try:
        assert dict(conn.execute("SELECT id, parent_session_id FROM sessions")) == {
            "20260301_090000_aaaaaaaa": None, "20260301_100000_bbbbbbbb": "20260301_090000_aaaaaaaa"}
        assert conn.execute("SELECT count(*) FROM hst_session_extra WHERE data LIKE '%parent_session_id%'"
                            ).fetchone()[0] == 0
    finally:
        conn.close()
