"""A local row as the archive holds it (real columns and `extra`) and back, for any SQLite value."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hermes_state_tools.archive import rows
from hermes_state_tools.archive.schema import SESSION_COLUMNS

SQLITE_VALUES = st.one_of(
    st.none(), st.text(), st.binary(max_size=20), st.floats(allow_nan=False),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
NAMES = (*(c.name for c in SESSION_COLUMNS), "cwd", "git_branch")


def _through_the_archive(values: list[Any]) -> dict[str, Any]:
    shape = rows.session_shape(NAMES)
    real, extra = shape.split(values)
    stored = json.loads(extra) if extra else None  # what jsonb gives back
    assert extra is None or "\\u0000" not in extra  # jsonb refuses it
    return rows.local_row(NAMES, dict(zip((c.name for c in SESSION_COLUMNS), real, strict=True)), stored)


@given(st.lists(SQLITE_VALUES, min_size=len(NAMES), max_size=len(NAMES)))
def test_every_value_of_every_column_comes_back(values: list[Any]) -> None:
    back = _through_the_archive(values)
    for name, value in zip(NAMES, values, strict=True):
        assert type(back[name]) is type(value) and back[name] == value, name


def test_infinities_and_nan_come_back() -> None:
    values: list[Any] = [None] * len(NAMES)
    at = NAMES.index("cwd")
    for special in (math.inf, -math.inf):
        values[at] = special
        assert _through_the_archive(values)["cwd"] == special
    values[at] = math.nan
    assert math.isnan(_through_the_archive(values)["cwd"])


def test_a_text_column_shows_multimodal_content_as_its_text() -> None:
    shape = rows.message_shape(("id", "session_id", "role", "content"))
    real, extra = shape.split((1, "s", "user", '\x00json:[{"type": "text", "text": "hello"}]'))
    assert real[2] == "hello" and extra is not None and "text_nul_split" in extra


def test_the_hash_changes_with_a_value_and_with_the_layout() -> None:
    base = rows.row_hash(("a", "b"), (1, "x"), None)
    assert base == rows.row_hash(("a", "b"), (1, "x"), None)
    assert base != rows.row_hash(("a", "b"), (2, "x"), None)
    assert base != rows.row_hash(("a", "c"), (1, "x"), None)
    assert base != rows.row_hash(("a", "b"), (1, "x"), '{"mirror": true}')
