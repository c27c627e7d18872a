"""`hermes-state merge OTHER.db`: every session of another state.db comes in once, OTHER only read."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers import file_digests
from import_helpers import cli, query
from schema_fixtures import MANIFEST, load_fixture

from hermes_state_tools import SessionDB


def merge_json(db: Path, other: Path, *options: str) -> tuple[int, dict]:
    if not db.exists():
        SessionDB(db).close()  # merge brings sessions into a store that exists (only import-jsonl creates one)
    result = cli("--db", db, "merge", other, *options, "--json", "--no-progress")
    assert "Traceback" not in result.stderr
    return result.exit_code, json.loads(result.stdout)


def store(path: Path, sessions: dict[str, list[tuple[str, str]]], **fields) -> Path:
    db = SessionDB(path)
    for sid, messages in sessions.items():
        db.create_session(sid, fields.get("source", "cli"), model=fields.get("model"))
        for role, text in messages:
            db.append_message(sid, role, text)
    db.close()
    return path


def test_a_second_merge_adds_nothing_and_other_keeps_every_byte(tmp_path):
    sessions = {"a": [("user", "q"), ("assistant", "r"), ("user", "q2")], "b": [("user", "x")]}
    other = store(tmp_path / "other.db", sessions, source="discord", model="x/y")
    ours = tmp_path / "state.db"
    conn = sqlite3.connect(other)
    rows = conn.execute("SELECT role, content, timestamp FROM messages WHERE session_id = 'a' ORDER BY id").fetchall()
    conn.close()
    db = SessionDB(ours)
    db.create_session("a", "cli")
    for role, content, stamp in rows[:2]:
        mid = db.append_message("a", role, content)
        db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (stamp, mid))
    db._conn.commit()
    db.close()
    before = file_digests(other)
    code, first = merge_json(ours, other)
    assert code == 0 and (first["sessions_created"], first["sessions_updated"]) == (1, 1)
    assert (first["messages_imported"], first["messages_skipped_duplicate"]) == (2, 2)
    code, again = merge_json(ours, other)
    assert (code, again["messages_imported"], again["sessions_created"], again["sessions_updated"]) == (0, 0, 0, 0)
    assert file_digests(other) == before
    assert [r["content"] for r in query(ours, "SELECT content FROM messages WHERE session_id = 'a' ORDER BY id")] == [
        "q", "r", "q2"]
    assert query(ours, "SELECT source, model FROM sessions WHERE id = 'b'") == [{"source": "discord", "model": "x/y"}]


@pytest.mark.parametrize("name", ["v1", "v3", "v5", "v6", "trap_version_31"])
def test_every_schema_version_merges_whole(tmp_path, name):
    other = load_fixture(name, tmp_path)
    before = file_digests(other)
    code, doc = merge_json(tmp_path / "state.db", other)
    assert code == 0, doc["problems"]
    assert doc["sessions_created"] == MANIFEST[name]["sessions"]
    assert doc["messages_imported"] + doc["messages_skipped_duplicate"] == MANIFEST[name]["messages"]
    assert file_digests(other) == before
    assert merge_json(tmp_path / "state.db", other)[1]["messages_imported"] == 0


def test_a_dry_run_writes_nothing_and_counts_as_the_real_run(tmp_path):
    other = store(tmp_path / "other.db", {"a": [("user", "q"), ("assistant", "r")]})
    ours = SessionDB(tmp_path / "state.db")
    ours.close()
    before = file_digests(tmp_path / "state.db")
    code, dry = merge_json(tmp_path / "state.db", other, "--dry-run")
    assert code == 0 and file_digests(tmp_path / "state.db") == before
    _code, real = merge_json(tmp_path / "state.db", other)
    keys = ("sessions_created", "sessions_updated", "messages_imported", "messages_skipped_duplicate")
    assert [dry[k] for k in keys] == [real[k] for k in keys]


def test_merging_a_database_into_itself_is_refused(tmp_path):
    ours = store(tmp_path / "state.db", {"a": [("user", "q")]})
    result = cli("--db", ours, "merge", ours, "--no-progress")
    assert result.exit_code == 2 and "merged into" in result.stderr


def test_rows_that_are_no_message_go_to_extra_data(tmp_path):
    other = store(tmp_path / "other.db", {"a": [("user", "q")]})
    conn = sqlite3.connect(other)
    conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('a', 'session_meta', NULL, 1)")
    conn.commit()
    conn.close()
    code, _doc = merge_json(tmp_path / "state.db", other)
    assert code == 0
    assert query(tmp_path / "state.db", "SELECT role FROM messages") == [{"role": "user"}]
    [extra] = query(tmp_path / "state.db", "SELECT data FROM hst_session_extra WHERE session_id = 'a'")
    assert json.loads(extra["data"])["foreign_rows"][0]["role"] == "session_meta"


def test_extra_data_of_a_database_this_tool_imported_into_comes_along(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "20260301_100000_abcdef01.jsonl").write_text(
        json.dumps({"role": "user", "content": "hi", "message_id": "tg-9", "timestamp": "2026-03-01T10:00:00"}) + "\n")
    other = tmp_path / "other.db"
    assert cli("--db", other, "import-jsonl", folder, "--no-progress", "--json").exit_code == 0
    code, doc = merge_json(tmp_path / "state.db", other)
    assert code == 0 and doc["messages_imported"] == 1
    [extra] = query(tmp_path / "state.db", "SELECT data FROM hst_message_extra")
    assert json.loads(extra["data"]) == {"message_id": "tg-9"}


def test_a_newer_schemas_unknown_columns_are_kept_as_extra_data(tmp_path):
    other = store(tmp_path / "other.db", {"a": [("user", "q")]})
    conn = sqlite3.connect(other)
    conn.execute("ALTER TABLE messages ADD COLUMN api_content TEXT")
    conn.execute("ALTER TABLE sessions ADD COLUMN display_kind TEXT")
    conn.execute("UPDATE messages SET api_content = 'as sent'")
    conn.execute("UPDATE sessions SET display_kind = 'chat'")
    conn.execute("UPDATE schema_version SET version = 31")
    conn.commit()
    conn.close()
    code, doc = merge_json(tmp_path / "state.db", other)
    assert code == 0 and doc["messages_imported"] == 1
    [message] = query(tmp_path / "state.db", "SELECT data FROM hst_message_extra")
    assert json.loads(message["data"]) == {"other_db_api_content": "as sent"}
    [session] = query(tmp_path / "state.db", "SELECT data FROM hst_session_extra")
    assert json.loads(session["data"]) == {"other_db_display_kind": "chat"}


def test_a_parent_missing_from_both_is_reported_once_and_a_rerun_changes_nothing(tmp_path):
    other = tmp_path / "other.db"
    db = SessionDB(other)
    db.create_session("p", "cli")
    db.create_session("c", "cli", parent_session_id="p")
    db.append_message("c", "user", "x")
    db.close()
    conn = sqlite3.connect(other)
    conn.execute("DELETE FROM sessions WHERE id = 'p'")  # pruned on that machine: the child keeps its link
    conn.commit()
    conn.close()
    _code, first = merge_json(tmp_path / "state.db", other)
    assert first["sessions_created"] == 1 and first["problem_counts"] == {"missing_parent": 1}
    _code, again = merge_json(tmp_path / "state.db", other)
    assert (again["sessions_updated"], again["messages_imported"], again["problems"]) == (0, 0, [])


def test_merging_into_an_older_schema_backs_it_up_first_and_a_dry_run_says_so(tmp_path):
    ours = load_fixture("v5", tmp_path)
    before = file_digests(ours)
    other = store(tmp_path / "other.db", {"m1": [("user", "hello")]})
    code, dry = merge_json(ours, other, "--dry-run")
    assert code == 0 and dry["backup"] is None and file_digests(ours) == before
    assert dry["would_upgrade"] == {"from": 5, "to": 6, "backup_first": f"{ours}.bak-<timestamp>"}
    code, real = merge_json(ours, other)
    assert code == 0 and Path(real["backup"]).name.startswith("v5.db.bak-")
    assert query(Path(real["backup"]), "SELECT MAX(version) AS v FROM schema_version") == [{"v": 5}]
    assert query(ours, "SELECT MAX(version) AS v FROM schema_version") == [{"v": 6}]


@pytest.mark.parametrize("kind", ["messages", "sessions"])
def test_a_damaged_other_is_65_naming_other_and_never_this_database(tmp_path, kind):
    # A destroyed page of OTHER's messages met while reading it was reported as
    # '<this db>: database disk image is malformed': the wrong file to check and recover.
    from page_damage import build_db, destroy_btree, sha256

    other = build_db(tmp_path / "other.db", sessions=60, per_session=10)
    destroy_btree(other, kind, "interior")
    ours = store(tmp_path / "state.db", {"mine": [("user", "hello")]})
    before, other_before = file_digests(ours), sha256(other)
    for options in ((), ("--dry-run",)):
        code, doc = merge_json(ours, other, *options)
        assert code == 65 and f"{other}: the database is damaged" in doc["error"], doc
        assert sha256(other) == other_before
    assert file_digests(ours) == before


@pytest.mark.parametrize("kind", ["missing", "empty"])
def test_merge_into_a_missing_or_empty_file_is_exit_2_and_creates_nothing(tmp_path, kind):
    # The contract: only import-jsonl creates a database; `--db typo.db merge other.db` must not.
    other = store(tmp_path / "other.db", {"a": [("user", "q")]})
    db = tmp_path / "typo.db"
    if kind == "empty":
        db.write_bytes(b"")
    before = sorted(p.name for p in tmp_path.iterdir())
    result = cli("--db", db, "merge", other, "--no-progress")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1 and str(db) in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before and (kind == "empty") == db.exists()
