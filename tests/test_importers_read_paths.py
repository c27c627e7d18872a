from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_state_tools.core.records import LegacySession, Problem
from hermes_state_tools.importers import read_file, read_paths

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT.parent / "shared" / "samples" / "legacy-home"


def test_reads_every_fixture_folder_and_counts_files():
    reader = read_paths([ROOT / "fixtures" / "legacy" / d for d in ("jsonl", "snapshots", "logs", "index")])
    records = list(reader)
    sessions = [r for r in records if isinstance(r, LegacySession)]
    assert reader.files_read == len(reader.files) == 22
    assert records[0].kind == "index"  # the index comes first
    assert Counter(s.kind for s in sessions) == {
        "jsonl": 14,
        "snapshot": 3,
        "save": 2,
        "sharegpt": 1,
        "index": 2,
        "export": 2,
    }
    assert all(isinstance(r, (LegacySession, Problem)) for r in records)


def test_files_read_grows_while_iterating(tmp_path):
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text('{"role": "user", "content": "x"}\n')
    reader = read_paths([tmp_path])
    assert reader.files_read == 0
    next(reader)
    assert reader.files_read == 1
    assert len(list(reader)) == 1 and reader.files_read == 2


def test_unreadable_file_is_a_failure_not_an_exception(tmp_path):
    folder = tmp_path / "x.jsonl"
    folder.mkdir()
    [problem] = list(read_file(folder))
    assert (problem.kind, problem.failure) == ("unreadable_file", True)


def test_a_bug_in_a_reader_becomes_a_problem(tmp_path, monkeypatch):
    import hermes_state_tools.importers as importers

    def boom(*args):
        raise KeyError("surprise")

    monkeypatch.setattr(importers, "read_jsonl", boom)
    path = tmp_path / "s.jsonl"
    path.write_text("{}")
    [problem] = list(importers.read_file(path))
    assert (problem.kind, problem.failure, problem.file) == ("reader_error", True, str(path))


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples folder not present")
def test_shared_sample_home(tmp_path):
    home = Path(shutil.copytree(SAMPLES, tmp_path / "home"))
    reader = read_paths([home])
    records = list(reader)
    sessions = {(r.session_id, r.kind): r for r in records if isinstance(r, LegacySession)}
    problems = {(Path(p.file).name, p.line, p.kind, p.failure) for p in records if isinstance(p, Problem)}
    assert reader.files_read == 8
    assert problems == {
        ("20260302_081530_5be07d11.jsonl", 1, "decoded_cp1252", False),
        ("20260310_184211_a1c4e9b2.jsonl", 8, "blank_line", False),
        ("20260310_184211_a1c4e9b2.jsonl", 11, "truncated_line", True),
        ("20260401_090000_deadbeef.jsonl", None, "empty_file", False),
    }
    gateway = sessions[("20260310_184211_a1c4e9b2", "jsonl")]
    assert (gateway.fields["source"], gateway.fields["model"]) == ("telegram", "anthropic/claude-opus-4.6")
    assert len(gateway.messages) == 8
    mirror = [m for m in gateway.messages if m.extra.get("mirror")]
    assert [m.extra["mirror_source"] for m in mirror] == ["cron"]
    assert sessions[("20260310_184211_a1c4e9b2", "index")].fields["user_id"] == "5551234567"
    assert sessions[("20260519_140233_c0ffee12", "index")].fields["source"] == "discord"
    assert (
        sessions[("20260302_081530_5be07d11", "jsonl")].messages[1].content
        == "Got it — we were planning the Lisbon café crawl."
    )
    log = sessions[("20260205_221130_7d2e1a", "sharegpt")]
    assert log.messages[1].tool_calls[0]["id"] == log.messages[2].tool_call_id == "toolu_01AbCdEf"
    assert sessions[("20260401_090000_deadbeef", "jsonl")].messages == ()


_NAMES = ["sessions.json", "s.jsonl", "session_s.json", "hermes_conversation_1.json", "logs_session_x.json"]
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["role", "content", "messages", "conversations", "from", "value", "session_id", "x"]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)
_CONTENT = (
    st.binary(max_size=200)
    | _JSON.map(lambda v: json.dumps(v).encode())
    | st.lists(_JSON.map(json.dumps), max_size=5).map(lambda lines: "\n".join(lines).encode())
    | st.text(alphabet='<>/{}[]":, tool_callresponsethink\n', max_size=200).map(str.encode)
)


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(_NAMES), _CONTENT)
def test_no_input_makes_a_reader_fail(tmp_path_factory, name, data):
    path = tmp_path_factory.mktemp("f") / name.replace("logs_", "")
    path.write_bytes(data)
    records = list(read_file(path))
    assert all(isinstance(r, (LegacySession, Problem)) for r in records)
    assert not [r for r in records if isinstance(r, Problem) and r.kind == "reader_error"]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(_JSON, max_size=8))
def test_random_sharegpt_conversations_never_fail(tmp_path_factory, entries):
    conversations = [e if not isinstance(e, dict) else {"from": "gpt", **e} for e in entries]
    path = tmp_path_factory.mktemp("s") / "session_x.json"
    path.write_text(json.dumps({"conversations": conversations}))
    assert not [r for r in read_file(path) if isinstance(r, Problem) and r.kind == "reader_error"]
