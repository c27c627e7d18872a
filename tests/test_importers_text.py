from __future__ import annotations

import json

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_state_tools.core.records import Problem
from hermes_state_tools.importers.text import JsonLine, decode, iter_json_lines, parse_json, read_document


def read(tmp_path, data: bytes) -> list:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    return list(iter_json_lines(path, "t.jsonl"))


def test_crlf_bom_and_blank_lines(tmp_path):
    items = read(tmp_path, b'\xef\xbb\xbf{"a": 1}\r\n\r\n  \n{"b": 2}\r\n')
    assert items == [
        JsonLine(1, {"a": 1}),
        Problem("t.jsonl", 2, "blank_line", "blank line skipped"),
        Problem("t.jsonl", 3, "blank_line", "blank line skipped"),
        JsonLine(4, {"b": 2}),
    ]


def test_cp1252_lines_are_decoded_and_reported_once(tmp_path):
    data = '{"c": "café"}\n{"c": "ok"}\n{"c": "naïve — 5€"}\n'.encode("cp1252")
    items = read(tmp_path, data)
    values = [i.value for i in items if isinstance(i, JsonLine)]
    assert values == [{"c": "café"}, {"c": "ok"}, {"c": "naïve — 5€"}]
    [problem] = [i for i in items if isinstance(i, Problem)]
    assert (problem.kind, problem.line, problem.failure) == ("decoded_cp1252", 1, False)
    assert "2 lines were not UTF-8" in problem.detail and "lines 1, 3" in problem.detail


def test_bytes_undefined_in_cp1252_fall_back_to_latin1():
    assert decode(b"\x81\x8d") == ("\x81\x8d", "latin-1")


def test_bad_middle_line_is_invalid_and_bad_last_line_is_truncated(tmp_path):
    items = read(tmp_path, b'{"a": 1}\n{"a": \n{"a": 2}\n{"a": 3')
    kinds = [(i.line, i.kind, i.failure) for i in items if isinstance(i, Problem)]
    assert kinds == [(2, "invalid_json", True), (4, "truncated_line", True)]
    assert [i.number for i in items if isinstance(i, JsonLine)] == [1, 3]


def test_truncated_line_followed_only_by_blank_lines_is_still_the_last(tmp_path):
    items = read(tmp_path, b'{"a": 1}\n{"a"\n\n')
    problems = [(i.line, i.kind) for i in items if isinstance(i, Problem)]
    assert problems == [(2, "truncated_line"), (3, "blank_line")]


def test_non_objects_and_python_json_extras_still_parse(tmp_path):
    items = read(tmp_path, b'[1]\n"s"\n{"cost": NaN}\n{"s": "\\ud800"}\n')
    values = [i.value for i in items if isinstance(i, JsonLine)]
    assert [(p.line, p.kind) for p in items if isinstance(p, Problem)] == [(4, "lone_surrogate")]
    assert values[:2] == [[1], "s"]
    assert values[2]["cost"] != values[2]["cost"]  # NaN
    assert values[3] == {"s": "\ud800"}


def test_multi_megabyte_line(tmp_path):
    big = "x" * (8 * 1024 * 1024)
    items = read(tmp_path, json.dumps({"role": "tool", "content": big}).encode() + b"\n")
    assert items == [JsonLine(1, {"role": "tool", "content": big})]


def test_parse_json_reports_the_codec():
    assert parse_json('{"a": "é"}'.encode()) == ({"a": "é"}, "utf-8")
    assert parse_json('{"a": "é"}'.encode("cp1252")) == ({"a": "é"}, "cp1252")


@pytest.mark.parametrize(
    ("data", "state", "kinds"),
    [
        (b"", "empty", ["empty_file"]),
        (b'\xef\xbb\xbf{"a": 1}', "ok", []),
        ('{"a": "é"}'.encode("cp1252"), "ok", ["decoded_cp1252"]),
        (b'{"a": ', "invalid", ["invalid_json"]),
    ],
)
def test_read_document(tmp_path, data, state, kinds):
    path = tmp_path / "session_x.json"
    path.write_bytes(data)
    document = read_document(path, "f")
    assert document.state == state
    assert [p.kind for p in document.problems] == kinds


@settings(max_examples=examples(200))
@given(st.lists(st.binary(max_size=80), max_size=12))
def test_garbage_lines_never_raise(tmp_path_factory, chunks):
    path = tmp_path_factory.mktemp("g") / "g.jsonl"
    path.write_bytes(b"\n".join(chunks))
    for item in iter_json_lines(path, "g"):
        assert isinstance(item, (JsonLine, Problem))


def test_raw_control_characters_inside_strings_are_accepted(tmp_path):
    assert read(tmp_path, b'{"c": "a\tb\rc"}\n') == [JsonLine(1, {"c": "a\tb\rc"})]


@pytest.mark.parametrize("end", [b"", b"\r"])
def test_old_mac_line_ends_are_line_ends(tmp_path, end):
    # A CR alone ended every line of a file saved by an old Mac editor: it was one truncated line.
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role": "user", "content": "a"}\r{"role": "assistant", "content": "b"}' + end)
    items = list(iter_json_lines(path, "s.jsonl"))
    assert [(i.number, i.value["content"]) for i in items if isinstance(i, JsonLine)] == [(1, "a"), (2, "b")]
    assert [i for i in items if isinstance(i, Problem)] == []



def test_a_raw_cr_inside_a_string_of_a_one_line_file_is_no_line_end(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role": "user", "content": "progress 10%\r progress 100%"}')
    items = list(iter_json_lines(path, "s.jsonl"))
    assert [i.value["content"] for i in items if isinstance(i, JsonLine)] == ["progress 10%\r progress 100%"]
