"""`hermes-state export` and the round trip export -> import-jsonl -> export."""

from __future__ import annotations

import json
import tempfile
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from helpers import examples
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from import_helpers import (
    LEGACY,
    LEGACY_HOME,
    cli,
    export_bytes,
    import_json,
    message_extras,
    messages,
    query,
    sessions,
    table_exists,
    write_jsonl,
)
from schema_fixtures import load_fixture

from hermes_state_tools import SessionDB
from hermes_state_tools.core import jsonutil
from hermes_state_tools.ingest import import_paths
from hermes_state_tools.tables import counters
from hermes_state_tools.views import export

DISK = "20260310_184211_a1c4e9b2"
OPS = "20260519_140233_c0ffee12"


@pytest.fixture
def home_db(db_path: Path) -> Path:
    """fixtures/legacy-home imported into a new database."""
    import_json(db_path, LEGACY_HOME)
    return db_path


def stored(db: Path) -> dict[str, Any]:
    """Every session row, its extra data, and its messages as stored (every column but the id, with their
    extra data), in the store's order."""
    extras = {}
    if table_exists(db, "hst_session_extra"):
        extras = {r["session_id"]: json.loads(r["data"]) for r in query(db, "SELECT * FROM hst_session_extra")}
    found = {}
    for session_id, row in sessions(db).items():
        by_id = message_extras(db, session_id)
        rows = query(db, "SELECT * FROM messages WHERE session_id = ? ORDER BY timestamp, id", (session_id,))
        found[session_id] = (row, extras.get(session_id, {}),
                             [({k: v for k, v in m.items() if k != "id"}, by_id.get(m["id"], {})) for m in rows])
    return found


def reimport(tmp_path: Path, exported: bytes, name: str = "copy") -> Path:
    """Import an export into a new, empty database."""
    (tmp_path / f"{name}.jsonl").write_bytes(exported)
    copy = tmp_path / f"{name}.db"
    code, doc = import_json(copy, tmp_path / f"{name}.jsonl")
    assert code == 0 and doc["problems"] == [] and doc["messages_skipped_duplicate"] == 0
    return copy


def lines(exported: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in exported.splitlines()]


def test_round_trip_of_the_legacy_home_is_lossless_and_byte_identical(tmp_path, home_db):
    first = export_bytes(home_db)
    assert [r["session"]["id"] for r in lines(first)] == sorted(
        sessions(home_db), key=lambda s: (sessions(home_db)[s]["started_at"], s))
    copy = reimport(tmp_path, first)
    assert export_bytes(copy) == first
    assert stored(copy) == stored(home_db)
    assert sum(len(rows) for _, _, rows in stored(copy).values()) == 26


def test_the_export_fixture_reads_back_to_every_field(tmp_path, db_path):
    source = LEGACY / "jsonl" / "export.jsonl"
    import_json(db_path, source)
    written = {r["session"]["id"]: r for r in lines(source.read_bytes())}
    counters = ("message_count", "tool_call_count")
    for record in lines(export_bytes(db_path)):
        original, session = written[record["session"]["id"]], record["session"]
        assert {k: session[k] for k in original["session"] if k not in counters} == {
            k: v for k, v in original["session"].items() if k not in counters}
        assert record["extra"] == original["extra"] and record["messages"] == original["messages"]
        calls = sum(len(m["tool_calls"] or ()) for m in record["messages"])
        assert (session["message_count"], session["tool_call_count"]) == (len(record["messages"]), calls)
    assert sessions(db_path)["child"]["parent_session_id"] == "20260401_120000_abcdef"


def test_json_format_is_one_array_of_the_jsonl_records(home_db):
    document = json.loads(export_bytes(home_db, "--format", "json"))
    assert isinstance(document, list) and len(document) == 5
    assert document == lines(export_bytes(home_db))


def test_json_format_of_an_empty_selection_is_an_empty_array(home_db):
    # DISK is a telegram session: asking for it among the cli sessions selects nothing (a source
    # no session has is refused instead: tests/test_cli_reading.py).
    assert json.loads(export_bytes(home_db, "--format", "json", "--session", DISK, "--source", "cli")) == []


def test_markdown_shows_title_source_model_roles_tool_calls_and_results(home_db):
    with SessionDB(home_db) as store:
        store.set_session_title(DISK, "Disk usage ✓")
    text = export_bytes(home_db, "--format", "md", "--session", DISK).decode("utf-8")
    assert text.startswith("# Disk usage ✓\n")
    for expected in ("- source: telegram", "- model: anthropic/claude-opus-4.6", "### user", "### assistant",
                     "### tool · terminal", "Tool call `terminal`", '{"command": "df -h"}',
                     "/dev/nvme0n1p2  457G", "(mirrored from cron)", "Root is at 91% (43G free)."):
        assert expected in text, expected
    assert text.count("### ") == len(messages(home_db, DISK))


def test_session_option_takes_a_unique_prefix(home_db):
    [record] = lines(export_bytes(home_db, "--session", "20260519"))
    assert record["session"]["id"] == OPS and len(record["messages"]) == 6


@pytest.mark.parametrize("session", ["nope", "2026"], ids=["unknown", "ambiguous-prefix"])
def test_an_unknown_or_ambiguous_session_is_a_usage_error_on_one_line(tmp_path, home_db, session):
    out = tmp_path / "out.jsonl"
    result = cli("--db", home_db, "export", "--session", session, "-o", out)
    assert result.exit_code == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and repr(session) in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(("options", "expected"), [
    (["--source", "discord"], [OPS]),
    (["--source", "telegram"], [DISK]),
    (["--source", "telegram", "--session", OPS], []),
    (["--source", "discord", "--session", "20260519_14"], [OPS]),
])
def test_source_option_filters(home_db, options, expected):
    assert [r["session"]["id"] for r in lines(export_bytes(home_db, *options))] == expected


def test_output_file_holds_the_same_bytes_as_stdout(tmp_path, home_db):
    out = tmp_path / "exports" / "all.jsonl"
    out.parent.mkdir()
    assert cli("--db", home_db, "export", "-o", out, "--no-progress").exit_code == 0
    assert out.read_bytes() == export_bytes(home_db)
    assert [p.name for p in out.parent.iterdir()] == ["all.jsonl"]


def test_output_file_is_replaced_only_by_a_complete_export(tmp_path, home_db, monkeypatch):
    out = tmp_path / "all.jsonl"
    out.write_text("the previous export\n")
    written = []

    def fail_on_second(item: export.ExportedSession) -> bytes:
        if written:
            raise OSError(28, "No space left on device")
        written.append(item)
        return b"{}\n"

    monkeypatch.setattr(export, "jsonl_record", fail_on_second)
    result = cli("--db", home_db, "export", "-o", out)
    assert result.exit_code == 74 and len(result.stderr.splitlines()) == 1
    assert out.read_text() == "the previous export\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".all.jsonl")] == []


def test_open_sessions_are_exported_and_stay_open_through_a_round_trip(tmp_path, db_path):
    with SessionDB(db_path) as store:
        store.create_session("live", "cli", model="m")
        store.append_message("live", "user", "still talking")
        store.create_session("done", "cli")
        store.end_session("done", "user_exit")
    exported = export_bytes(db_path)
    assert {r["session"]["id"]: r["session"]["ended_at"] is None for r in lines(exported)} == {"live": True,
                                                                                            "done": False}
    copy = reimport(tmp_path, exported)
    assert stored(copy) == stored(db_path)
    assert (sessions(copy)["live"]["ended_at"], sessions(copy)["done"]["end_reason"]) == (None, "user_exit")


@pytest.mark.parametrize("kind", ["missing", "empty", "not-sqlite", "v7"])
def test_export_refuses_what_is_not_a_usable_database(tmp_path, kind):
    path = tmp_path / "state.db"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "not-sqlite":
        path.write_bytes(b"hello" * 100)
    elif kind == "v7":
        path = load_fixture("trap_version_31", tmp_path)
    before = path.read_bytes() if path.exists() else None
    result = cli("--db", path, "export")
    if kind == "v7":  # a newer schema is read (its v6 columns), with one warning line
        assert result.exit_code == 0 and result.stdout and "warning" in result.stderr
    else:
        assert result.exit_code == 2
        assert result.stdout == "" and len(result.stderr.splitlines()) == 1 and str(path) in result.stderr
    assert (path.read_bytes() if path.exists() else None) == before


# -- hypothesis: random transcripts import, export and import back to the same messages ----------------

KNOWN_KEYS = {"role", "content", "timestamp", "tool_calls", "token_count", "name", "tool_call_id", "tool_name",
              "finish_reason", "reasoning", "reasoning_details", "codex_reasoning_items"}
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)  # control characters, CJK, emoji...
ANY_TEXT = TEXT | st.sampled_from(["你好，世界", "🙂🚀 ok", "Ünïcödé", "a\x00b\x1f\x7f", "line\nbreak\r\n", " "])
INT64 = st.integers(-(2**63), 2**63 - 1)  # wider integers: test_integers_wider_than_64_bits_survive_the_round_trip
JSON = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False, allow_infinity=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=6,
)
PART = st.builds(lambda t: {"type": "text", "text": t}, ANY_TEXT) | st.builds(
    lambda b: {"type": "image_url", "image_url": {"url": "data:image/png;base64," + b}},
    st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", max_size=40))
CONTENT = st.none() | ANY_TEXT | st.lists(PART, max_size=3)
CALL_ID = st.sampled_from(["call_1", "call_2", "toolu_3"]) | st.text("abcdef0123456789_", min_size=1, max_size=8)
CALL = st.builds(
    lambda call_id, name, arguments: {"id": call_id, "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(arguments)}},
    CALL_ID, st.sampled_from(["terminal", "memory", "web_search", "工具"]), st.dictionaries(TEXT, JSON, max_size=2))
EXTRA = st.dictionaries(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).filter(
    lambda k: k not in KNOWN_KEYS) | st.sampled_from(["message_id", "mirror", "mirror_source", "extra_content"]),
    JSON, max_size=2)
TIMESTAMP = st.none() | st.floats(1.6e9, 1.9e9) | st.datetimes(datetime(2020, 1, 1), datetime(2030, 1, 1)).map(
    datetime.isoformat)
DETAILS = st.none() | st.lists(st.dictionaries(st.sampled_from(["type", "text", "id"]), ANY_TEXT, max_size=2),
                               min_size=1, max_size=2)


@st.composite
def transcript_message(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant", "tool", "system"]))
    record: dict[str, Any] = {"role": role, "content": draw(CONTENT)}
    optional: dict[str, Any] = {"timestamp": TIMESTAMP, "token_count": st.none() | st.integers(0, 2**63 - 1)}
    if role == "tool":
        record["tool_call_id"] = draw(CALL_ID)
        optional["tool_name"] = st.none() | st.sampled_from(["terminal", "memory"])
    if role == "assistant":
        optional |= {"tool_calls": st.none() | st.lists(CALL, min_size=1, max_size=3), "reasoning": st.none() | TEXT,
                     "finish_reason": st.none() | st.sampled_from(["stop", "tool_calls", "length"]),
                     "reasoning_details": DETAILS, "codex_reasoning_items": DETAILS}
    for key, strategy in optional.items():
        value = draw(strategy)
        if value is not None:
            record[key] = value
    return {**draw(EXTRA), **record}


def repeats_its_history(records: list[dict[str, Any]]) -> bool:
    """True when a block repeats everything before it: the old re-append bug, which the importer drops."""
    keys = [json.dumps([r["role"], r["content"], r.get("tool_calls"), r.get("tool_call_id")]) for r in records]
    return any(keys[at:2 * at] == keys[:at] for at in range(2, len(keys) // 2 + 1))


def expected_tool_name(record: dict[str, Any], records: list[dict[str, Any]]) -> str | None:
    if record.get("tool_name") or record["role"] != "tool":
        return record.get("tool_name")
    calls = [c for r in records for c in r.get("tool_calls") or () if c["id"] == record["tool_call_id"]]
    return calls[0]["function"]["name"] if calls else None


def as_written(record: dict[str, Any], records: list[dict[str, Any]]) -> tuple[Any, ...]:
    return (record["role"], record["content"], record.get("tool_call_id"), record.get("tool_calls"),
            expected_tool_name(record, records), record.get("token_count"), record.get("finish_reason"),
            record.get("reasoning"), record.get("reasoning_details"), record.get("codex_reasoning_items"),
            {k: v for k, v in record.items() if k not in KNOWN_KEYS})


def as_stored(row: dict[str, Any], extra: dict[str, Any]) -> tuple[Any, ...]:
    decoded = [json.loads(row[k]) if row[k] is not None else None
               for k in ("tool_calls", "reasoning_details", "codex_reasoning_items")]
    content = jsonutil.decode_content(row["content"])
    return (row["role"], content, row["tool_call_id"], decoded[0], row["tool_name"], row["token_count"],
            row["finish_reason"], row["reasoning"], decoded[1], decoded[2], extra)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(transcript_message(), min_size=1, max_size=8),
       meta=st.none() | st.fixed_dictionaries({"model": TEXT, "platform": st.sampled_from(["telegram", "local"])}))
@example(records=[{"role": "user", "content": "\x00json:"}], meta=None)  # the list marker, typed as text
def test_random_transcripts_survive_import_export_import(records, meta):
    assume(not repeats_its_history(records))
    session_id = "20260301_101010_abcdef12"
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        head = [{"role": "session_meta", **meta}] if meta else []
        write_jsonl(tmp / "files" / f"{session_id}.jsonl", head + records)
        first = import_paths(tmp / "first.db", [tmp / "files"])
        assert first.messages_imported == len(records) and not first.failed
        rows = stored(tmp / "first.db")[session_id][2]
        assert [as_stored(row, extra) for row, extra in rows] == [as_written(r, records) for r in records]
        times = [row["timestamp"] for row, _ in rows]
        assert all(b > a for a, b in pairwise(times))

        exported = export_bytes(tmp / "first.db")
        copy = reimport(tmp, exported)
        assert stored(copy) == stored(tmp / "first.db")
        assert export_bytes(copy) == exported


WIDE = {"below": -(2**63) - 1, "above": 2**64, "huge": 123456789012345678901234567890}


def test_integers_wider_than_64_bits_are_imported_exactly(tmp_path, db_path):
    write_jsonl(tmp_path / "wide.jsonl", [{"role": "user", "content": "hi", **WIDE}])
    import_paths(db_path, [tmp_path / "wide.jsonl"])
    [(_, extra)] = stored(db_path)["wide"][2]
    assert extra == WIDE and all(type(v) is int for v in extra.values())


def test_integers_wider_than_64_bits_survive_the_round_trip(tmp_path, db_path):
    write_jsonl(tmp_path / "wide.jsonl", [{"role": "user", "content": "hi", **WIDE}])
    import_paths(db_path, [tmp_path / "wide.jsonl"])
    [record] = lines(export_bytes(db_path))
    assert record["messages"][0]["extra"] == WIDE


# Stored text that only looks like what the store encodes: each must come back as the same text.
LOOKALIKES = [
    ("content", "\x00json:"),  # the list marker and nothing after it (found by hypothesis)
    ("content", "\x00json:[1,2]"),  # a list, but spelled otherwise than the store spells one
    ("content", '\x00json:"a string"'),
    ("content", "\x00json:[1, 2]"),  # spelled as the store spells it: exported as a list
    ("tool_calls", '[{"id":"c1"}]'),
    ("tool_calls", "null"),
    ("reasoning_details", '"just text"'),
    ("codex_reasoning_items", "not json at all"),
    ("content", '\x00json:{"a": 1}'),  # an object, which the import takes only as a string
    ("tool_calls", '{"a": 1}'),
    ("tool_calls", '[{"a": NaN}]'),  # orjson would write null for NaN
    ("reasoning_details", '{"a": 1}'),  # an object this column does take: exported decoded
]


@pytest.mark.parametrize(("column", "text"), LOOKALIKES)
def test_stored_text_that_looks_encoded_survives_the_round_trip(tmp_path, column, text):
    db = tmp_path / "state.db"
    with SessionDB(db) as store:
        store.create_session("s1", "cli")
        store.append_message("s1", "assistant", "placeholder")
        store._conn.execute(f"UPDATE messages SET {column} = ?", (text,))  # as another writer left it
        counters.recount(store._conn, ["s1"])  # that writer kept its counters true
    exported = export_bytes(db)
    copy = reimport(tmp_path, exported)
    assert stored(copy) == stored(db)
    assert export_bytes(copy) == exported
    written = lines(exported)[0]["messages"][0][column]
    decoded = {"\x00json:[1, 2]": [1, 2], '{"a": 1}': {"a": 1} if column == "reasoning_details" else text}
    assert written == decoded.get(text, text)
    again = import_json(db, tmp_path / "copy.jsonl")[1]  # the export read back into its own source
    assert (again["messages_imported"], again["messages_skipped_duplicate"]) == (0, 1)
