from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from hermes_state_tools.core.records import SOURCE_FROM_INDEX, LegacySession, Problem
from hermes_state_tools.importers.index import read_index

LEGACY = Path(__file__).resolve().parent.parent / "fixtures" / "legacy"
UTC = timezone.utc


def read(path: Path) -> tuple[list[LegacySession], list[Problem]]:
    records = list(read_index(path, "sessions.json", tz=UTC))
    return [r for r in records if isinstance(r, LegacySession)], [
        r for r in records if isinstance(r, Problem)
    ]


def test_index_with_bom_and_readme():
    sessions, problems = read(LEGACY / "index" / "sessions.json")
    dm, local = sessions
    assert (dm.session_id, dm.kind, dm.has_messages, dm.messages) == ("meta_tools", "index", False, ())
    assert dm.source_rank == SOURCE_FROM_INDEX
    assert dm.fields == {
        "source": "telegram",
        "user_id": "5551234567",
        "started_at": datetime(2026, 3, 10, 18, 42, 11, tzinfo=UTC).timestamp(),
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_read_tokens": 3,
        "cache_write_tokens": 4,
        "estimated_cost_usd": 0.5,
        "cost_status": "estimated",
    }
    assert dm.extra == {
        "session_key": "agent:main:telegram:dm:1",
        "updated_at": "2026-03-10T19:03:57",
        "display_name": "Dana",
        "chat_type": "dm",
        "total_tokens": 120,
        "memory_flushed": False,
        "origin": {"platform": "telegram", "chat_id": "1", "user_id": 5551234567, "user_name": "dana"},
    }
    assert local.fields == {"source": "cli", "started_at": 1775034000.0}
    assert local.extra == {
        "session_key": "agent:main:local",
        "input_tokens": "12",
        "origin": {"user_id": None},
    }
    assert [(p.kind, p.failure) for p in problems] == [
        ("wrong_type", False),
        ("skipped_entry", False),
        ("missing_session_id", True),
    ]
    assert "agent:main:noid" in problems[2].detail


def test_truncated_index_keeps_every_complete_entry():
    sessions, problems = read(LEGACY / "index_truncated" / "sessions.json")
    assert [s.session_id for s in sessions] == ["meta_tools"]
    [problem] = problems
    assert (problem.file, problem.line, problem.kind, problem.failure) == (
        "sessions.json",
        None,
        "truncated_index",
        True,
    )
    assert "2 complete entries" in problem.detail  # the _README and the DM


@pytest.mark.parametrize(
    ("data", "kinds"),
    [
        (b"", [("empty_file", False)]),
        (b"[]", [("not_object", True)]),
        (b"garbage", [("truncated_index", True)]),
        (b'{"a": {"session_id": "s"}, "b": {"session_id": ', [("truncated_index", True)]),
    ],
)
def test_bad_indexes(tmp_path, data, kinds):
    path = tmp_path / "sessions.json"
    path.write_bytes(data)
    sessions, problems = read(path)
    assert [(p.kind, p.failure) for p in problems] == kinds
    assert [s.session_id for s in sessions] == (["s"] if b'"a"' in data else [])
