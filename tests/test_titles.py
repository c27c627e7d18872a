"""Session titles: cleaning, the length limit, uniqueness, lookup and lineage numbering."""

from __future__ import annotations

import re
import time
import unicodedata

import pytest
from helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_state_tools import SessionDB

clean = SessionDB.sanitize_title


def titled(db, *pairs):
    """Create one session per (id, title), a few ms apart so started_at orders them."""
    for session_id, title in pairs:
        db.create_session(session_id, "cli")
        db.set_session_title(session_id, title)
        time.sleep(0.005)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("My Project", "My Project"),
        ("  hello world  ", "hello world"),
        ("hello   world", "hello world"),
        ("hello\t\nworld", "hello world"),
        ("hello\r\n\r\nworld", "hello world"),
        ("hello\x00world", "helloworld"),
        ("\x07\x08test\x1b", "test"),
        ("hello\x7fworld", "helloworld"),
        ("hello\u200bworld", "helloworld"),
        ("hello\u200dworld", "helloworld"),
        ("hello\u200eworld\u200f", "helloworld"),
        ("\u202eevil\u202c", "evil"),
        ("\u2066isolate\u2069", "isolate"),
        ("\ufeffhello", "hello"),
        ("word\u2060joiner", "wordjoiner"),
        ("a \u200b b", "a b"),
        ("🚀 Launch day ✨", "🚀 Launch day ✨"),
        ("修复登录问题", "修复登录问题"),
        ("Café naïve résumé", "Café naïve résumé"),
        ("PR #438 — fixing the 'auth' middleware!?", "PR #438 — fixing the 'auth' middleware!?"),
        ("A" * 100, "A" * 100),
        (None, None),
        ("", None),
        ("   \t\n  ", None),
        ("\x00\x01\x02\u200b\ufeff", None),
    ],
)
def test_clean_title(raw, expected):
    assert clean(raw) == expected


def test_title_over_100_characters_is_rejected():
    with pytest.raises(ValueError, match="too long"):
        clean("A" * 101)


def test_length_is_judged_after_cleaning():
    assert clean("  " + "B" * 100 + "\u200b\u200b  ") == "B" * 100


def test_set_title_stores_the_cleaned_title(db, s1):
    assert db.set_session_title("s1", "  hello\x00  world  ") is True
    assert db.get_session_title("s1") == "hello world"


def test_set_title_too_long_is_rejected_and_keeps_the_old_title(db, s1):
    db.set_session_title("s1", "kept")
    with pytest.raises(ValueError, match="too long"):
        db.set_session_title("s1", "X" * 150)
    assert db.get_session_title("s1") == "kept"


def test_set_and_get_title(db, s1):
    assert db.get_session_title("s1") is None
    assert db.set_session_title("s1", "My Session") is True
    assert db.get_session_title("s1") == "My Session"
    assert db.set_session_title("s1", "Updated Title") is True
    assert db.get_session_title("s1") == "Updated Title"


def test_set_title_on_unknown_session_returns_false(db):
    assert db.set_session_title("nope", "Title") is False
    assert db.get_session_by_title("Title") is None


def test_get_title_of_unknown_session_is_none(db):
    assert db.get_session_title("nope") is None


@pytest.mark.parametrize("blank", ["", "   ", "\u200b", None])
def test_blank_title_clears(db, s1, blank):
    db.set_session_title("s1", "Something")
    assert db.set_session_title("s1", blank) is True
    assert db.get_session_title("s1") is None


def test_many_sessions_may_have_no_title(db):
    titled(db, ("a", ""), ("b", ""), ("c", None))
    assert [db.get_session_title(s) for s in "abc"] == [None, None, None]


def test_title_taken_by_another_session_is_rejected(db):
    titled(db, ("s1", "my title"))
    db.create_session("s2", "cli")
    with pytest.raises(ValueError, match="already in use"):
        db.set_session_title("s2", "my title")
    with pytest.raises(ValueError, match="already in use"):
        db.set_session_title("s2", "  my\u200b title ")
    assert db.get_session_title("s2") is None


def test_session_may_set_its_own_title_again(db):
    titled(db, ("s1", "same"))
    assert db.set_session_title("s1", "same") is True


def test_title_survives_end_session_and_appears_in_export(db, s1):
    db.set_session_title("s1", "Export Test")
    db.end_session("s1", "user_exit")
    assert db.get_session("s1")["ended_at"] is not None
    assert db.export_session("s1")["title"] == "Export Test"


def test_get_session_by_title_is_exact(db):
    titled(db, ("s1", "refactoring auth"))
    assert db.get_session_by_title("refactoring auth")["id"] == "s1"
    assert db.get_session_by_title("Refactoring Auth") is None
    assert db.get_session_by_title("refactoring") is None


def test_resolve_exact_title(db):
    titled(db, ("s1", "my project"))
    assert db.resolve_session_by_title("my project") == "s1"
    assert db.resolve_session_by_title("other") is None


def test_resolve_prefers_latest_started_numbered_continuation(db):
    titled(db, ("s1", "my project"), ("s3", "my project #3"), ("s2", "my project #2"))
    assert db.resolve_session_by_title("my project") == "s2"
    assert db.resolve_session_by_title("my project #3") == "s3"


def test_resolve_numbered_title_exactly(db):
    titled(db, ("s1", "my project"), ("s2", "my project #2"), ("s3", "my project #3"))
    assert db.resolve_session_by_title("my project") == "s3"
    assert db.resolve_session_by_title("my project #2") == "s2"


def test_resolve_does_not_follow_other_titles_sharing_a_prefix(db):
    titled(db, ("s1", "deploy"), ("s2", "deploy #2 notes"), ("s3", "deployment #2"))
    assert db.resolve_session_by_title("deploy") == "s1"


@pytest.mark.parametrize(
    ("existing", "asked", "expected"),
    [
        ([], "my project", "my project"),
        (["my project"], "my project", "my project #2"),
        (["my project", "my project #2", "my project #3"], "my project", "my project #4"),
        (["my project", "my project #2"], "my project #2", "my project #3"),
        (["Fix Docker Build"], "Fix Docker Build", "Fix Docker Build #2"),
        (["my project #5"], "my project", "my project #6"),
        (["my project", "my project #2 extra"], "my project", "my project #2"),
    ],
)
def test_next_title_in_lineage(db, existing, asked, expected):
    titled(db, *((f"s{i}", title) for i, title in enumerate(existing)))
    assert db.get_next_title_in_lineage(asked) == expected


@pytest.mark.parametrize(
    ("real", "decoy", "asked", "expected_resolve", "expected_next"),
    [
        ("test_project", "testXproject #2", "test_project", "s1", "test_project #2"),
        ("100% done", "100X done #2", "100% done", "s1", "100% done #2"),
        ("a\\b", "a\\\\b #4", "a\\b", "s1", "a\\b #2"),
    ],
    ids=["underscore", "percent", "backslash"],
)
def test_like_wildcards_in_titles_are_literal(db, real, decoy, asked, expected_resolve, expected_next):
    titled(db, ("s1", real), ("s2", decoy))
    assert db.resolve_session_by_title(asked) == expected_resolve
    assert db.get_next_title_in_lineage(asked) == expected_next


_FORBIDDEN = {"Cc", "Cf"}


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=150))
def test_cleaning_is_idempotent_and_leaves_only_visible_single_spaced_text(raw):
    try:
        cleaned = clean(raw)
    except ValueError:
        assert len(raw) > 100
        return
    if cleaned is None:
        return
    assert clean(cleaned) == cleaned
    assert cleaned == cleaned.strip()
    assert len(cleaned) <= 100
    assert not any(unicodedata.category(ch) in _FORBIDDEN for ch in cleaned)
    assert not re.search(r"\s\s", cleaned)
    assert all(ch == " " or not ch.isspace() for ch in cleaned)
