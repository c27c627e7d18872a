"""Gateway transcripts as bytes, for the fast-path tests (tests/test_plain.py): mostly plain ones, some
with what must send a file to the careful reader. One generator drives both hypothesis (through
`DrawPick`) and seeded corpora (a `random.Random`), so the CLI runs see the same shapes."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol, TypeVar

from hermes_state_tools.core.export_format import FORMAT

T = TypeVar("T")

WORDS = ["ok", "yes", "deploy it", "done.", "你好，世界", "日本語のテキスト", "hi 👋", "🚀🔥", "naïve café",
         "line\nbreak", "tab\there", "quote \" and \\ slash", "", " ", "<b>markup</b>", "search needle zebra"]
TOOLS = ["terminal", "read_file", "web_search", "写文件"]
BASE = 1772359200.0  # 2026-03-01T10:00:00Z
ZONES = [timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30)), timezone.utc]
# What must send a file down the careful path (or, for "crlf", need not).
BREAKERS = ["blank_line", "whitespace_line", "crlf", "bom", "bom_inside", "truncated_last", "invalid_middle",
            "lone_surrogate", "name_key", "token_count", "non_dict", "export_first", "empty_file", "cp1252",
            "wide_float", "bad_timestamp", "no_timestamp", "wrong_type", "no_role"]


class Pick(Protocol):
    def choice(self, seq: list[T]) -> T: ...
    def randint(self, a: int, b: int) -> int: ...
    def random(self) -> float: ...


class DrawPick:
    """The Pick interface over hypothesis' `data.draw`, so examples shrink."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st
        self.data, self.st = data, st

    def choice(self, seq: list[T]) -> T:
        value: T = self.data.draw(self.st.sampled_from(seq))
        return value

    def randint(self, a: int, b: int) -> int:
        value: int = self.data.draw(self.st.integers(a, b))
        return value

    def random(self) -> float:
        value: float = self.data.draw(self.st.sampled_from([0.0, 0.05, 0.15, 0.3, 0.5, 0.7, 0.9, 0.99]))
        return value


def _text(pick: Pick) -> str:
    if pick.random() < 0.2:
        return pick.choice(WORDS) + " " + pick.choice(WORDS)
    return pick.choice(WORDS)


def _stamp(pick: Pick, seconds: float) -> Any:
    """One time in one of the spellings the gateway (and its eras) wrote."""
    kind = pick.choice(["iso_naive", "iso_naive", "iso_offset", "iso_z", "epoch_float", "epoch_int", "numeric_text"])
    moment = datetime.fromtimestamp(seconds, timezone.utc)
    if kind == "iso_naive":
        return moment.replace(tzinfo=None).isoformat()
    if kind == "iso_offset":
        return moment.astimezone(pick.choice(ZONES)).isoformat()
    if kind == "iso_z":
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
    if kind == "epoch_int":
        return int(seconds)
    if kind == "numeric_text":
        return str(seconds)
    return seconds


def _calls(pick: Pick, n: int) -> list[Any]:
    calls: list[Any] = []
    for k in range(pick.randint(1, 2)):
        shape = pick.choice(["ok", "ok", "ok", "no_function", "no_id", "not_dict"])
        call: Any = {"id": f"call_{n}_{k}", "type": "function",
                     "function": {"name": pick.choice(TOOLS), "arguments": json.dumps({"q": _text(pick)})}}
        if shape == "no_function":
            del call["function"]
        elif shape == "no_id":
            del call["id"]
        elif shape == "not_dict":
            call = f"call_{n}_{k}"
        calls.append(call)
    return calls


def _message(pick: Pick, n: int, pending: list[str]) -> dict[str, Any]:
    role = pick.choice(["user", "assistant", "assistant", "tool", "system"])
    record: dict[str, Any] = {"role": role}
    if role == "tool" and pending:
        record["tool_call_id"] = pending.pop(0)
        if pick.random() < 0.3:
            record["tool_name"] = pick.choice(TOOLS)
    elif role == "tool" and pick.random() < 0.5:
        record["tool_call_id"] = f"call_unknown_{n}"
    shape = pick.random()
    if shape < 0.15:
        record["content"] = [{"type": "text", "text": _text(pick)},
                             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    elif shape < 0.2:
        record["content"] = None
    elif shape >= 0.3:  # otherwise no content key at all
        record["content"] = _text(pick)
    if role == "assistant":
        if pick.random() < 0.3:
            record["tool_calls"] = calls = _calls(pick, n)
            pending += [c["id"] for c in calls if isinstance(c, dict) and "id" in c]
        if pick.random() < 0.3:
            record["finish_reason"] = pick.choice(["stop", "tool_calls", "length"])
        if pick.random() < 0.3:
            record["reasoning"] = _text(pick)
        if pick.random() < 0.15:
            details: list[Any] = [[{"type": "reasoning.text", "text": "思考"}], {"k": 1}, "s", 3]
            record["reasoning_details"] = pick.choice(details)
        if pick.random() < 0.1:
            record["codex_reasoning_items"] = [{"id": f"rs_{n}", "summary": []}]
        if pick.random() < 0.05:
            record["tool_calls"] = []
    return record


def _meta(pick: Pick, seconds: float) -> dict[str, Any]:
    meta: dict[str, Any] = {"role": "session_meta"}
    choices: tuple[tuple[str, list[Any]], ...] = (
        ("model", ["gpt-5", "", "claude-opus", "模型"]),
        ("platform", ["telegram", "local", "", "discord", None]),
        ("tools", [[{"name": "terminal"}], []]),
        ("content", [None]),
        ("session_id", ["other", "x"]),
        ("last_updated", [datetime.fromtimestamp(seconds + 5, timezone.utc).isoformat(), "soon"]),
    )
    for key, values in choices:
        if pick.random() < 0.5:
            meta[key] = pick.choice(values)
    if pick.random() < 0.6:
        meta["timestamp"] = _stamp(pick, seconds + pick.choice([-60.0, 0.0, 30.0, 1e5]))
    return meta


def transcript_lines(pick: Pick) -> list[dict[str, Any]]:
    """The records of one transcript: messages with times, maybe one to three session_meta lines."""
    seconds = BASE + pick.randint(0, 10**6)
    records: list[dict[str, Any]] = []
    pending: list[str] = []
    order = pick.choice(["increasing", "increasing", "increasing", "equal_some", "backwards_some"])
    for n in range(pick.randint(1, 8)):
        record = _message(pick, n, pending)
        step = pick.choice([1.0, 0.5, 60.0, 0.001, 3600.0])
        if order == "equal_some" and pick.random() < 0.3:
            step = 0.0
        elif order == "backwards_some" and pick.random() < 0.3:
            step = -2.0
        seconds += step
        record["timestamp"] = _stamp(pick, seconds)
        records.append(record)
    for _ in range(pick.choice([0, 1, 1, 2, 3])):
        meta = _meta(pick, BASE)
        records.insert(pick.choice([0, 0, 0, pick.randint(0, len(records))]), meta)
    return records


def _line(record: Any, pick: Pick) -> bytes:
    ascii_only = pick.random() < 0.2  # ASCII escapes, as some eras wrote
    try:
        return json.dumps(record, ensure_ascii=ascii_only).encode()
    except UnicodeEncodeError:  # a lone surrogate: only its escape can be written
        return json.dumps(record).encode()


def transcript_bytes(pick: Pick, breaker: str | None = None) -> bytes:
    """A transcript file's bytes; `breaker` adds one thing the careful reader repairs or reports."""
    records = transcript_lines(pick)
    if breaker == "empty_file":
        return b""
    messages = [r for r in records if r.get("role") != "session_meta"]
    target = pick.choice(messages)
    if breaker == "lone_surrogate":
        target["content"] = "cut \ud83d"
    elif breaker == "name_key":
        target["name"] = pick.choice(TOOLS)
    elif breaker == "token_count":
        target["token_count"] = pick.randint(0, 500)
    elif breaker == "wide_float":  # wherever a float can hide: the fast reader looks in each place
        big = pick.choice([1e300, -1e19, 2.0**63, 1.5e20])
        where = pick.choice(["reasoning_details", "codex_reasoning_items", "tool_calls", "content", "timestamp",
                             "meta"])
        if where == "tool_calls":
            target["tool_calls"] = [{"id": "call_w", "type": "function", "function": {"name": "x", "n": [big]}}]
        elif where == "content":
            target["content"] = [{"type": "text", "text": "t", "score": big}]
        elif where == "timestamp":
            target["timestamp"] = big
        elif where == "meta":
            records.insert(0, {"role": "session_meta", "platform": "cli", "budget": big})
        else:
            target[where] = {"big": big}
    elif breaker == "bad_timestamp":
        target["timestamp"] = "yesterday"
    elif breaker == "no_timestamp":
        del target["timestamp"]
    elif breaker == "wrong_type":
        target["finish_reason"] = 7
    elif breaker == "no_role":
        del target["role"]
    elif breaker == "export_first":
        records.insert(0, pick.choice([{"format": FORMAT, "session": {"id": "exported"}, "messages": []},
                                       {"id": "exported", "source": "cli", "messages": []}]))  # Hermes' own
    lines = [_line(r, pick) for r in records]
    at = pick.randint(0, len(lines))
    if breaker == "blank_line":
        lines.insert(at, b"")
    elif breaker == "whitespace_line":
        lines.insert(at, b"  \t")
    elif breaker == "non_dict":
        lines.insert(at, pick.choice([b"[]", b"3", b'"text"', b"null"]))
    elif breaker == "invalid_middle":
        lines.insert(at, b'{"role": "user", "content": oops}')
    elif breaker == "truncated_last":
        lines.append(b'{"role": "assistant", "content": "cut of')
    elif breaker == "cp1252":
        lines[at - 1 if at else 0] = lines[at - 1 if at else 0].replace(b"}", b', "note": "caf\xe9"}', 1)
    elif breaker == "bom_inside" and len(lines) > 1:
        lines[-1] = b"\xef\xbb\xbf" + lines[-1]
    data = b"\n".join(lines) + (b"\n" if pick.random() < 0.9 else b"")
    if breaker == "crlf":
        data = data.replace(b"\n", b"\r\n")
    if breaker == "bom":
        data = b"\xef\xbb\xbf" + data
    return data


def any_transcript(pick: Pick) -> bytes:
    """A transcript, one time in three with something that sends it down the careful path."""
    return transcript_bytes(pick, pick.choice(BREAKERS) if pick.random() < 0.3 else None)


def seeded_corpus(seed: int, count: int) -> dict[str, bytes]:
    """`count` transcripts by file name, about two thirds plain."""
    rng = random.Random(seed)
    return {f"2026030{n % 9 + 1}_1000{n:02d}_{seed:04x}{n:04x}.jsonl": any_transcript(rng) for n in range(count)}
