"""Message rows: append with counters, read back in order and as a conversation, clear, multimodal content."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from hermes_state_tools.errors import UnknownSessionError

TOOL_CALL = {"id": "c1", "type": "function", "function": {"name": "cronjob", "arguments": "{}"}}
MULTIMODAL = [
    {"type": "text", "text": "What is in this picture? 这张图片里有什么"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
]


def test_append_returns_increasing_ids_and_reads_back_in_order(db, s1):
    first = db.append_message("s1", "user", "Hello")
    second = db.append_message("s1", "assistant", "Hi there!")
    assert second > first
    rows = db.get_messages("s1")
    assert [(m["id"], m["role"], m["content"]) for m in rows] == [
        (first, "user", "Hello"), (second, "assistant", "Hi there!")]
    assert all(isinstance(m["timestamp"], float) for m in rows)


def test_get_messages_returns_every_column(db, s1):
    db.append_message("s1", "assistant", "x", token_count=12, finish_reason="stop", reasoning="because")
    row = db.get_messages("s1")[0]
    assert row["session_id"] == "s1"
    assert (row["token_count"], row["finish_reason"], row["reasoning"]) == (12, "stop", "because")
    for column in ("tool_call_id", "tool_name", "reasoning_details", "codex_reasoning_items"):
        assert column in row


def test_append_positional_arguments_in_documented_order(db, s1):
    db.append_message("s1", "assistant", "text", "shell", [TOOL_CALL], "cid", 7, "tool_calls", "why",
                      [{"d": 1}], [{"c": 2}])
    row = db.get_messages("s1")[0]
    assert (row["content"], row["tool_name"], row["tool_calls"], row["tool_call_id"], row["token_count"],
            row["finish_reason"], row["reasoning"]) == ("text", "shell", [TOOL_CALL], "cid", 7, "tool_calls", "why")
    assert json.loads(row["reasoning_details"]) == [{"d": 1}]
    assert json.loads(row["codex_reasoning_items"]) == [{"c": 2}]


def test_messages_order_by_timestamp_then_id(db, s1):
    ids = [db.append_message("s1", "user", f"m{i}") for i in range(3)]
    db._conn.execute("UPDATE messages SET timestamp = 100.0 WHERE id IN (?, ?)", (ids[1], ids[2]))
    db._conn.execute("UPDATE messages SET timestamp = 200.0 WHERE id = ?", (ids[0],))
    assert [m["content"] for m in db.get_messages("s1")] == ["m1", "m2", "m0"]


def test_append_to_unknown_session_is_an_error(db):
    with pytest.raises(sqlite3.IntegrityError):
        db.append_message("missing", "user", "hello")
    assert db.message_count() == 0


def test_message_count_increments(db, s1):
    db.append_message("s1", "user", "a")
    db.append_message("s1", "assistant", "b")
    assert db.get_session("s1")["message_count"] == 2


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([("assistant", [TOOL_CALL])], 1),
        ([("assistant", [TOOL_CALL, {**TOOL_CALL, "id": "c2"}]), ("tool", None), ("tool", None)], 2),
        ([("tool", None)], 0),
        ([("tool", [TOOL_CALL])], 0),
        ([("assistant", TOOL_CALL)], 1),
        ([("assistant", [])], 0),
        ([("assistant", None), ("user", None)], 0),
    ],
    ids=["one-call", "two-calls-two-responses", "tool-response", "tool-role-with-calls", "non-list-counts-one",
         "empty-list", "no-calls"],
)
def test_tool_call_count(db, s1, messages, expected):
    for role, tool_calls in messages:
        db.append_message("s1", role, "x", tool_calls=tool_calls, tool_call_id="c1" if role == "tool" else None)
    assert db.get_session("s1")["tool_call_count"] == expected


def test_tool_calls_round_trip_as_json(db, s1):
    calls = [TOOL_CALL, {"id": "c2", "type": "function", "function": {"name": "名前", "arguments": '{"q": "ü"}'}}]
    db.append_message("s1", "assistant", None, tool_calls=calls)
    assert db.get_messages("s1")[0]["tool_calls"] == calls
    stored = db._conn.execute("SELECT tool_calls FROM messages").fetchone()[0]
    assert json.loads(stored) == calls


def test_finish_reason_is_stored(db, s1):
    db.append_message("s1", "assistant", "done", finish_reason="stop")
    assert db.get_messages("s1")[0]["finish_reason"] == "stop"


def test_conversation_is_minimal_dicts(db, s1):
    db.append_message("s1", "user", "Hello", token_count=3)
    db.append_message("s1", "assistant", "Hi!", finish_reason="stop", token_count=2)
    assert db.get_messages_as_conversation("s1") == [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi!"},
    ]


def test_conversation_carries_tool_fields(db, s1):
    db.append_message("s1", "user", "schedule it")
    db.append_message("s1", "assistant", None, tool_calls=[TOOL_CALL],
                      reasoning="I should call the cronjob tool to schedule this.")
    db.append_message("s1", "tool", "ok", tool_name="cronjob", tool_call_id="c1")
    conv = db.get_messages_as_conversation("s1")
    assert conv == [
        {"role": "user", "content": "schedule it"},
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL],
         "reasoning": "I should call the cronjob tool to schedule this."},
        {"role": "tool", "content": "ok", "tool_call_id": "c1", "tool_name": "cronjob"},
    ]


def test_reasoning_details_and_codex_items_decoded_for_assistant(db, s1):
    details = [{"type": "reasoning.summary", "summary": "thinking"}, {"type": "reasoning.text", "text": "more"}]
    items = [{"type": "reasoning", "id": "r1", "encrypted_content": "enc_blob_123"}, {"type": "reasoning", "id": "r2"}]
    db.append_message("s1", "assistant", "answer", reasoning="Thinking about what to say",
                      reasoning_details=details, codex_reasoning_items=items)
    entry = db.get_messages_as_conversation("s1")[0]
    assert entry["reasoning"] == "Thinking about what to say"
    assert entry["reasoning_details"] == details
    assert entry["codex_reasoning_items"] == items
    assert entry["codex_reasoning_items"][0]["encrypted_content"] == "enc_blob_123"


@pytest.mark.parametrize("reasoning", [None, ""])
def test_empty_reasoning_is_left_out(db, s1, reasoning):
    db.append_message("s1", "assistant", "answer", reasoning=reasoning)
    assert "reasoning" not in db.get_messages_as_conversation("s1")[0]


def test_reasoning_only_restored_for_assistant_messages(db, s1):
    db.append_message("s1", "user", "question", reasoning="user-side text", reasoning_details=[{"a": 1}])
    entry = db.get_messages_as_conversation("s1")[0]
    assert entry == {"role": "user", "content": "question"}


def test_multimodal_content_round_trips_as_the_same_list(db, s1):
    db.append_message("s1", "user", MULTIMODAL)
    assert db.get_messages("s1")[0]["content"] == MULTIMODAL
    assert db.get_messages_as_conversation("s1") == [{"role": "user", "content": MULTIMODAL}]


def test_multimodal_content_is_stored_with_the_hermes_marker_and_raw_unicode(db, s1):
    db.append_message("s1", "user", MULTIMODAL)
    stored = db._conn.execute("SELECT content FROM messages").fetchone()[0]
    assert stored.startswith("\x00json:")
    assert json.loads(stored[len("\x00json:"):]) == MULTIMODAL
    assert "这张图片里有什么" in stored
    assert "\\u" not in stored


def test_marker_content_written_by_hermes_is_read_as_a_list(db, s1):
    db.append_message("s1", "user", "placeholder")
    db._conn.execute("UPDATE messages SET content = ?", ("\x00json:" + json.dumps(MULTIMODAL),))
    assert db.get_messages("s1")[0]["content"] == MULTIMODAL


def test_plain_text_is_stored_unchanged(db, s1):
    db.append_message("s1", "user", "plain [text] with \"json\" look {}")
    assert db._conn.execute("SELECT content FROM messages").fetchone()[0] == "plain [text] with \"json\" look {}"


def test_clear_messages_keeps_session_and_zeroes_counts(db, s1):
    db.create_session("s2", "cli")
    db.append_message("s1", "assistant", "a", tool_calls=[TOOL_CALL])
    db.append_message("s1", "tool", "b", tool_call_id="c1")
    db.append_message("s2", "user", "other session")
    db.clear_messages("s1")
    row = db.get_session("s1")
    assert row is not None
    assert (row["message_count"], row["tool_call_count"]) == (0, 0)
    assert db.get_messages("s1") == []
    assert db.message_count("s2") == 1
    assert db.search_messages("session")[0]["session_id"] == "s2"


def test_timestamp_is_now(db, s1):
    before = time.time()
    db.append_message("s1", "user", "x")
    assert before <= db.get_messages("s1")[0]["timestamp"] <= time.time()


@pytest.mark.parametrize("foreign_keys", ["ON", "OFF"])
def test_append_to_an_unknown_session_raises_the_same_error_and_writes_nothing(db, foreign_keys):
    db.create_session("s1", "cli")
    db.append_message("s1", "user", "kept")
    db._conn.execute(f"PRAGMA foreign_keys={foreign_keys}")  # OFF: a connection that does not enforce them
    with pytest.raises(UnknownSessionError, match=r"^Session 'ghost' does not exist$") as caught:
        db.append_message("ghost", "assistant", "lost", tool_calls=[{"id": "c"}])
    assert isinstance(caught.value, sqlite3.IntegrityError) and caught.value.__cause__ is None
    assert db._conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 1
    assert db.search_messages("lost") == []  # the FTS trigger's row went with the rolled-back insert
    assert db.append_message("s1", "assistant", "still writable") > 0
    assert db.get_session("s1")["message_count"] == 2
