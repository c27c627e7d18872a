"""Session rows: lifecycle, token and cost accounting, lookup by id or prefix, counts."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest
from helpers import session_with_messages


def test_create_session_returns_id_and_stores_fields(db):
    before = time.time()
    assert db.create_session(session_id="s1", source="cli", model="test-model") == "s1"
    row = db.get_session("s1")
    assert row["source"] == "cli"
    assert row["model"] == "test-model"
    assert row["ended_at"] is None and row["end_reason"] is None
    assert isinstance(row["started_at"], float)
    assert before <= row["started_at"] <= time.time()
    assert row["message_count"] == 0 and row["tool_call_count"] == 0


def test_create_session_positional_arguments_in_documented_order(db):
    db.create_session("parent", "cli")
    db.create_session("s1", "telegram", "m", {"temperature": 0.5, "name": "héllo"}, "be brief", "u42", "parent")
    row = db.get_session("s1")
    assert (row["source"], row["model"], row["system_prompt"], row["user_id"], row["parent_session_id"]) == (
        "telegram", "m", "be brief", "u42", "parent")
    assert json.loads(row["model_config"]) == {"temperature": 0.5, "name": "héllo"}


def test_get_session_returns_every_column(db):
    db.create_session("s1", "cli")
    row = db.get_session("s1")
    for column in ("title", "billing_provider", "cache_read_tokens", "pricing_version", "model_config"):
        assert column in row


def test_get_unknown_session_is_none(db):
    assert db.get_session("nonexistent") is None


def test_create_existing_id_keeps_the_first_write(db):
    db.create_session("dup", "cli", model="first")
    db.create_session("dup", "gateway", model="second")
    row = db.get_session("dup")
    assert (row["source"], row["model"]) == ("cli", "first")
    assert db.session_count() == 1


def test_parent_session_is_recorded(db):
    db.create_session("parent", "cli")
    db.create_session("child", "cli", parent_session_id="parent")
    assert db.get_session("child")["parent_session_id"] == "parent"


def test_unknown_parent_is_an_error_and_creates_nothing(db):
    with pytest.raises(sqlite3.IntegrityError):
        db.create_session("child", "cli", parent_session_id="missing")
    assert db.get_session("child") is None


def test_ensure_session_creates_missing_row(db):
    db.ensure_session("orphan", source="gateway", model="test-model")
    row = db.get_session("orphan")
    assert (row["source"], row["model"]) == ("gateway", "test-model")


def test_ensure_session_defaults_source_to_unknown(db):
    db.ensure_session("orphan")
    assert db.get_session("orphan")["source"] == "unknown"


def test_ensure_session_never_overwrites(db):
    db.create_session("s1", "cli", model="original-model")
    db.ensure_session("s1", source="gateway", model="other-model")
    row = db.get_session("s1")
    assert (row["source"], row["model"]) == ("cli", "original-model")


def test_ensure_session_then_append_works(db):
    db.ensure_session("late", source="gateway")
    db.append_message(session_id="late", role="user", content="hello after lock")
    assert [m["content"] for m in db.get_messages("late")] == ["hello after lock"]


def test_end_session_sets_time_and_reason(db):
    db.create_session("s1", "cli")
    db.end_session("s1", end_reason="user_exit")
    row = db.get_session("s1")
    assert isinstance(row["ended_at"], float)
    assert row["ended_at"] >= row["started_at"]
    assert row["end_reason"] == "user_exit"


def test_first_end_wins(db):
    db.create_session("s1", "cli")
    db.end_session("s1", "compression")
    first = db.get_session("s1")["ended_at"]
    time.sleep(0.01)
    db.end_session("s1", "resumed_other")
    row = db.get_session("s1")
    assert row["end_reason"] == "compression"
    assert row["ended_at"] == first


def test_reopen_clears_end_and_allows_a_new_end(db):
    db.create_session("s1", "cli")
    db.end_session("s1", "compression")
    db.reopen_session("s1")
    row = db.get_session("s1")
    assert row["ended_at"] is None and row["end_reason"] is None
    db.end_session("s1", "user_exit")
    assert db.get_session("s1")["end_reason"] == "user_exit"


def test_update_system_prompt(db):
    db.create_session("s1", "cli", system_prompt="old")
    db.update_system_prompt("s1", "You are a helpful assistant.")
    assert db.get_session("s1")["system_prompt"] == "You are a helpful assistant."


def test_token_counts_add_up_by_default(db):
    db.create_session("s1", "cli")
    db.update_token_counts("s1", input_tokens=200, output_tokens=100, cache_read_tokens=5,
                           cache_write_tokens=6, reasoning_tokens=7)
    db.update_token_counts("s1", input_tokens=100, output_tokens=50, cache_read_tokens=1,
                           cache_write_tokens=2, reasoning_tokens=3)
    row = db.get_session("s1")
    assert (row["input_tokens"], row["output_tokens"]) == (300, 150)
    assert (row["cache_read_tokens"], row["cache_write_tokens"], row["reasoning_tokens"]) == (6, 8, 10)


def test_token_counts_positional_order(db):
    db.create_session("s1", "cli")
    db.update_token_counts("s1", 10, 20, "gpt", 1, 2, 3, 0.5, 0.25, "estimated", "table", "v1",
                           "openrouter", "https://x", "api")
    row = db.get_session("s1")
    assert [row[k] for k in ("input_tokens", "output_tokens", "model", "cache_read_tokens", "cache_write_tokens",
                             "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd", "cost_status",
                             "cost_source", "pricing_version", "billing_provider", "billing_base_url",
                             "billing_mode")] == [10, 20, "gpt", 1, 2, 3, 0.5, 0.25, "estimated", "table", "v1",
                                                  "openrouter", "https://x", "api"]


def test_absolute_token_counts_replace(db):
    db.create_session("s1", "cli")
    db.update_token_counts("s1", input_tokens=500, output_tokens=400, reasoning_tokens=9, estimated_cost_usd=2.0)
    db.update_token_counts("s1", input_tokens=7, output_tokens=8, estimated_cost_usd=0.5, absolute=True)
    row = db.get_session("s1")
    assert (row["input_tokens"], row["output_tokens"], row["reasoning_tokens"]) == (7, 8, 0)
    assert row["estimated_cost_usd"] == pytest.approx(0.5)


def test_estimated_cost_sums_and_is_never_null_after_an_update(db):
    db.create_session("s1", "cli")
    assert db.get_session("s1")["estimated_cost_usd"] is None
    db.update_token_counts("s1", input_tokens=1)
    assert db.get_session("s1")["estimated_cost_usd"] == 0.0
    db.update_token_counts("s1", estimated_cost_usd=0.25)
    db.update_token_counts("s1", estimated_cost_usd=0.5)
    assert db.get_session("s1")["estimated_cost_usd"] == pytest.approx(0.75)
    db.update_token_counts("s1", absolute=True)
    assert db.get_session("s1")["estimated_cost_usd"] == 0.0


def test_actual_cost_moves_only_when_given(db):
    db.create_session("s1", "cli")
    db.update_token_counts("s1", input_tokens=1)
    assert db.get_session("s1")["actual_cost_usd"] is None
    db.update_token_counts("s1", actual_cost_usd=1.5)
    db.update_token_counts("s1", actual_cost_usd=0.5)
    db.update_token_counts("s1", input_tokens=1)
    assert db.get_session("s1")["actual_cost_usd"] == pytest.approx(2.0)
    db.update_token_counts("s1", absolute=True)
    assert db.get_session("s1")["actual_cost_usd"] == pytest.approx(2.0)
    db.update_token_counts("s1", actual_cost_usd=0.1, absolute=True)
    assert db.get_session("s1")["actual_cost_usd"] == pytest.approx(0.1)


def test_model_is_backfilled_only_while_null(db):
    db.create_session("none", "cli")
    db.create_session("set", "cli", model="anthropic/claude-opus-4.6")
    for session_id in ("none", "set"):
        db.update_token_counts(session_id, input_tokens=1, model="openai/gpt-5.4")
    assert db.get_session("none")["model"] == "openai/gpt-5.4"
    assert db.get_session("set")["model"] == "anthropic/claude-opus-4.6"


def test_billing_identity_first_value_wins(db):
    db.create_session("s1", "cli")
    db.update_token_counts("s1", billing_provider="openrouter", billing_base_url="https://a", billing_mode="api")
    db.update_token_counts("s1", billing_provider="anthropic", billing_base_url="https://b", billing_mode="sub")
    row = db.get_session("s1")
    assert (row["billing_provider"], row["billing_base_url"], row["billing_mode"]) == (
        "openrouter", "https://a", "api")


def test_cost_status_source_and_pricing_latest_value_wins(db):
    db.create_session("s1", "cli")
    db.update_token_counts("s1", cost_status="estimated", cost_source="table", pricing_version="v1")
    db.update_token_counts("s1", cost_status="final", cost_source="provider", pricing_version="v2")
    db.update_token_counts("s1", input_tokens=1)
    row = db.get_session("s1")
    assert (row["cost_status"], row["cost_source"], row["pricing_version"]) == ("final", "provider", "v2")


def test_token_update_for_unknown_session_is_silent(db):
    db.update_token_counts("missing", input_tokens=5)
    assert db.get_session("missing") is None


@pytest.mark.parametrize(
    ("ids", "query", "expected"),
    [
        (["20260315_092437_c9a6ff"], "20260315_092437_c9a6ff", "20260315_092437_c9a6ff"),
        (["20260315_092437_c9a6ff"], "20260315_092437_c9a6", "20260315_092437_c9a6ff"),
        (["20260315_092437_c9a6aa", "20260315_092437_c9a6bb"], "20260315_092437_c9a6", None),
        (["20260315_092437_c9a6ff", "20260315X092437_c9a6ff"], "20260315_092437", "20260315_092437_c9a6ff"),
        (["100%_a", "100XYa"], "100%", "100%_a"),
        (["abc"], "abd", None),
        (["abc", "abcd"], "abc", "abc"),
    ],
    ids=["exact", "unique-prefix", "ambiguous", "underscore-literal", "percent-literal", "no-match",
         "exact-beats-prefix"],
)
def test_resolve_session_id(db, ids, query, expected):
    for session_id in ids:
        db.create_session(session_id, "cli")
    assert db.resolve_session_id(query) == expected


def test_search_sessions_filters_pages_and_orders_newest_first(db):
    for i in range(5):
        db.create_session(f"s{i}", "telegram" if i == 2 else "cli")
        time.sleep(0.002)
    assert [s["id"] for s in db.search_sessions()] == ["s4", "s3", "s2", "s1", "s0"]
    assert [s["id"] for s in db.search_sessions(source="telegram")] == ["s2"]
    first, second = db.search_sessions(limit=2), db.search_sessions(limit=2, offset=2)
    assert [s["id"] for s in first] == ["s4", "s3"]
    assert [s["id"] for s in second] == ["s2", "s1"]


def test_search_sessions_includes_children_and_titles(db):
    db.create_session("parent", "cli")
    db.create_session("child", "cli", parent_session_id="parent")
    db.set_session_title("parent", "Debugging Auth")
    rows = {s["id"]: s for s in db.search_sessions()}
    assert set(rows) == {"parent", "child"}
    assert rows["parent"]["title"] == "Debugging Auth"


def test_session_count(db):
    assert db.session_count() == 0
    db.create_session("a", "cli")
    db.create_session("b", "cli")
    db.create_session("c", "telegram")
    assert db.session_count() == 3
    assert db.session_count(source="cli") == 2
    assert db.session_count(source="telegram") == 1
    assert db.session_count(source="discord") == 0


def test_message_count_total_and_per_session(db):
    assert db.message_count() == 0
    session_with_messages(db, "s1", "one")
    session_with_messages(db, "s2", "two", "three")
    assert db.message_count() == 3
    assert db.message_count(session_id="s1") == 1
    assert db.message_count(session_id="s2") == 2
    assert db.message_count(session_id="missing") == 0
