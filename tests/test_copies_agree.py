"""What copies of one message agree on (align.content_key), inflated snapshots (copies/inflated.py),
and the bar behind both: a re-run adds nothing, whatever the text."""

from __future__ import annotations

import json
import math
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from import_helpers import import_json, query

from hermes_state_tools import SessionDB
from hermes_state_tools.ingest.copies.align import cleaned_text, content_key, durable_text
from hermes_state_tools.ingest.copies.inflated import inflated


def hermes_clean(content: str) -> str:
    """run_agent.py AIAgent._clean_session_content, as Hermes wrote snapshots from March 2026."""
    if "<REASONING_SCRATCHPAD>" in content:  # agent/trajectory.py convert_scratchpad_to_think
        content = content.replace("<REASONING_SCRATCHPAD>", "<think>").replace("</REASONING_SCRATCHPAD>", "</think>")
    content = re.sub(r"\n+(<think>)", r"\n\1", content)
    content = re.sub(r"(</think>)\n+", r"\1\n", content)
    return content.strip()


pieces = st.lists(st.sampled_from(["<REASONING_SCRATCHPAD>", "</REASONING_SCRATCHPAD>", "<think>", "</think>",
                                   "\n", "\n\n\n", " ", "text", "é", "\ud83d", "[screenshot]"]) | st.text(max_size=4),
                  max_size=12).map("".join)


@given(pieces)
def test_snapshot_cleaned_assistant_text_is_the_same_message(raw):
    assert content_key("assistant", hermes_clean(raw)) == content_key("assistant", raw)
    assert cleaned_text(cleaned_text(raw)) == cleaned_text(raw)


def test_user_and_tool_text_is_not_cleaned():
    raw = "<REASONING_SCRATCHPAD>x</REASONING_SCRATCHPAD>"
    assert content_key("user", raw) != content_key("user", "<think>x</think>")


def test_parts_are_the_gateways_flattened_text():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert durable_text([{"type": "text", "text": "look"}, image]) == "look\n[screenshot]"
    assert durable_text([image, image]) == "[screenshot]\n[screenshot]"
    assert durable_text([{"type": "audio"}]) is None
    assert content_key("user", [{"type": "text", "text": "look"}, image]) == content_key("user", "look\n[screenshot]")


def test_a_lone_surrogate_is_the_replacement_character_it_is_stored_as():
    assert content_key("user", "cut \ud83d here") == content_key("user", "cut \ufffd here")
    long = "x" * 100
    assert content_key("user", long + "\ud83d") == content_key("user", long + "\ufffd")
    assert isinstance(content_key("user", long), bytes)  # long text: a digest, not a second copy


def test_inflated_repeats_go_unless_the_timed_copy_repeats_them_too():
    def dropped(untimed: list[str], timed: list[str]) -> list[int]:
        return sorted(inflated([("user" if w[0] == "q" else "assistant", w) for w in untimed],
                               [("user" if w[0] == "q" else "assistant", w) for w in timed]))

    assert dropped(["q1", "a1", "q1", "a1", "q2", "a2", "q2", "a2"], ["q1", "a1", "q2", "a2"]) == [2, 3, 6, 7]
    assert dropped(["q1", "a1", "q1", "a1", "q1", "a1"], ["q1", "a1"]) == [2, 3, 4, 5]
    assert dropped(["qok", "amore", "qok", "amore", "qok", "abye"], ["qok", "amore", "qok", "abye"]) == [2, 3]
    assert dropped(["qok", "amore", "qok", "amore"], ["qok", "amore", "qok", "amore"]) == []  # said twice
    assert dropped(["qok", "aok", "qok", "aok"], ["qx", "ax"]) == []  # unknown to the timed copy: kept
    assert dropped(["q1", "a1", "q1", "a1", "q1", "a1", "q1", "a1"], ["q1", "a1", "q1", "a1"]) == [4, 5, 6, 7]
    # February's snapshots repeat each reply instead (q1 a1 a1 q2 a2 a2)
    assert dropped(["q1", "a1", "a1", "q2", "a2", "a2"], ["q1", "a1", "q2", "a2"]) == [2, 5]
    assert dropped(["q1", "a1", "a1", "q1", "a1", "a1"], ["q1", "a1"]) == [2, 3, 4, 5]
    assert dropped(["q1", "aok", "aok", "q2"], ["q1", "aok", "aok", "q2"]) == []  # said twice


text = st.text(st.characters(blacklist_categories=["Cc"]) | st.sampled_from(["\ud800", "\udfff", "\n", "\x00"]),
               max_size=30)


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), text), min_size=1, max_size=5))
def test_a_rerun_adds_nothing_whatever_the_text(messages):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sessions"
        folder.mkdir()
        lines = [json.dumps({"role": role, "content": body, "timestamp": "2026-03-01T10:00:00"})
                 for role, body in messages]
        (folder / "20260301_100000_abcdef01.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        snapshot = {"session_id": "20260301_100000_abcdef01", "messages": [
            {"role": role, "content": hermes_clean(body) if role == "assistant" else body} for role, body in messages]}
        (folder / "session_20260301_100000_abcdef01.json").write_text(json.dumps(snapshot), encoding="utf-8")
        db = Path(tmp) / "state.db"
        _code, first = import_json(db, folder, options=["--tz", "UTC"])
        _code, again = import_json(db, folder, options=["--tz", "UTC"])
        assert (again["messages_imported"], again["sessions_updated"]) == (0, 0)
        stored = query(db, "SELECT COUNT(*) AS n FROM messages")[0]["n"]
        assert stored == first["messages_imported"] <= len(messages)  # the snapshot added none of its own


words = st.sampled_from(["ok", "yes", "hi", "deploy it", "done.",
                         "<REASONING_SCRATCHPAD>x</REASONING_SCRATCHPAD>\n\nok"])


@settings(max_examples=examples(20), deadline=None)
@given(st.lists(st.tuples(words, words, st.integers(1, 3)), min_size=1, max_size=6), st.booleans(), st.booleans())
def test_every_copy_hermes_wrote_comes_in_once(exchanges, whole_history_repeat, replies_doubled):
    """The JSONL holds each exchange once; the snapshot (cleaned text) repeats some 2-3 times, as the
    gateway's double-write bug did, or each reply twice (its February form), and maybe re-appends the
    whole history too: stored once each."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sessions"
        folder.mkdir()
        sid = "20260301_100000_abcdef01"
        lines, inflated = [], []
        for n, (question, answer, times) in enumerate(exchanges):
            stamp = f"2026-03-01T10:{n:02d}:00"
            pair = [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
            lines += [{**m, "timestamp": stamp} for m in pair]
            answers = [pair[1]] * (1 + replies_doubled)
            inflated += [{**m, "content": hermes_clean(m["content"]) if m["role"] == "assistant" else m["content"]}
                         for m in [pair[0], *answers]] * times
        if whole_history_repeat:
            inflated += inflated
        (folder / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
        (folder / f"session_{sid}.json").write_text(json.dumps({"session_id": sid, "messages": inflated}))
        db = Path(tmp) / "state.db"
        import_json(db, folder, options=["--tz", "UTC"])
        rows = query(db, "SELECT role, content FROM messages ORDER BY timestamp, id")
        stored = [(r["role"], r["content"]) for r in rows]
        assert stored == [(m["role"], m["content"]) for m in lines]
        _code, again = import_json(db, folder, options=["--tz", "UTC"])
        assert (again["messages_imported"], again["sessions_updated"]) == (0, 0)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(words, words, st.integers(111, 3600), st.integers(0, 50)), min_size=2, max_size=7),
       st.data())
def test_a_database_holding_the_latest_turns_and_a_backup_holding_the_first_make_the_whole_session(turns, data):
    """Hermes' database holds a session's latest turns (appended as they happened), a kept backup of its
    transcript the first ones (each turn dated when it ended); together, or overlapping, they hold every
    turn. Short replies repeat ("ok" in several turns), so content alone cannot place them: the times do,
    whenever a turn ends more than a minute before the next begins (gaps of 111 s or more, turns of 50 s
    at most; a reply stored within a second of its question too). (Whole turns said twice, question and
    reply, are matched by content: side by side within a second, they look like a rewrite's rows.)"""
    stored_from = data.draw(st.integers(1, len(turns) - 1), label="database holds turns from")
    backup_to = data.draw(st.integers(stored_from, len(turns)), label="backup holds turns up to")
    sid = "20260301_100000_abcdef01"
    turns = [(f"{question} ({n})", reply, gap, took) for n, (question, reply, gap, took) in enumerate(turns)]
    starts, clock = [], 1_772_359_200.0  # 2026-03-01 10:00 UTC
    for _question, _reply, gap, _took in turns:
        clock += gap
        starts.append(clock)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "state.db"
        with SessionDB(db) as store:
            store.create_session(sid, "telegram")
            store._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (starts[0], sid))
            for (question, reply, _gap, took), start in list(zip(turns, starts, strict=True))[stored_from:]:
                for role, body, at in (("user", question, start), ("assistant", reply, start + took)):
                    row = store.append_message(sid, role, body)
                    store._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (at, row))
        lines = [{"role": role, "content": body, "timestamp": datetime.fromtimestamp(
                    math.ceil(start + took), timezone.utc).replace(tzinfo=None).isoformat()}
                 for (question, reply, _gap, took), start in list(zip(turns, starts, strict=True))[:backup_to]
                 for role, body in (("user", question), ("assistant", reply))]
        (Path(tmp) / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
        import_json(db, Path(tmp) / f"{sid}.jsonl", options=["--tz", "UTC"])
        rows = query(db, "SELECT role, content FROM messages ORDER BY timestamp, id")
        assert [(r["role"], r["content"]) for r in rows] == [
            (role, body) for question, reply, _gap, _took in turns for role, body in (("user", question),
                                                                                      ("assistant", reply))]
