"""Deleting and pruning sessions (children are orphaned, never cascaded) and exporting them."""

from __future__ import annotations

import time

import pytest
from helpers import session_with_messages, set_times

DAY = 86_400
NOW = time.time()


def aged(db, session_id, days, *, parent=None, ended=True, source="cli", messages=("hello",)):
    """A session started `days` ago (ended a minute later unless `ended` is False), with messages."""
    session_with_messages(db, session_id, *messages, source=source, parent_session_id=parent)
    start = NOW - days * DAY
    set_times(db, session_id, started_at=start, ended_at=start + 60 if ended else None,
              end_reason="done" if ended else None)


def existing(db, *ids):
    return {sid for sid in ids if db.get_session(sid) is not None}


# -- delete ------------------------------------------------------------------------

def test_delete_session_removes_it_and_its_messages(db):
    session_with_messages(db, "s1", "one", "two")
    session_with_messages(db, "s2", "other")
    assert db.delete_session("s1") is True
    assert db.get_session("s1") is None
    assert db.message_count(session_id="s1") == 0
    assert db.message_count() == 1
    assert db.search_messages("one") == []


def test_delete_unknown_session_returns_false(db):
    session_with_messages(db, "s1", "keep")
    assert db.delete_session("nope") is False
    assert db.message_count() == 1


def test_delete_orphans_children_and_leaves_grandchildren_alone(db):
    db.create_session("parent", "cli")
    db.create_session("child", "cli", parent_session_id="parent")
    db.create_session("grandchild", "cli", parent_session_id="child")
    assert db.delete_session("parent") is True
    assert db.get_session("child")["parent_session_id"] is None
    assert db.get_session("grandchild")["parent_session_id"] == "child"


def test_delete_leaves_no_dangling_parent_links(db):
    db.create_session("parent", "cli")
    db.create_session("child", "cli", parent_session_id="parent")
    db.delete_session("parent")
    assert db._conn.execute("PRAGMA foreign_key_check").fetchall() == []


# -- prune -------------------------------------------------------------------------

def test_prune_deletes_old_ended_sessions_only(db):
    aged(db, "old", 100)
    aged(db, "new", 1)
    assert db.prune_sessions(older_than_days=90) == 1
    assert existing(db, "old", "new") == {"new"}
    assert db.message_count() == 1


def test_prune_never_touches_open_sessions(db):
    aged(db, "open", 200, ended=False)
    assert db.prune_sessions(older_than_days=90) == 0
    assert existing(db, "open") == {"open"}


def test_prune_default_cutoff_is_90_days(db):
    aged(db, "d91", 91)
    aged(db, "d89", 89)
    assert db.prune_sessions() == 1
    assert existing(db, "d91", "d89") == {"d89"}


def test_prune_with_source_filter(db):
    aged(db, "old_cli", 100, source="cli")
    aged(db, "old_tg", 100, source="telegram")
    assert db.prune_sessions(older_than_days=90, source="cli") == 1
    assert existing(db, "old_cli", "old_tg") == {"old_tg"}


def test_prune_judges_start_not_end(db):
    aged(db, "long_running", 100)
    set_times(db, "long_running", ended_at=NOW - 60)
    assert db.prune_sessions(older_than_days=90) == 1


def test_prune_multilevel_chain_orphans_the_first_survivor(db):
    aged(db, "A", 100)
    aged(db, "B", 95, parent="A")
    aged(db, "C", 10, parent="B")
    aged(db, "D", 5, parent="C")
    assert db.prune_sessions(older_than_days=90) == 2
    assert existing(db, "A", "B", "C", "D") == {"C", "D"}
    assert db.get_session("C")["parent_session_id"] is None
    assert db.get_session("D")["parent_session_id"] == "C"
    assert db._conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_prune_entire_old_chain(db):
    aged(db, "X", 120)
    aged(db, "Y", 110, parent="X")
    aged(db, "Z", 100, parent="Y")
    assert db.prune_sessions(older_than_days=90) == 3
    assert existing(db, "X", "Y", "Z") == set()
    assert db.message_count() == 0


def test_prune_nothing_returns_zero(db):
    assert db.prune_sessions(older_than_days=1) == 0


# -- export ------------------------------------------------------------------------

def test_export_session_is_row_plus_messages(db):
    session_with_messages(db, "s1", "hello", "world", model="m")
    db.set_session_title("s1", "Export Test")
    exported = db.export_session("s1")
    assert {k: v for k, v in exported.items() if k != "messages"} == db.get_session("s1")
    assert exported["title"] == "Export Test"
    assert exported["messages"] == db.get_messages("s1")
    assert [m["content"] for m in exported["messages"]] == ["hello", "world"]


def test_export_unknown_session_is_none(db):
    assert db.export_session("nope") is None


def test_export_all_includes_sessions_without_messages(db):
    session_with_messages(db, "s1", "hello", "again")
    session_with_messages(db, "s2", source="telegram")
    exported = {e["id"]: e for e in db.export_all()}
    assert set(exported) == {"s1", "s2"}
    assert len(exported["s1"]["messages"]) == 2
    assert exported["s2"]["messages"] == []


@pytest.mark.parametrize(("source", "expected"), [("cli", {"s1"}), ("telegram", {"s2"}), ("discord", set())])
def test_export_all_by_source(db, source, expected):
    session_with_messages(db, "s1", "hello")
    session_with_messages(db, "s2", "hi", source="telegram")
    assert {e["id"] for e in db.export_all(source=source)} == expected


def test_export_keeps_multimodal_content_as_a_list(db):
    parts = [{"type": "text", "text": "看"}, {"type": "image_url", "image_url": {"url": "data:x"}}]
    db.create_session("s1", "cli")
    db.append_message("s1", "user", parts)
    assert db.export_all()[0]["messages"][0]["content"] == parts


def test_prune_in_slices_deletes_every_message_and_keeps_the_links_right(db, monkeypatch, db_path):
    from hermes_state_tools.maintenance.checks import check_file
    from hermes_state_tools.tables import deleting

    monkeypatch.setattr(deleting, "_SESSIONS_PER_SLICE", 2)  # seven slices for 13 doomed sessions
    aged(db, "root", 200, messages=("old root words",))
    parent = "root"
    for n in range(12):  # a doomed chain: each links to the one before
        aged(db, f"c{n}", 199 - n, parent=parent, messages=(f"chain {n} words", "more words"))
        parent = f"c{n}"
    aged(db, "young", 5, parent="c11", messages=("young words",))
    aged(db, "open", 300, ended=False, parent="c3", messages=("still talking",))
    assert db.prune_sessions(older_than_days=90) == 13
    assert existing(db, "root", *(f"c{n}" for n in range(12)), "young", "open") == {"young", "open"}
    assert db.get_session("young")["parent_session_id"] is None
    assert db.get_session("open")["parent_session_id"] is None
    assert db.message_count() == 2 and db.search_messages("words")[0]["session_id"] == "young"
    db.close()
    assert check_file(db_path) == []  # no orphaned message, FTS in step, no dangling parent
