from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from hermes_state_tools.core.records import (
    SOURCE_FALLBACK,
    SOURCE_FROM_SNAPSHOT,
    LegacyMessage,
    LegacySession,
    Problem,
)
from hermes_state_tools.importers.snapshot import read_snapshot

LEGACY = Path(__file__).resolve().parent.parent / "fixtures" / "legacy"
UTC = timezone.utc


def read(path: Path, **options) -> tuple[LegacySession, list[Problem]]:
    records = list(read_snapshot(path, path.name, tz=UTC, **options))
    [session] = [r for r in records if isinstance(r, LegacySession)]
    return session, [r for r in records if isinstance(r, Problem)]


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_newest_snapshot():
    session, problems = read(LEGACY / "snapshots" / "session_newest.json")
    assert problems == []
    assert (session.session_id, session.kind, session.source_rank) == (
        "newest",
        "snapshot",
        SOURCE_FROM_SNAPSHOT,
    )
    assert session.fields == {
        "model": "anthropic/claude-opus-4.6",
        "system_prompt": "You are Hermes.",
        "started_at": at("2026-03-10T18:42:11.880533"),
        "source": "telegram",
    }
    assert set(session.extra) == {"base_url", "last_updated", "tools", "message_count", "future_key"}
    assert session.extra["message_count"] == "4"  # written with default=str: kept as it was
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.messages[2] == LegacyMessage("tool", "a.txt", tool_call_id="call_a1", tool_name="terminal")
    assert all(m.line is None and m.timestamp is None for m in session.messages)


def test_older_snapshot_with_local_platform():
    session, problems = read(LEGACY / "snapshots" / "session_older.json")
    assert problems == []
    assert session.fields == {"model": "m", "started_at": at("2026-02-20T10:00:00"), "source": "cli"}
    assert session.source_rank == SOURCE_FROM_SNAPSHOT
    assert session.messages == (LegacyMessage("user", "hi"),)


def test_inner_session_id_that_differs_is_kept_and_reported():
    session, problems = read(LEGACY / "snapshots" / "session_mismatch.json")
    assert session.session_id == "mismatch"
    assert session.extra["snapshot_session_id"] == "20260220_100000_aaaaaa"
    assert [(p.file, p.line, p.kind, p.failure) for p in problems] == [
        ("session_mismatch.json", None, "session_id_mismatch", False)
    ]
    assert (session.fields["source"], session.source_rank) == ("cli", SOURCE_FALLBACK)


@pytest.mark.parametrize(
    ("name", "session_id"),
    [
        ("hermes_conversation_20260301_101010.json", "saved_20260301_101010"),
        ("hermes_conversation_20260302_111111.json", "saved_inner"),
    ],
)
def test_save_files(name, session_id):
    session, problems = read(LEGACY / "snapshots" / "saved" / name)
    assert problems == []
    assert (session.session_id, session.kind) == (session_id, "save")
    assert session.fields == {"model": "m", "started_at": at("2026-03-01T10:10:10"), "source": "cli"}
    assert session.extra == {}


def test_fallback_source_option():
    session, _ = read(
        LEGACY / "snapshots" / "saved" / "hermes_conversation_20260301_101010.json",
        fallback_source="telegram",
    )
    assert (session.fields["source"], session.source_rank) == ("telegram", SOURCE_FALLBACK)
    named, _ = read(LEGACY / "snapshots" / "session_newest.json", fallback_source="discord")
    assert named.fields["source"] == "telegram"


def test_sharegpt_log():
    session, problems = read(LEGACY / "logs" / "session_sharegpt.json")
    assert problems == []
    assert (session.session_id, session.kind, session.fields["source"]) == ("sharegpt", "sharegpt", "cli")
    assert session.extra["sharegpt_system_prompt"].startswith("You are a function calling AI model.")
    assert "system_prompt" not in session.fields
    user, call, web, docs, note, answer = session.messages
    assert user == LegacyMessage("user", "search twice")
    assert (call.content, call.reasoning) == ("Searching.", "Two searches.")
    assert call.tool_calls == [
        {
            "id": "sharegpt_sharegpt_3_0",
            "type": "function",
            "function": {"name": "web", "arguments": '{"q": "a"}'},
        },
        {"id": "toolu_9", "type": "function", "function": {"name": "docs", "arguments": '{"q": "b"}'}},
    ]
    assert call.extra["sharegpt_value"].startswith("<think>")
    assert (web.role, web.content, web.tool_call_id, web.tool_name) == (
        "tool",
        "A",
        "sharegpt_sharegpt_3_0",
        "web",
    )
    assert web.extra["sharegpt_value"].startswith("<tool_response>")
    assert (docs.content, docs.tool_call_id, docs.tool_name) == ('{"n": 1}', "toolu_9", "docs")
    assert (note.role, note.content) == ("system", "[a later system note]")
    assert answer == LegacyMessage("assistant", "Done: A and 1.")


def test_sharegpt_ids_are_the_same_on_every_run():
    first, _ = read(LEGACY / "logs" / "session_sharegpt.json")
    again, _ = read(LEGACY / "logs" / "session_sharegpt.json")
    assert first == again


def write(tmp_path: Path, name: str, value) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value), "utf-8")
    return path


def test_sharegpt_response_without_id_pairs_with_the_generated_call(tmp_path):
    conversations = [
        {"from": "gpt", "value": '<tool_call>{"name": "t", "arguments": {}}</tool_call>'},
        {"from": "tool", "value": '<tool_response>{"content": "r"}</tool_response>'},
        {"from": "gpt", "value": "<tool_call>not json</tool_call>"},
    ]
    session, problems = read(write(tmp_path, "session_x.json", {"conversations": conversations}))
    call, tool, bad = session.messages
    assert call.tool_calls[0]["id"] == tool.tool_call_id == "sharegpt_x_1_0"
    assert (call.content, tool.tool_name) == ("", "t")
    assert (bad.content, bad.tool_calls) == ("<tool_call>not json</tool_call>", None)
    assert [(p.kind, p.failure) for p in problems] == [("bad_tool_call", False)]


@pytest.mark.parametrize(
    ("data", "kinds"),
    [
        (b"", [("empty_file", False)]),
        (b'{"messages": [', [("invalid_json", True)]),
        (b"[1, 2]", [("not_object", True)]),
        (b'{"messages": {"a": 1}}', [("wrong_type", True)]),
        (b'{"messages": [{"content": "x"}, 3]}', [("missing_role", True), ("not_object", True)]),
        (b'{"session_start": "soon", "messages": []}', [("bad_timestamp", False)]),
    ],
)
def test_bad_snapshots(tmp_path, data, kinds):
    path = tmp_path / "session_bad.json"
    path.write_bytes(data)
    records = list(read_snapshot(path, "f"))
    assert [(r.kind, r.failure) for r in records if isinstance(r, Problem)] == kinds
    assert all(r.line is None for r in records if isinstance(r, Problem))


def test_snapshot_messages_name_their_position_in_problems(tmp_path):
    path = write(
        tmp_path, "session_p.json", {"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}
    )
    session, [problem] = read(path)
    assert problem.detail.startswith("message 2: ")
    assert session.messages == (LegacyMessage("user", "a"),)


def test_messages_of_the_wrong_type_stay_in_extra(tmp_path):
    session, _ = read(write(tmp_path, "session_w.json", {"messages": "[...]"}))
    assert (session.messages, session.extra) == ((), {"messages": "[...]"})


def test_a_tui_save_without_session_start_starts_at_its_file_names_time(tmp_path):
    path = tmp_path / "hermes_conversation_20260415_143012.json"
    path.write_text(json.dumps({"model": "m", "messages": [{"role": "user", "content": "save test"}]}))
    session, _problems = read(path)
    assert session.fields["started_at"] == at("2026-04-15T14:30:12")
    assert session.session_id == "saved_20260415_143012"


def test_an_empty_model_and_system_prompt_are_no_value(tmp_path):
    path = tmp_path / "session_20260301_090000_c9d0e1f2.json"
    path.write_text(json.dumps({"model": "", "system_prompt": " ", "messages": []}))
    session, _problems = read(path)
    assert "model" not in session.fields and "system_prompt" not in session.fields
    assert "model" not in session.extra


def test_a_file_name_without_an_id_is_a_failure_unless_the_file_names_one(tmp_path):
    path = tmp_path / "session_.json"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "x"}]}))
    records = list(read_snapshot(path, str(path)))
    assert [(r.kind, r.failure) for r in records] == [("no_session_id", True)]
    path.write_text(json.dumps({"session_id": "inner_id", "messages": [{"role": "user", "content": "x"}]}))
    session, _problems = read(path)
    assert session.session_id == "inner_id"
