"""The rich session list (preview, last activity, filters), compression tips and lineage walks."""

from __future__ import annotations

import time

import pytest
from helpers import session_with_messages, set_times

from hermes_state_tools.tables import lineage

T0 = time.time() - 3600


def add_session(db, session_id, *, started_at, parent=None, ended_at=None, end_reason=None, message=None,
                source="cli"):
    db.create_session(session_id, source, parent_session_id=parent)
    if message is not None:
        db.append_message(session_id, "user", message)
    set_times(db, session_id, started_at=started_at, ended_at=ended_at, end_reason=end_reason)


@pytest.fixture
def chain(db):
    """root1 -(compression)-> mid1 -(compression)-> tip1, plus delegate1: a sub-agent of root1."""
    add_session(db, "root1", started_at=T0, ended_at=T0 + 1800, end_reason="compression",
                message="help me refactor auth")
    add_session(db, "delegate1", parent="root1", started_at=T0 + 600, ended_at=T0 + 650, end_reason="done",
                message="delegate task")
    add_session(db, "mid1", parent="root1", started_at=T0 + 1801, ended_at=T0 + 3600, end_reason="compression",
                message="continuing")
    add_session(db, "tip1", parent="mid1", started_at=T0 + 3601, message="latest message")
    return db


def rich_ids(db, **kwargs):
    return [row["id"] for row in db.list_sessions_rich(**kwargs)]


# -- preview and last_active ---------------------------------------------------------

def test_preview_is_the_first_user_message(db):
    db.create_session("s1", "cli")
    db.append_message("s1", "system", "You are helpful")
    db.append_message("s1", "assistant", "Greetings")
    db.append_message("s1", "user", "Help me refactor the auth module please")
    db.append_message("s1", "user", "second user message")
    [row] = db.list_sessions_rich()
    assert row["preview"] == "Help me refactor the auth module please"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("A" * 100, "A" * 60 + "..."),
        ("B" * 60, "B" * 60),
        ("B" * 61, "B" * 60 + "..."),
        ("Line one\nLine two\r\nLine three", "Line one Line two Line three"),
        ("  padded  ", "padded"),
    ],
    ids=["long", "exactly-60", "61", "newlines", "stripped"],
)
def test_preview_shaping(db, content, expected):
    session_with_messages(db, "s1", content)
    assert db.list_sessions_rich()[0]["preview"] == expected


def test_preview_empty_without_user_messages(db):
    session_with_messages(db, "s1", "system prompt text", role="system")
    session_with_messages(db, "s2")
    assert [row["preview"] for row in db.list_sessions_rich()] == ["", ""]


def test_preview_of_multimodal_first_message_is_its_text(db):
    db.create_session("s1", "cli")
    db.append_message("s1", "user", [{"type": "text", "text": "look at this"},
                                     {"type": "image_url", "image_url": {"url": "data:x"}}])
    assert db.list_sessions_rich()[0]["preview"].startswith("look at this")


def test_last_active_is_latest_message_else_started_at(db):
    add_session(db, "busy", started_at=T0, message="hi")
    add_session(db, "idle", started_at=T0 + 5)
    rows = {row["id"]: row for row in db.list_sessions_rich()}
    latest = max(m["timestamp"] for m in db.get_messages("busy"))
    assert rows["busy"]["last_active"] == latest > rows["busy"]["started_at"]
    assert rows["idle"]["last_active"] == rows["idle"]["started_at"]


def test_rich_rows_carry_session_columns_and_title(db):
    db.create_session("s1", "cli", model="m1")
    db.set_session_title("s1", "My Title")
    [row] = db.list_sessions_rich()
    assert (row["title"], row["model"], row["source"]) == ("My Title", "m1", "cli")
    assert {"preview", "last_active", "started_at", "message_count"} <= set(row)


# -- selection and order -----------------------------------------------------------

@pytest.fixture
def platforms(db):
    for i, (sid, source) in enumerate((("s1", "cli"), ("s2", "tool"), ("s3", "telegram"), ("s4", "cron"))):
        add_session(db, sid, started_at=T0 + i, source=source)
    return db


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ["s4", "s3", "s2", "s1"]),
        ({"source": "cli"}, ["s1"]),
        ({"exclude_sources": ["tool"]}, ["s4", "s3", "s1"]),
        ({"exclude_sources": ["tool", "cron"]}, ["s3", "s1"]),
        ({"source": "tool", "exclude_sources": ["cron"]}, ["s2"]),
        ({"exclude_sources": []}, ["s4", "s3", "s2", "s1"]),
        ({"limit": 2}, ["s4", "s3"]),
        ({"limit": 2, "offset": 2}, ["s2", "s1"]),
    ],
)
def test_filters_order_and_paging(platforms, kwargs, expected):
    assert rich_ids(platforms, **kwargs) == expected


def test_positional_arguments_in_documented_order(platforms):
    assert [row["id"] for row in platforms.list_sessions_rich(None, ["cron"], 2, 1, False, True)] == ["s2", "s1"]


def test_children_hidden_unless_asked(db):
    add_session(db, "parent", started_at=T0)
    add_session(db, "child", parent="parent", started_at=T0 + 10)
    assert rich_ids(db) == ["parent"]
    assert rich_ids(db, include_children=True) == ["child", "parent"]


# -- compression tips --------------------------------------------------------------

@pytest.mark.parametrize("start", ["root1", "mid1", "tip1"])
def test_compression_tip_walks_the_whole_chain(chain, start):
    assert chain.get_compression_tip(start) == "tip1"


def test_compression_tip_skips_sub_agents_started_before_the_end(chain):
    assert chain.get_compression_tip("root1") != "delegate1"
    chain.reopen_session("mid1")
    assert chain.get_compression_tip("root1") == "mid1"


@pytest.mark.parametrize("session_id", ["solo", "missing"])
def test_compression_tip_of_uncompressed_or_unknown_is_itself(db, session_id):
    add_session(db, "solo", started_at=T0, ended_at=T0 + 5, end_reason="user_exit")
    assert db.get_compression_tip(session_id) == session_id


def test_compression_tip_prefers_the_latest_continuation(db):
    add_session(db, "root", started_at=T0, ended_at=T0 + 100, end_reason="compression")
    add_session(db, "early", parent="root", started_at=T0 + 101)
    add_session(db, "late", parent="root", started_at=T0 + 200)
    assert db.get_compression_tip("root") == "late"


def test_compression_tip_walk_is_bounded_at_100_hops(db):
    for i in range(120):
        add_session(db, f"c{i}", parent=f"c{i - 1}" if i else None, started_at=T0 + 10 * i,
                    ended_at=T0 + 10 * i + 5, end_reason="compression")
    assert db.get_compression_tip("c0") == "c100"


def test_compression_tip_stops_on_a_parent_cycle(db):
    add_session(db, "a", started_at=T0, ended_at=T0, end_reason="compression")
    add_session(db, "b", parent="a", started_at=T0, ended_at=T0, end_reason="compression")
    db._conn.execute("UPDATE sessions SET parent_session_id = 'b' WHERE id = 'a'")
    assert db.get_compression_tip("a") in {"a", "b"}


def test_list_shows_compressed_conversation_as_its_tip(chain):
    add_session(chain, "solo", started_at=T0 - 10, message="standalone")
    rows = {row["id"]: row for row in chain.list_sessions_rich(source="cli", limit=20)}
    assert set(rows) == {"tip1", "solo"}
    tip, tip_raw = rows["tip1"], chain.get_session("tip1")
    assert tip["_lineage_root_id"] == "root1"
    assert tip["preview"].startswith("latest message")
    assert tip["ended_at"] is None and tip["end_reason"] is None
    assert tip["started_at"] == chain.get_session("root1")["started_at"]
    assert tip["message_count"] == tip_raw["message_count"] == 1
    assert "_lineage_root_id" not in rows["solo"]


def test_projection_takes_title_model_and_prompt_from_the_tip(chain):
    chain.set_session_title("root1", "Refactor")
    chain.set_session_title("tip1", "Refactor #3")
    chain.update_system_prompt("tip1", "tip prompt")
    chain.update_token_counts("tip1", model="tip-model")
    [row] = chain.list_sessions_rich()
    assert (row["title"], row["system_prompt"], row["model"]) == ("Refactor #3", "tip prompt", "tip-model")
    assert row["last_active"] == max(m["timestamp"] for m in chain.get_messages("tip1"))


def test_list_without_projection_shows_the_raw_root(chain):
    [row] = chain.list_sessions_rich(project_compression_tips=False)
    assert row["id"] == "root1"
    assert row["end_reason"] == "compression"
    assert "_lineage_root_id" not in row


def test_include_children_lists_raw_rows_without_projection(chain):
    rows = chain.list_sessions_rich(include_children=True)
    assert {row["id"] for row in rows} == {"root1", "delegate1", "mid1", "tip1"}
    assert not any("_lineage_root_id" in row for row in rows)


def test_projected_row_keeps_the_roots_place_in_the_order(chain):
    add_session(chain, "newer", started_at=T0 + 120)
    add_session(chain, "older", started_at=T0 - 120)
    assert rich_ids(chain) == ["newer", "tip1", "older"]


def test_broken_chain_shows_the_raw_row(db):
    add_session(db, "orphan", started_at=T0, ended_at=T0 + 10, end_reason="compression")
    [row] = db.list_sessions_rich()
    assert row["id"] == "orphan" and row["end_reason"] == "compression"
    assert "_lineage_root_id" not in row


# -- lineage walks -----------------------------------------------------------------

def test_ancestors_and_descendants(chain):
    assert lineage.ancestors(chain._conn, "tip1") == ["mid1", "root1"]
    assert lineage.ancestors(chain._conn, "root1") == []
    found = {row["id"]: row["depth"] for row in lineage.descendants(chain._conn, "root1")}
    assert found == {"delegate1": 1, "mid1": 1, "tip1": 2}


def test_lineage_walks_terminate_on_cycles(db):
    for i, sid in enumerate("abc"):
        add_session(db, sid, started_at=T0 + i, parent="abc"[i - 1] if i else None)
    db._conn.execute("UPDATE sessions SET parent_session_id = 'c' WHERE id = 'a'")
    assert sorted(lineage.ancestors(db._conn, "a")) == ["b", "c"]
    assert {row["id"] for row in lineage.descendants(db._conn, "a")} == {"b", "c"}
    [cycle] = lineage.find_cycles(db._conn)
    assert sorted(cycle) == ["a", "b", "c"]


def test_no_cycles_in_a_healthy_tree(chain):
    assert lineage.find_cycles(chain._conn) == []
