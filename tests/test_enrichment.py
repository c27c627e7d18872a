"""Stored messages gain what the files know (NULL columns, extra keys), never overwritten, counted as
messages_enriched in real and dry runs alike."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from helpers import file_digests
from import_helpers import cli, export_bytes, import_json, message_extras, query

from hermes_state_tools import SessionDB

SID = "20260215_100000_b8c9d0e1"
CALL = [{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]


def gateway_db(path: Path) -> Path:
    """What the gateway stored: role, content and tool fields only (one value already set)."""
    db = SessionDB(path)
    db.create_session(SID, "telegram")
    db.append_message(SID, "user", "list files")
    db.append_message(SID, "assistant", None, tool_calls=CALL)
    db.append_message(SID, "tool", "a.txt", tool_call_id="call_1")
    db.append_message(SID, "assistant", "One file.", finish_reason="stop")
    db.close()
    return path


def transcript(folder: Path) -> Path:
    folder.mkdir()
    lines = [{"role": "user", "content": "list files", "message_id": "tg-1"},
             {"role": "assistant", "content": None, "tool_calls": CALL, "reasoning": "run ls",
              "finish_reason": "tool_calls"},
             {"role": "tool", "content": "a.txt", "tool_call_id": "call_1"},
             {"role": "assistant", "content": "One file.", "finish_reason": "length", "reasoning": "sum up"}]
    (folder / f"{SID}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder


def test_fill_nulls_never_overwrite_and_count_the_same_in_a_dry_run(tmp_path):
    db = gateway_db(tmp_path / "state.db")
    folder = transcript(tmp_path / "sessions")
    before = file_digests(db)
    _code, dry = import_json(db, folder, options=["--dry-run"])
    assert file_digests(db) == before
    code, real = import_json(db, folder)
    assert code == 0 and dry["messages_enriched"] == real["messages_enriched"] == 4
    assert (real["messages_imported"], real["sessions_updated"]) == (0, 1)
    rows = query(db, "SELECT id, reasoning, finish_reason, tool_name FROM messages ORDER BY id")
    assert [(r["reasoning"], r["finish_reason"], r["tool_name"]) for r in rows] == [
        (None, None, None), ("run ls", "tool_calls", None), (None, None, "terminal"), ("sum up", "stop", None)]
    assert message_extras(db, SID)[rows[0]["id"]] == {"message_id": "tg-1"}
    _code, again = import_json(db, folder)
    assert (again["messages_enriched"], again["sessions_updated"], again["messages_imported"]) == (0, 0, 0)


def test_the_reader_process_enriches_as_an_in_process_import_does(tmp_path, monkeypatch):
    from hermes_state_tools.ingest import run

    folder = tmp_path / "sessions"
    folder.mkdir()
    count = run.PARALLEL_FROM_FILES + 2
    for name in ("staged.db", "local.db"):
        db = SessionDB(tmp_path / name)
        for n in range(count):
            sid = f"20260215_1000{n:02d}_b8c9d0e1"
            db.create_session(sid, "telegram")
            db.append_message(sid, "user", f"q{n}")
            db.append_message(sid, "assistant", f"a{n}")
        db.close()
    for n in range(count):
        lines = [{"role": "user", "content": f"q{n}", "message_id": f"m{n}"},
                 {"role": "assistant", "content": f"a{n}", "reasoning": f"r{n}"}]
        (folder / f"20260215_1000{n:02d}_b8c9d0e1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    _code, staged = import_json(tmp_path / "staged.db", folder)
    monkeypatch.setattr(run, "PARALLEL_FROM_FILES", 10**9)
    local = run.import_paths(tmp_path / "local.db", [folder]).as_dict()
    assert staged["messages_enriched"] == local["messages_enriched"] == 2 * count
    reasonings = "SELECT reasoning FROM messages WHERE role = 'assistant' ORDER BY session_id"
    assert query(tmp_path / "staged.db", reasonings) == query(tmp_path / "local.db", reasonings)
    assert query(tmp_path / "staged.db", reasonings)[0] == {"reasoning": "r0"}


def test_a_dry_run_over_an_older_schema_counts_the_columns_its_upgrade_adds(tmp_path):
    """A v1 file has no finish_reason or reasoning column: the real run upgrades first and fills
    them, so the dry run must count them too (it said 0 enriched, and a session that gained only
    those was missing from sessions_updated)."""
    from schema_fixtures import load_fixture

    db = load_fixture("v1", tmp_path)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO sessions (id, source, started_at) VALUES (?, 'telegram', 1771149600)", (SID,))
    for n, (role, content) in enumerate([("user", "list files"), ("assistant", "One file.")]):
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                     (SID, role, content, 1771149600 + n))
    conn.commit()
    conn.close()
    folder = tmp_path / "sessions"
    folder.mkdir()
    lines = [{"role": "user", "content": "list files"},
             {"role": "assistant", "content": "One file.", "finish_reason": "stop", "reasoning": "sum up"}]
    (folder / f"{SID}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    _code, dry = import_json(db, folder, options=["--dry-run"])
    code, real = import_json(db, folder)
    assert code == 0 and real["messages_enriched"] == 1
    assert {k: dry[k] for k in ("messages_enriched", "sessions_updated", "messages_imported")} == {
        k: real[k] for k in ("messages_enriched", "sessions_updated", "messages_imported")}
    assert query(db, "SELECT finish_reason, reasoning FROM messages WHERE session_id = ? AND role = 'assistant'",
                 (SID,)) == [{"finish_reason": "stop", "reasoning": "sum up"}]


def test_an_export_or_a_database_with_unnamed_tool_rows_comes_in_once_and_stays(tmp_path):
    """The gateway stored tool rows without a name. Imported from an export (or merged from the
    database) they keep none, as stored; the re-run then named them from the calls (15 rows
    enriched, 3 sessions updated by a run that should change nothing)."""
    source = tmp_path / "gateway.db"
    db = SessionDB(source)
    db.create_session(SID, "telegram")
    db.append_message(SID, "user", "list files")
    db.append_message(SID, "assistant", None, tool_calls=CALL)
    db.append_message(SID, "tool", "a.txt", tool_call_id="call_1")
    db.close()
    dump = tmp_path / "export.jsonl"
    dump.write_bytes(export_bytes(source))
    for target in (tmp_path / "imported.db", tmp_path / "merged.db"):
        for run in ("first", "again"):
            if target.name == "imported.db":
                code, doc = import_json(target, dump)
            else:
                if not target.exists():
                    SessionDB(target).close()  # merge needs a store to merge into
                result = cli("--db", target, "merge", source, "--json")
                code, doc = result.exit_code, json.loads(result.stdout)
            assert code == 0, doc
            if run == "again":
                assert (doc["sessions_updated"], doc["messages_enriched"], doc["messages_imported"]) == (0, 0, 0)
        assert query(target, "SELECT tool_name FROM messages WHERE role = 'tool'") == [{"tool_name": None}]
