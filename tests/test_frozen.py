"""core/frozen.py:built makes the frozen records of the import's hot path without their __init__:
each must equal, hash and refuse changes as the class's own construction does."""

from __future__ import annotations

import dataclasses

import pytest

from hermes_state_tools.core.frozen import built
from hermes_state_tools.core.records import LegacySession
from hermes_state_tools.importers.jsonl import PlainTranscript
from hermes_state_tools.ingest.planning.prepared import Prepared, StagedRows
from hermes_state_tools.ingest.planning.units import Unit

SESSION = {"session_id": "s1", "file": "s1.jsonl", "kind": "jsonl", "fields": {"source": "cli"}, "source_rank": 2,
           "messages": (), "extra": {"k": 1}, "has_messages": True, "duplicates_skipped": 0, "saved_at": None}
CASES = [
    (LegacySession, SESSION),
    (PlainTranscript, {"session": LegacySession(**SESSION), "rows": (("s1", "user", "hi", None, None, None, 1.0),),
                       "tool_calls": 0, "mtime": 5.0}),
    (Prepared, {"session_id": "s1", "create": True, "row": {"id": "s1"}, "session_extra": {}, "rows": StagedRows(1, 2),
                "message_extras": (), "tool_calls": 0, "duplicates": 0, "fingerprint": None, "retimed": (),
                "unit": Unit("s1", [], ("s1.jsonl",), 0.0), "problems": (), "enrich": (), "foreign_ids": (),
                "staged_session": 1}),
]


@pytest.mark.parametrize(("cls", "values"), CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_built_is_the_class_own_instance(cls, values):
    assert {f.name for f in dataclasses.fields(cls)} == set(values)  # every field given, as built asks
    assert not hasattr(cls, "__post_init__")  # nothing built would skip
    quick, made = built(cls, **values), cls(**values)
    assert type(quick) is cls and quick == made and vars(quick) == vars(made)
    assert dataclasses.replace(quick, **{next(iter(values)): values[next(iter(values))]}) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.__setattr__(next(iter(values)), None)
