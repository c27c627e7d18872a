"""`archive push`, `status` and `export` against a real PostgreSQL (tests/pg.py): every column arrives,
a re-run adds nothing, appended messages and changed sessions follow, export rebuilds the store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from archive_helpers import add_extras, add_later_layout, archive_dump, build_store, push, run
from import_helpers import export_bytes, import_json

from hermes_state_tools import SessionDB


def test_a_push_carries_every_session_and_message_and_a_second_adds_nothing(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=3, messages=4)
    first = push(db, archive_url, "laptop")
    assert (first["host"], first["sessions_pushed"], first["messages_pushed"]) == ("laptop", 3, 12)
    before = archive_dump(archive_url)
    again = push(db, archive_url, "laptop")
    assert (again["sessions_pushed"], again["messages_pushed"]) == (0, 0)
    assert archive_dump(archive_url) == before


def test_status_counts_each_host_and_overlapping_ids_stay_apart(tmp_path: Path, archive_url: str) -> None:
    push(build_store(tmp_path / "a.db", "s", sessions=3, messages=4), archive_url, "laptop")
    push(build_store(tmp_path / "b.db", "s", sessions=2, messages=8), archive_url, "server")
    code, doc, _ = run("archive", "status", archive_url, "--json")
    assert code == 0
    counts = {h["host"]: (h["sessions"], h["messages"]) for h in doc["hosts"]}
    assert counts == {"laptop": (3, 12), "server": (2, 16)}
    assert all(h["last_push"] for h in doc["hosts"])


def test_appended_messages_and_changed_sessions_arrive_with_the_next_push(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=2, messages=4)
    push(db, archive_url, "h")
    with SessionDB(db) as store:
        store.append_message("s1", "user", "one more")
        store.append_message("s1", "assistant", "and the answer")
        store.end_session("s1", "user_exit")
        store.set_session_title("s0", "renamed")
    doc = push(db, archive_url, "h")
    assert (doc["messages_pushed"], doc["sessions_pushed"]) == (2, 2)
    assert lines(_archive_export(tmp_path, archive_url, "h")) == lines(export_bytes(db))


def test_a_changed_message_of_a_changed_session_is_updated(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=1, messages=4)
    add_later_layout(db)
    push(db, archive_url, "h")
    conn = sqlite3.connect(db)
    with conn:  # a rewind: the messages leave the live context, the session's counters change
        conn.execute("UPDATE messages SET active = 0 WHERE id = 1")
        conn.execute("UPDATE sessions SET message_count = 3")
    conn.close()
    doc = push(db, archive_url, "h")
    assert (doc["messages_pushed"], doc["sessions_pushed"], doc["messages_skipped_present"]) == (1, 1, 3)
    assert _rows(archive_url, "SELECT active FROM hermes.messages WHERE local_id = 1") == [(0,)]


def test_export_then_import_gives_every_field_back(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=3, messages=8)
    add_extras(db, "s2")
    push(db, archive_url, "h")
    exported = _archive_export(tmp_path, archive_url, "h")
    assert exported == export_bytes(db)
    rebuilt = reimport(tmp_path, exported)
    assert lines(export_bytes(rebuilt)) == lines(export_bytes(db))


def test_a_later_layouts_columns_and_odd_values_arrive_whole(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=2, messages=4)
    add_later_layout(db)
    push(db, archive_url, "h")
    sessions = {line["session"]["id"]: line for line in lines(_archive_export(tmp_path, archive_url, "h"))}
    first = sessions["s0"]
    assert (first["session"]["cwd"], first["session"]["archived"]) == ("/home/x", 1)
    by_content = first["messages"]
    assert by_content[1]["reasoning_content"] == "thought" and by_content[1]["active"] == 0
    assert by_content[2]["token_count"] == "many"
    assert by_content[3]["reasoning"] == "a\x00b"
    assert by_content[0]["tool_call_id"] == {"blob_base64": "AP8="}  # a BLOB, as the local export writes it
    local = {line["session"]["id"]: line for line in lines(export_bytes(db))}
    assert local["s0"]["session"] == first["session"]


def test_an_archive_written_by_a_newer_toolkit_is_read_never_written(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=1, messages=2)
    push(db, archive_url, "h")
    _rows(archive_url, "INSERT INTO hermes.schema_version (version, toolkit) VALUES (99, 'later') RETURNING 1")
    before = archive_dump(archive_url)
    code, doc, err = run("--db", db, "archive", "push", archive_url, "--host", "h", "--json")
    assert code == 3 and "newer" in err and doc["ok"] is False
    assert archive_dump(archive_url) == before
    code, status, _ = run("archive", "status", archive_url, "--json")
    assert code == 0 and status["schema_newer"] is True and status["hosts"][0]["messages"] == 2


def test_an_unknown_host_is_a_usage_error_naming_the_hosts(tmp_path: Path, archive_url: str) -> None:
    push(build_store(tmp_path / "a.db", sessions=1, messages=1), archive_url, "laptop")
    code, _, err = run("archive", "export", archive_url, "--host", "desktop")
    assert code == 2 and "'desktop'" in err and "laptop" in err and len(err.splitlines()) == 1


def test_the_url_may_come_from_the_environment(tmp_path: Path, archive_url: str, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_ARCHIVE_URL", archive_url)
    db = build_store(tmp_path / "a.db", sessions=1, messages=2)
    code, doc, _ = run("--db", db, "archive", "push", "--host", "h", "--json")
    assert code == 0 and doc["messages_pushed"] == 2
    code, doc, _ = run("archive", "status", "--json")
    assert code == 0 and doc["hosts"][0]["host"] == "h"


def lines(exported: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in exported.splitlines()]


def reimport(tmp_path: Path, exported: bytes) -> Path:
    """The export imported into a new, empty database, without a problem or a duplicate."""
    (tmp_path / "copy.jsonl").write_bytes(exported)
    copy = tmp_path / "copy.db"
    code, doc = import_json(copy, tmp_path / "copy.jsonl")
    assert code == 0 and doc["problems"] == [] and doc["messages_skipped_duplicate"] == 0
    return copy


def _archive_export(tmp_path: Path, url: str, host: str) -> bytes:
    out = tmp_path / f"{host}.jsonl"
    code, doc, err = run("archive", "export", url, "--host", host, "-o", out, "--json")
    assert code == 0, err
    assert doc["sessions_exported"] == len(out.read_bytes().splitlines())
    return out.read_bytes()


def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def test_prune_archived_deletes_only_what_the_archive_holds_identically(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=4, messages=4)
    with SessionDB(db) as store:
        for sid in ("s1", "s2", "s3"):
            store.end_session(sid, "done")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET started_at = started_at - 400 * 86400")
    conn.close()
    push(db, archive_url, "h")
    with SessionDB(db) as store:
        store.create_session("late", "cli")
        store.end_session("late", "done")
        store.append_message("s2", "user", "after the push")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET started_at = started_at - 400 * 86400 WHERE id = 'late'")
    conn.close()
    code, doc, err = run("--db", db, "prune", "--older-than", "30", "--archived", archive_url, "--host", "h",
                         "--yes", "--json")
    assert code == 0, err
    assert sorted(doc["session_ids"]) == ["s0", "s1", "s3"]
    kept = {k["session_id"]: k["reason"] for k in doc["kept_back"]}
    assert set(kept) == {"s2", "late"} and "not in the archive" in kept["late"]
    with SessionDB(db) as store:
        assert store.get_session("s2") is not None and store.get_session("s0") is None


def test_prune_archived_keeps_everything_another_host_pushed(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=2, messages=2)
    with SessionDB(db) as store:
        store.end_session("s1", "done")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET started_at = started_at - 400 * 86400")
    conn.close()
    push(db, archive_url, "other")
    code, doc, _ = run("--db", db, "prune", "--older-than", "30", "--archived", archive_url, "--host", "h",
                       "--yes", "--json")
    assert code == 0 and doc["sessions_deleted"] == 0 and len(doc["kept_back"]) == 2


def test_rows_above_the_mark_already_archived_are_merged_not_doubled(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=2, messages=3)
    push(db, archive_url, "h")
    before = archive_dump(archive_url)
    _rows(archive_url, "UPDATE hermes.hosts SET message_mark = 0 RETURNING 1")  # an archive edited by hand
    doc = push(db, archive_url, "h")
    assert (doc["messages_pushed"], doc["messages_skipped_present"]) == (0, 6)
    assert archive_dump(archive_url) == before


def test_another_store_under_the_same_host_is_refused_and_a_store_rebuilt_from_the_archive_goes_on(
        tmp_path: Path, archive_url: str) -> None:
    first = build_store(tmp_path / "a.db", "s", sessions=2, messages=4)
    push(first, archive_url, "h")
    before = archive_dump(archive_url)
    # Another machine of the same name: its message ids 1-8 are other messages than the archived 1-8.
    other = build_store(tmp_path / "b.db", "t", sessions=2, messages=4)
    code, doc, err = run("--db", other, "archive", "push", archive_url, "--host", "h", "--json")
    assert code == 2 and doc["ok"] is False and "--host" in doc["error"], err
    assert len(err.strip().splitlines()) == 1
    assert archive_dump(archive_url) == before  # no archived message overwritten, none added
    assert push(other, archive_url, "h2")["messages_pushed"] == 8
    # The first machine's store rebuilt from the archive (export, then import): the same messages
    # under the same ids, so its pushes go on under its name.
    rebuilt = reimport(tmp_path, _archive_export(tmp_path, archive_url, "h"))
    with SessionDB(rebuilt) as store:
        store.append_message("s1", "user", "after the rebuild")
    doc = push(rebuilt, archive_url, "h")
    assert (doc["messages_pushed"], doc["sessions_pushed"]) == (1, 1)
    assert lines(_archive_export(tmp_path, archive_url, "h")) == lines(export_bytes(rebuilt))
