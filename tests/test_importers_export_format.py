from __future__ import annotations

import json
from pathlib import Path

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_state_tools.core.export_format import FORMAT, export_line
from hermes_state_tools.core.records import SOURCE_FROM_INDEX, LegacyMessage, LegacySession, Problem
from hermes_state_tools.importers.jsonl import read_jsonl

LEGACY = Path(__file__).resolve().parent.parent / "fixtures" / "legacy" / "jsonl"

SESSION = {
    "id": "s1",
    "source": "telegram",
    "user_id": "u",
    "model": "m",
    "model_config": '{"t": 1}',
    "system_prompt": "p",
    "parent_session_id": None,
    "started_at": 100.5,
    "ended_at": 200.25,
    "end_reason": "imported",
    "message_count": 2,
    "tool_call_count": 1,
    "input_tokens": 3,
    "output_tokens": 4,
    "cache_read_tokens": 0,
    "cache_write_tokens": 0,
    "reasoning_tokens": 0,
    "billing_provider": None,
    "billing_base_url": None,
    "billing_mode": None,
    "estimated_cost_usd": 0.01,
    "actual_cost_usd": None,
    "cost_status": "estimated",
    "cost_source": None,
    "pricing_version": None,
    "title": "Tïtle",
}
CALLS = [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]


def row(**columns) -> dict:
    base = {
        "id": 7,
        "session_id": "s1",
        "role": "user",
        "content": None,
        "tool_call_id": None,
        "tool_calls": None,
        "tool_name": None,
        "timestamp": 150.0,
        "token_count": None,
        "finish_reason": None,
        "reasoning": None,
        "reasoning_details": None,
        "codex_reasoning_items": None,
    }
    return {**base, **columns}


def read_lines(tmp_path: Path, data: bytes) -> list:
    path = tmp_path / "export.jsonl"
    path.write_bytes(data)
    return list(read_jsonl(path, "export.jsonl"))


def test_export_line_shape():
    rows = [
        row(content="\x00json:" + json.dumps([{"type": "text", "text": "hi"}])),
        row(role="assistant", tool_calls=CALLS, reasoning_details='[{"k": 1}]', codex_reasoning_items="[]"),
    ]
    record = json.loads(export_line(SESSION, rows, {"tools": []}, [{"message_id": "9"}, {}]))
    assert record["format"] == FORMAT
    assert record["session"] == SESSION and record["extra"] == {"tools": []}
    first, second = record["messages"]
    assert "id" not in first and "session_id" not in first
    assert first["content"] == [{"type": "text", "text": "hi"}]
    assert first["extra"] == {"message_id": "9"}
    assert (second["tool_calls"], second["reasoning_details"], second["codex_reasoning_items"]) == (
        CALLS,
        [{"k": 1}],
        [],
    )


def test_export_then_read_reproduces_every_field(tmp_path):
    rows = [
        row(content="héllo 你好", token_count=5),
        row(
            role="assistant",
            content="",
            tool_calls=CALLS,
            finish_reason="tool_calls",
            reasoning="r",
            reasoning_details='{"d": 1}',
            timestamp=151.125,
        ),
    ]
    data = export_line(SESSION, rows, {"tools": ["x"]}, [{"mirror": True}, {}])
    [session] = read_lines(tmp_path, data)
    assert (session.session_id, session.kind, session.source_rank) == ("s1", "export", SOURCE_FROM_INDEX)
    assert session.fields == {k: v for k, v in SESSION.items() if k != "id"}
    assert session.extra == {"tools": ["x"]}
    assert session.messages == (
        LegacyMessage("user", "héllo 你好", 150.0, token_count=5, extra={"mirror": True}, line=1),
        LegacyMessage(
            "assistant",
            "",
            151.125,
            tool_calls=CALLS,
            finish_reason="tool_calls",
            reasoning="r",
            reasoning_details={"d": 1},
            line=1,
        ),
    )


def test_fixture_export_file():
    records = list(read_jsonl(LEGACY / "export.jsonl", "export.jsonl"))
    parent, child = records
    assert (parent.session_id, child.session_id) == ("20260401_120000_abcdef", "child")
    assert child.fields["parent_session_id"] == "20260401_120000_abcdef"
    assert parent.fields["title"] == "Export ✓"
    assert parent.messages[1].extra == {"mirror": True, "mirror_source": "cli"}
    assert parent.messages[1].codex_reasoning_items == [{"id": "r1"}]


def test_lines_that_are_not_export_records_fail(tmp_path):
    good = export_line(SESSION, [], {}, [])
    records = read_lines(
        tmp_path, good + b'{"role": "user", "content": "x"}\n' + good.replace(b'"id":"s1"', b'"id":1')
    )
    assert [(r.line, r.kind, r.failure) for r in records if isinstance(r, Problem)] == [
        (2, "not_export_record", True),
        (3, "missing_session_id", True),
    ]
    assert [r.session_id for r in records if isinstance(r, LegacySession)] == ["s1"]


def test_lone_surrogates_fall_back_to_escaped_json(tmp_path):
    data = export_line(SESSION, [row(content="bad \ud800 half")], {}, [{}])
    assert data.isascii()
    session, notice = read_lines(tmp_path, data)
    assert session.messages[0].content == "bad \ud800 half"
    assert (notice.kind, notice.line, notice.failure) == ("lone_surrogate", 1, False)


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant", "tool"]),
            st.text() | st.none(),
            st.floats(0, 4e9),
            st.dictionaries(st.text(), _VALUES, max_size=3),
        ),
        max_size=6,
    )
)
def test_random_sessions_round_trip(tmp_path_factory, messages):
    rows = [row(role=role, content=content, timestamp=ts) for role, content, ts, _ in messages]
    extras = [extra for *_, extra in messages]
    path = tmp_path_factory.mktemp("e") / "e.jsonl"
    path.write_bytes(export_line(SESSION, rows, {"k": "v"}, extras))
    [session] = list(read_jsonl(path, "e"))
    expected = tuple(
        LegacyMessage(role, content, ts, extra=extra, line=1) for role, content, ts, extra in messages
    )
    assert session.messages == expected


def hermes_export_line(**more) -> dict:
    """One line of Hermes' own `hermes sessions export` (hermes_cli/main.py: export_session per line)."""
    return {"id": "20260320_101010_abcdef12", "source": "telegram", "user_id": "12345", "model": "m",
            "started_at": 1.0, "ended_at": 2.0, "end_reason": "session_reset", "message_count": 2,
            "title": "Trip plan", "input_tokens": 1200, "display_kind": "chat",  # a newer Hermes' column
            "messages": [
                {"id": 7, "session_id": "20260320_101010_abcdef12", "role": "user", "content": "hi",
                 "tool_call_id": None, "tool_calls": None, "tool_name": None, "timestamp": 1.5, "token_count": None},
                {"id": 8, "session_id": "20260320_101010_abcdef12", "role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}],
                 "timestamp": 1.6, "finish_reason": "tool_calls", "api_content": "x"}], **more}


def test_hermes_own_export_is_read_like_ours(tmp_path):
    records = read_lines(tmp_path, (json.dumps(hermes_export_line(), ensure_ascii=False) + "\n").encode())
    [session] = [r for r in records if isinstance(r, LegacySession)]
    assert [r for r in records if isinstance(r, Problem)] == []
    assert (session.session_id, session.kind, session.fields["title"], session.fields["end_reason"]) == (
        "20260320_101010_abcdef12", "export", "Trip plan", "session_reset")
    assert session.extra == {"display_kind": "chat"}  # kept, not lost
    first, second = session.messages
    assert (first.role, first.content, first.timestamp, first.extra) == ("user", "hi", 1.5, {})
    assert second.tool_calls[0]["id"] == "c1" and second.extra == {"api_content": "x"}


def test_rows_that_are_no_message_in_an_export_go_to_extra_data(tmp_path):
    line = hermes_export_line()
    meta_row = {"id": 6, "session_id": line["id"], "role": "session_meta", "content": None, "timestamp": 1.0}
    line["messages"].insert(0, meta_row)
    [session] = [r for r in read_lines(tmp_path, (json.dumps(line) + "\n").encode()) if isinstance(r, LegacySession)]
    assert [m.role for m in session.messages] == ["user", "assistant"]
    [kept] = session.extra["foreign_rows"]
    assert (kept["role"], kept["content"], kept["timestamp"]) == ("session_meta", None, 1.0)
