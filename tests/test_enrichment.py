"""Stored messages gain what the files know (NULL columns, extra keys), never overwritten, counted as
messages_enriched in real and dry runs alike."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import file_digests
from import_helpers import import_json, message_extras, query

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
