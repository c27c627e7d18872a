"""JSON as the store spells it (the encoder made once spells every parsed value as json.dumps does), and
as reports print it."""

from __future__ import annotations

import json
import os
from typing import Any

import orjson
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.surrogates import printable

_SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
            | st.text())
JSON_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
                           max_leaves=40)


def test_the_fast_encoder_is_in_use() -> None:
    # Without it the property below compares json.dumps with itself.
    assert jsonutil.dumps_parsed is not jsonutil.dumps


@settings(max_examples=examples(400), deadline=None)
@given(JSON_VALUES)
def test_a_parsed_value_is_spelled_as_json_dumps_spells_it(value: Any) -> None:
    assert jsonutil.dumps_parsed(value) == json.dumps(value)


@settings(max_examples=examples(200), deadline=None)
@given(JSON_VALUES.filter(lambda v: not isinstance(v, float)))
def test_a_value_orjson_read_back_is_spelled_alike(value: Any) -> None:
    try:
        parsed = orjson.loads(json.dumps(value))
    except orjson.JSONDecodeError:  # NaN, Infinity, lone surrogates, integers past 64 bits
        return
    assert jsonutil.dumps_parsed(parsed) == json.dumps(parsed)


def test_the_encoder_can_be_used_again_after_a_value_it_refuses() -> None:
    try:
        jsonutil.dumps_parsed([1, {2, 3}])
    except TypeError as exc:
        assert "set" in str(exc)
    else:
        raise AssertionError("a set is no JSON value")
    assert jsonutil.dumps_parsed([[1], [1]]) == "[[1], [1]]"  # no leftover of the failed call


def test_a_report_spells_undecodable_bytes_and_lone_surrogates_printably() -> None:
    name = os.fsdecode(b"caf\xe9.jsonl")  # Latin-1 bytes in a UTF-8 file system: a lone surrogate
    document = {"file": name, "nested": [{"cut": "emoji \ud83d"}], name: 1, "fine": "caf\u00e9"}
    shown = printable(document)
    assert shown == {"file": "caf\\xe9.jsonl", "nested": [{"cut": "emoji \\ud83d"}], "caf\\xe9.jsonl": 1,
                     "fine": "caf\u00e9"}
    assert orjson.loads(orjson.dumps(shown)) == shown
    assert printable("plain") == "plain" and printable(3) == 3


@settings(max_examples=examples(400), deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: abs(f) >= 2.0**63),
       st.sampled_from(["tool_calls", "content"]))
def test_a_wide_float_is_always_spelled_with_an_exponent(big: float, where: str) -> None:
    # The plain reader (importers/jsonl.py:_plain_row) walks a message's JSON values for such a float
    # only when their text holds "e+": this is what makes skipping the walk safe.
    value = [{"id": "c", "function": {"n": [big]}}] if where == "tool_calls" else [{"type": "text", "score": big}]
    assert "e+" in jsonutil.dumps_parsed(value)
    assert "e+" in jsonutil.encode_content(value)
