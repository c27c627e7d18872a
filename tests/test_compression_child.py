"""A compression child's snapshot written under its parent's name (late February - late March 2026)
goes to the child, when the child's parent link is stored or named by this import (export lines)."""

from __future__ import annotations

import json
from pathlib import Path

from import_helpers import import_json, query

from hermes_state_tools.core.export_format import export_line

PARENT, CHILD = "20260310_080000_e5f6a7", "20260310_093000_f6a7b8"
SUMMARY = "[CONTEXT SUMMARY]: the parser refactor; steps 1-2 are done."


def snapshot(folder: Path) -> None:
    messages = [{"role": "user", "content": SUMMARY}, {"role": "user", "content": "Now step 3"},
                {"role": "assistant", "content": "Step 3 done."}]
    (folder / f"session_{PARENT}.json").write_text(json.dumps(
        {"session_id": CHILD, "session_start": "2026-03-10T09:30:00", "messages": messages}))


def session_row(sid: str, parent: str | None, started: float) -> dict:
    return {"id": sid, "source": "cli", "parent_session_id": parent, "started_at": started, "ended_at": started + 60,
            "end_reason": "compression" if parent is None else None}


def test_a_parent_link_named_in_the_same_import_moves_the_snapshot_to_the_child(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    message = {"role": "user", "content": "Refactor the parser", "timestamp": 1773129610.0}
    (folder / "backup.jsonl").write_bytes(
        export_line(session_row(PARENT, None, 1773129600.0), [message])
        + export_line(session_row(CHILD, PARENT, 1773135000.0), []))
    snapshot(folder)
    code, doc = import_json(tmp_path / "state.db", folder, options=["--tz", "UTC"])
    assert code == 0, doc["problems"]
    assert [p["kind"] for p in doc["problems"]].count("compression_child") == 1
    contents = [r["content"] for r in query(tmp_path / "state.db",
                                            "SELECT content FROM messages WHERE session_id = ? ORDER BY timestamp, id",
                                            (CHILD,))]
    assert contents == [SUMMARY, "Now step 3", "Step 3 done."]
    assert query(tmp_path / "state.db", "SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", (PARENT,)) == [
        {"n": 1}]
    _code, again = import_json(tmp_path / "state.db", folder, options=["--tz", "UTC"])
    assert (again["messages_imported"], again["sessions_updated"]) == (0, 0)


def test_without_a_parent_link_a_summary_under_an_earlier_sessions_name_is_its_childs(tmp_path):
    """No link says so, but the snapshot opens with a compression summary and the id inside was created
    after the file's session: the child's messages, the child linked to the file's session."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    snapshot(folder)
    code, doc = import_json(tmp_path / "state.db", folder, options=["--tz", "UTC"])
    assert code == 0
    rows = query(tmp_path / "state.db", "SELECT id, parent_session_id FROM sessions")
    assert [(r["id"], r["parent_session_id"]) for r in rows] == [(CHILD, None)]  # the parent is not here yet
    assert {"session_id_mismatch", "compression_child", "missing_parent"} <= {p["kind"] for p in doc["problems"]}


def test_the_child_snapshot_beside_both_transcripts_comes_in_once_under_the_child(tmp_path):
    folder = tmp_path / "sessions"
    folder.mkdir()
    stamp = {"timestamp": "2026-03-10T08:00:00"}
    (folder / f"{PARENT}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        {"role": "user", "content": "Refactor the parser", **stamp},
        {"role": "assistant", "content": "On it.", **stamp})))
    (folder / f"{CHILD}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in (
        {"role": "user", "content": SUMMARY}, {"role": "user", "content": "Now step 3"},
        {"role": "assistant", "content": "Step 3 done."})))
    snapshot(folder)
    code, doc = import_json(tmp_path / "state.db", folder, options=["--tz", "UTC"])
    assert code == 0, doc["problems"]
    rows = query(tmp_path / "state.db", "SELECT session_id, content FROM messages ORDER BY session_id, id")
    assert [(r["session_id"], r["content"]) for r in rows] == [
        (PARENT, "Refactor the parser"), (PARENT, "On it."),
        (CHILD, SUMMARY), (CHILD, "Now step 3"), (CHILD, "Step 3 done.")]
    links = query(tmp_path / "state.db", "SELECT id, parent_session_id FROM sessions ORDER BY id")
    assert [(r["id"], r["parent_session_id"]) for r in links] == [(PARENT, None), (CHILD, PARENT)]


def test_a_session_compressed_twice_leaves_its_grandchild_under_the_first_name(tmp_path):
    """The file name was never moved on: after a second compression session_<first>.json held the
    grandchild. Its messages were stored again in the first session (9 copies of messages already
    stored in the grandchild)."""
    from hermes_state_tools import SessionDB

    grandchild = "20260310_110000_a7b8c9"
    db_path = tmp_path / "state.db"
    db = SessionDB(db_path)
    chain = [(PARENT, None, ["Refactor the parser", "On it."]), (CHILD, PARENT, [SUMMARY, "Step 2 done."]),
             (grandchild, CHILD, [SUMMARY + " Step 2 too.", "Now step 3", "Step 3 done."])]
    for sid, parent, texts in chain:
        db.create_session(sid, "cli", parent_session_id=parent)
        for n, text in enumerate(texts):
            db.append_message(sid, "assistant" if n % 2 else "user", text)
        if sid != grandchild:
            db.end_session(sid, "compression")
    db.close()
    folder = tmp_path / "sessions"
    folder.mkdir()
    messages = [{"role": "assistant" if n % 2 else "user", "content": t} for n, t in enumerate(chain[2][2])]
    (folder / f"session_{PARENT}.json").write_text(json.dumps(
        {"session_id": grandchild, "session_start": "2026-03-10T08:00:00", "messages": messages}))
    code, doc = import_json(db_path, folder, options=["--tz", "UTC"])
    assert code == 0, doc["problems"]
    assert (doc["messages_imported"], doc["messages_skipped_duplicate"]) == (0, 3)
    assert "compression_child" in [p["kind"] for p in doc["problems"]]
    counts = query(db_path, "SELECT session_id, COUNT(*) AS n FROM messages GROUP BY session_id ORDER BY session_id")
    assert [(r["session_id"], r["n"]) for r in counts] == [(PARENT, 2), (CHILD, 2), (grandchild, 3)]


def test_a_parent_chain_that_loops_leaves_the_file_name_deciding(tmp_path):
    from hermes_state_tools.ingest.planning.units import _descends_from

    assert _descends_from("c", "a", {"c": "b", "b": "a"})
    assert not _descends_from("c", "x", {"c": "b", "b": "c"})
    assert not _descends_from("a", "a", {"a": "a"})
