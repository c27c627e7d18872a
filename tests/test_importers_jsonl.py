from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_state_tools.core.records import (
    SOURCE_FALLBACK,
    SOURCE_FROM_META,
    LegacyMessage,
    LegacySession,
    Problem,
)
from hermes_state_tools.importers.jsonl import read_jsonl

LEGACY = Path(__file__).resolve().parent.parent / "fixtures" / "legacy" / "jsonl"
UTC = timezone.utc


def read(name: str, **options) -> tuple[LegacySession, list[Problem]]:
    records = list(read_jsonl(LEGACY / name, name, tz=UTC, **options))
    [session] = [r for r in records if isinstance(r, LegacySession)]
    return session, [r for r in records if isinstance(r, Problem)]


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def kinds(problems: list[Problem]) -> list[tuple[int | None, str, bool]]:
    return [(p.line, p.kind, p.failure) for p in problems]


def test_plain_early_file():
    session, problems = read("plain_early.jsonl")
    assert problems == []
    assert (session.session_id, session.kind, session.file) == ("plain_early", "jsonl", "plain_early.jsonl")
    assert session.fields == {"source": "unknown"}
    assert session.source_rank == SOURCE_FALLBACK
    assert session.messages == (
        LegacyMessage("user", "hello", at("2026-02-01T09:00:00"), line=1),
        LegacyMessage("assistant", "Hi! How can I help?", at("2026-02-01T09:00:01.5"), line=2),
        LegacyMessage("user", "Ünïcödé ✓ 你好 🙂", at("2026-02-01T09:00:05"), line=3),
    )


def test_session_meta_gives_model_source_tools_and_is_not_a_message():
    session, problems = read("meta_tools.jsonl")
    assert problems == []
    assert session.fields == {
        "model": "anthropic/claude-opus-4.6",
        "source": "telegram",
        "started_at": at("2026-03-10T18:42:11"),
    }
    assert session.source_rank == SOURCE_FROM_META
    assert session.extra["tools"][0]["function"]["name"] == "terminal"
    assert [m.line for m in session.messages] == [2, 3, 4, 5, 6, 7, 8, 9]


def test_meta_file_messages_keep_every_key():
    messages = read("meta_tools.jsonl")[0].messages
    user, call, tool, answer, mirror, notice, image, named_tool = messages
    assert user.extra == {"message_id": "42"}
    assert call.tool_calls[0]["function"]["name"] == "terminal"
    assert (call.reasoning, call.finish_reason) == ("run ls", "tool_calls")
    assert call.reasoning_details == [{"type": "reasoning.text", "text": "run ls"}]
    assert (tool.tool_call_id, tool.tool_name) == ("call_a1", "terminal")  # from the assistant's call
    assert answer.extra == {"extra_key": {"kept": True}}
    assert (mirror.role, mirror.extra) == ("assistant", {"mirror": True, "mirror_source": "cron"})
    assert (notice.content, notice.timestamp) == ("[SYSTEM: MCP servers have been reloaded.]", None)
    assert image.content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert (named_tool.tool_name, named_tool.extra) == ("memory", {})


def test_round_trip_rows_and_epoch_timestamps():
    session, problems = read("epoch_roundtrip.jsonl")
    assert problems == []
    assert session.fields == {"started_at": 1779199353.2091, "source": "unknown"}
    assert [(m.role, m.timestamp) for m in session.messages] == [
        ("user", 1779199360.5561),
        ("tool", 1779199367.0),
        ("assistant", 1779199370.44),
    ]
    assert session.messages[1].tool_name == "terminal"


def test_compressed_transcript_has_no_timestamps():
    session, problems = read("compressed.jsonl")
    assert problems == []
    assert session.messages[0].content.startswith("[CONTEXT SUMMARY]:")
    assert [m.timestamp for m in session.messages] == [None, None]


def test_cp1252_with_crlf():
    session, problems = read("cp1252_crlf.jsonl")
    assert [m.content for m in session.messages] == ["Café crawl — où?", "plain ascii"]
    assert kinds(problems) == [(1, "decoded_cp1252", False)]


def test_zero_byte_file_is_an_empty_session():
    session, problems = read("empty.jsonl")
    assert (session.session_id, session.messages, session.has_messages) == ("empty", (), True)
    assert problems == [Problem("empty.jsonl", None, "empty_file", "file is empty (0 bytes)")]


def test_blank_lines_are_notices():
    session, problems = read("blank_lines.jsonl")
    assert kinds(problems) == [(2, "blank_line", False), (3, "blank_line", False), (5, "blank_line", False)]
    assert [m.line for m in session.messages] == [1, 4]


def test_truncated_last_line_is_a_failure():
    session, problems = read("truncated_last.jsonl")
    assert kinds(problems) == [(3, "truncated_line", True)]
    assert problems[0].file == "truncated_last.jsonl"
    assert len(session.messages) == 2


def test_invalid_middle_line_is_a_failure_and_the_rest_is_read():
    session, problems = read("invalid_middle.jsonl")
    assert kinds(problems) == [(2, "invalid_json", True)]
    assert [m.line for m in session.messages] == [1, 3]


def test_records_without_role_are_failures():
    session, problems = read("no_role.jsonl")
    assert kinds(problems) == [(n, "missing_role", True) for n in (2, 3, 4)]
    assert [m.line for m in session.messages] == [1, 5]


def test_lines_that_are_not_objects_are_failures():
    session, problems = read("not_object.jsonl")
    assert kinds(problems) == [(n, "not_object", True) for n in (2, 3, 4, 5)]
    assert "JSON list" in problems[0].detail
    assert [m.line for m in session.messages] == [1, 6]


def test_wrong_types_are_kept_losslessly():
    session, problems = read("wrong_types.jsonl")
    number, mapping, tool = session.messages
    assert (number.content, number.extra) == ("42", {"original_content": 42})
    assert mapping.content == '{"text": "a dict"}'
    assert mapping.extra == {
        "original_content": {"text": "a dict"},
        "original_timestamp": "yesterday at noon",
    }
    assert mapping.timestamp is None
    assert (tool.tool_call_id, tool.tool_calls, tool.token_count) == ("5", None, None)
    assert tool.extra == {
        "original_tool_call_id": 5,
        "original_tool_calls": {"not": "a list"},
        "original_token_count": "12",
    }
    assert sorted(kinds(problems)) == [
        (1, "wrong_type", False),
        (2, "bad_timestamp", False),
        (2, "wrong_type", False),
        (3, "wrong_type", False),
        (3, "wrong_type", False),
        (3, "wrong_type", False),
    ]


def test_re_appended_history_is_dropped_and_counted():
    session, problems = read("duplicate_block.jsonl")
    contents = [m.content for m in session.messages]
    assert contents == ["hello", "Hi! How can I help?", "what's 2+2?", "4", "thanks", "Any time."]
    assert [m.line for m in session.messages] == [1, 2, 3, 4, 9, 10]
    assert session.duplicates_skipped == 10
    assert kinds(problems) == [(5, "duplicate_block", False), (11, "duplicate_block", False)]
    assert "lines 5-8" in problems[0].detail and "lines 11-16" in problems[1].detail


def test_a_single_repeated_message_is_real():
    session, problems = read("real_repeat.jsonl")
    assert [m.content for m in session.messages] == ["yes", "yes", "Okay, doing it."]
    assert (problems, session.duplicates_skipped) == ([], 0)


def test_fallback_source_replaces_only_the_fallback():
    assert read("plain_early.jsonl", fallback_source="telegram")[0].fields["source"] == "telegram"
    named, _ = read("meta_tools.jsonl", fallback_source="discord")
    assert (named.fields["source"], named.source_rank) == ("telegram", SOURCE_FROM_META)


def write(tmp_path: Path, records: list, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records))
    return path


def test_local_platform_is_cli_and_contradicting_meta_lines_are_kept(tmp_path):
    meta = {"role": "session_meta", "platform": "local", "model": "a"}
    other = {"role": "session_meta", "model": "b"}
    path = write(tmp_path, [meta, {"role": "user", "content": "hi"}, other])
    [session] = list(read_jsonl(path, "s"))
    assert session.fields == {"model": "a", "source": "cli"}
    assert session.extra == {"session_meta_line_3": other}


def test_multi_megabyte_line(tmp_path):
    output = "line of tool output\n" * 300_000
    path = write(tmp_path, [{"role": "tool", "content": output, "tool_call_id": "c", "tool_name": "t"}])
    [session] = list(read_jsonl(path, "s"))
    assert path.stat().st_size > 6_000_000
    assert session.messages[0].content == output


def test_a_repeat_of_the_raw_prefix_after_an_earlier_repeat_is_dropped(tmp_path):
    a, b, c = ({"role": "user", "content": x} for x in "abc")
    path = write(tmp_path, [a, b, a, b, c, a, b, a, b, c])
    [notice, again, session] = list(read_jsonl(path, "s"))
    assert [m.content for m in session.messages] == ["a", "b", "c"]
    assert (notice.line, again.line, session.duplicates_skipped) == (3, 6, 7)



def test_history_re_appended_with_the_turns_time_is_dropped(tmp_path):
    """Before Hermes PR #395 (March 2026) the gateway re-appended the whole history when its agent
    returned no more messages than the history it loaded (two session_meta lines), stamping every
    copy with the turn's time (`{**msg, "timestamp": ts}`): the copies were stored again."""
    def turn(n: int, at: str) -> list[dict]:
        return [{"role": "user", "content": f"q{n}", "timestamp": at},
                {"role": "assistant", "content": f"a{n}", "timestamp": at}]

    meta = {"role": "session_meta", "model": "m", "platform": "telegram"}
    copy = [{**m, "timestamp": "2026-03-01T09:02:00"} for m in turn(0, "") + turn(1, "")]
    path = write(tmp_path, [meta, meta, *turn(0, "2026-03-01T09:00:00"), *turn(1, "2026-03-01T09:01:00"),
                            *copy, *turn(2, "2026-03-01T09:02:00")])
    *notices, session = list(read_jsonl(path, "s"))
    assert [m.content for m in session.messages] == ["q0", "a0", "q1", "a1", "q2", "a2"]
    assert [(p.kind, p.line) for p in notices] == [("duplicate_block", 7)]
    assert session.duplicates_skipped == 4


def test_an_exchange_said_again_in_a_turn_of_its_own_is_real(tmp_path):
    """One time for all copies is the bug's mark only when the turn goes on after them: a user who
    says "hi" again and gets the same answer wrote a turn of its own."""
    records = [{"role": "user", "content": "hi", "timestamp": "2026-03-01T09:00:00"},
               {"role": "assistant", "content": "Hello!", "timestamp": "2026-03-01T09:00:00"},
               {"role": "user", "content": "hi", "timestamp": "2026-03-01T09:05:00"},
               {"role": "assistant", "content": "Hello!", "timestamp": "2026-03-01T09:05:00"},
               {"role": "user", "content": "bye", "timestamp": "2026-03-01T09:09:00"}]
    [session] = list(read_jsonl(write(tmp_path, records), "s"))
    assert [m.content for m in session.messages] == ["hi", "Hello!", "hi", "Hello!", "bye"]


_SPECIAL = st.sampled_from(["你好世界", "🙂👍🏽", "\x00\x1b\r\n\u2028", ""])
_TEXT = st.text(st.characters(codec="utf-8"), max_size=30) | _SPECIAL
_FUNCTION = st.fixed_dictionaries({"name": st.text(min_size=1, max_size=8), "arguments": st.just('{"a": 1}')})
_CALL = st.fixed_dictionaries(
    {"id": st.text(min_size=1, max_size=8), "type": st.just("function"), "function": _FUNCTION}
)


@st.composite
def transcripts(draw) -> list[dict]:
    messages = []
    for index in range(draw(st.integers(1, 12))):
        role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
        message = {"role": role, "content": f"{draw(_TEXT)} #{index}", "timestamp": draw(st.floats(0, 4e9))}
        if role == "assistant":
            message["tool_calls"] = draw(st.none() | st.lists(_CALL, max_size=2))
        if role == "tool":
            message.update(tool_call_id=draw(st.text(min_size=1, max_size=8)), tool_name=draw(_TEXT))
        messages.append(message)
    return messages


@settings(max_examples=examples(150), deadline=None)
@given(transcripts())
def test_random_transcripts_read_back_exactly(tmp_path_factory, messages):
    path = write(tmp_path_factory.mktemp("t"), messages)
    [session] = list(read_jsonl(path, "s"))
    assert session.messages == tuple(LegacyMessage(**m, line=n) for n, m in enumerate(messages, 1))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT | st.sampled_from(["role"]), inner),
    max_leaves=8,
)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.binary(max_size=40) | _JSON.map(lambda v: json.dumps(v).encode()), max_size=10))
def test_garbage_never_raises(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("g") / "g.jsonl"
    path.write_bytes(b"\n".join(lines))
    records = list(read_jsonl(path, "g"))
    assert all(isinstance(r, (LegacySession, Problem)) for r in records)
    assert sum(isinstance(r, LegacySession) for r in records) == 1


def test_the_repeated_hour_when_summer_time_ends_reads_in_file_order(tmp_path):
    """Naive local times of the night the clocks go back: 02:05 after 02:55 is the second 02:05
    (CET), an hour after the first reading; it was stored as the first (CEST), an hour early."""
    from zoneinfo import ZoneInfo

    stamps = ["2026-10-25T02:40:00", "2026-10-25T02:55:00", "2026-10-25T02:05:00", "2026-10-25T02:20:00"]
    records = [{"role": "user", "content": f"q{n}", "timestamp": t} for n, t in enumerate(stamps)]
    records += [{"role": "user", "content": "aware", "timestamp": "2026-10-25T00:10:00+00:00"},
                {"role": "user", "content": "epoch", "timestamp": 1792887000.0}]
    [session] = list(read_jsonl(write(tmp_path, records), "s", tz=ZoneInfo("Europe/Berlin")))
    utc = [datetime.fromtimestamp(m.timestamp, timezone.utc).strftime("%H:%M") for m in session.messages]
    assert utc == ["00:40", "00:55", "01:05", "01:20", "00:10", "00:10"]  # times that name one moment stay
