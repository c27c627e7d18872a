"""Common words are ranked among their newest matches only; selective queries exactly as before."""

from __future__ import annotations

import itertools
import json
import sqlite3

import pytest
from click.testing import CliRunner
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_state_tools import SessionDB
from hermes_state_tools.cli import main
from hermes_state_tools.search import query as q

WORDS = ["common", "often", "rare", "unique", "filler", "deploy", "kernel", "staging"]


@pytest.fixture
def store(tmp_path):
    """120 messages: 'common' in every one, 'often' in every third, 'rare' in five, of varied lengths."""
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        for s in range(6):
            db.create_session(f"s{s}", "cli" if s % 2 else "telegram")
            for n in range(20):
                i = s * 20 + n
                words = ["common"] + ["often"] * (i % 3 == 0) + ["rare"] * (i % 24 == 5) + ["filler"] * (i % 7)
                db.append_message(f"s{s}", "user" if n % 2 else "assistant", " ".join(words))
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    yield path, conn
    conn.close()


def ids(rows):
    return [r["id"] for r in rows]


def unbounded(conn, fts_query, filters=("", []), limit=20, offset=0):
    return q.fts_search(conn, fts_query, filters, limit, offset, window=10**9)


@pytest.mark.parametrize("fts_query", ["rare", "often", "rare OR often", "commo*", '"common often"'])
def test_a_query_with_fewer_matches_than_the_window_is_ranked_as_before(store, fts_query):
    _path, conn = store
    assert ids(q.fts_search(conn, fts_query, ("", []), 20, 0, window=200)) == ids(unbounded(conn, fts_query))


def test_a_common_query_ranks_exactly_its_newest_window_matches(store):
    _path, conn = store
    window = 30
    newest = [row[0] for row in conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'common' ORDER BY rowid DESC LIMIT ?", (window,))]
    rank = dict(conn.execute("SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH 'common'").fetchall())
    got = q.fts_search(conn, "common", ("", []), 10, 0, window=window)
    assert set(ids(got)) <= set(newest)
    # the best 10 of the window by bm25 (ties in any order)
    assert sorted(rank[i] for i in ids(got)) == sorted(rank[i] for i in newest)[:10]
    assert all(rank[a] <= rank[b] for a, b in itertools.pairwise(ids(got)))
    assert q.recent_floor(conn, "common", ("", []), window) == newest[-1]
    assert q.recent_floor(conn, "rare", ("", []), window) is None


def test_the_window_counts_matches_after_the_filters(store):
    _path, conn = store
    filters = q._filters(["cli"], None, None)
    got = q.fts_search(conn, "common", filters, 10, 0, window=10)
    newest_cli = [row[0] for row in conn.execute(
        "SELECT m.id FROM messages m JOIN sessions s ON s.id = m.session_id WHERE s.source = 'cli' "
        "ORDER BY m.id DESC LIMIT 10")]
    assert sorted(ids(got)) == sorted(newest_cli)


def test_the_pages_of_one_window_share_its_candidates_and_paging_past_it_widens_it(store):
    _path, conn = store
    pages = [ids(q.fts_search(conn, "common", ("", []), 10, offset, window=20)) for offset in (0, 10)]
    newest = {row[0] for row in conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'common' ORDER BY rowid DESC LIMIT 20")}
    assert set(pages[0]) | set(pages[1]) == newest  # no message twice
    third = ids(q.fts_search(conn, "common", ("", []), 10, 20, window=20))
    assert len(third) == 10 and min(third) > 120 - 40  # ranked among the newest 40
    assert [q.window_for(o, 10, 20) for o in (0, 10, 20, 35)] == [20, 20, 40, 60]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(WORDS[:4]), min_size=1, max_size=2), window=st.integers(1, 150))
def test_any_window_keeps_results_among_the_newest_and_exact_when_it_holds_every_match(store, words, window):
    _path, conn = store
    fts_query = " ".join(words)
    matches = [row[0] for row in conn.execute(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC", (fts_query,))]
    got = ids(q.fts_search(conn, fts_query, ("", []), 20, 0, window=window))
    candidates = q.window_for(0, 20, window)
    if len(matches) <= candidates:
        assert got == ids(unbounded(conn, fts_query))
    else:
        assert set(got) <= set(matches[:candidates]) and len(got) == 20


def test_search_messages_ranks_a_common_word_among_the_newest(store, monkeypatch):
    path, _conn = store
    monkeypatch.setattr(q, "RECENT_WINDOW", 12)
    with SessionDB(path) as db:
        hits = db.search_messages("common", limit=5)
        assert len(hits) == 5 and min(h["id"] for h in hits) > 120 - 12
        assert [h["id"] for h in db.search_messages("rare")] != []


def test_the_cli_says_when_a_query_was_ranked_among_the_newest(store, monkeypatch):
    path, _conn = store
    monkeypatch.setattr(q, "RECENT_WINDOW", 12)
    runner = CliRunner()
    common = json.loads(runner.invoke(main, ["--db", str(path), "search", "common", "--json"]).stdout)
    rare = json.loads(runner.invoke(main, ["--db", str(path), "search", "rare", "--json"]).stdout)
    assert common["ranked_among"] == 24 and len(common["results"]) == 20  # two windows hold --limit
    assert rare["ranked_among"] is None and len(rare["results"]) == 5
    human = runner.invoke(main, ["--db", str(path), "search", "common", "--limit", "3"]).stdout
    assert "best of the newest 12 matches" in human


@pytest.fixture
def glued(tmp_path):
    """40 messages; 'xyzzy' only inside longer words (no whole-word match), in every fourth one."""
    path = tmp_path / "glued.db"
    with SessionDB(path) as db:
        db.create_session("g", "cli")
        for n in range(40):
            db.append_message("g", "user", f"entry {n} " + ("fooxyzzybar" if n % 4 == 0 else "plain words"))
    return path


def test_the_literal_look_reads_the_newest_messages_only_and_whole_words_are_found_everywhere(glued, monkeypatch):
    with SessionDB(glued) as db:
        everywhere = [h["id"] for h in db.search_messages("xyzzy", limit=50)]
        assert everywhere == [37, 33, 29, 25, 21, 17, 13, 9, 5, 1]  # newest first, each literal match
        monkeypatch.setattr(q, "LITERAL_WINDOW", 15)
        assert [h["id"] for h in db.search_messages("xyzzy", limit=50)] == [37, 33, 29]  # ids 26-40 only
        assert [h["id"] for h in db.search_messages("entry 3", limit=50)] == [4]  # whole words: all of them


def test_the_report_says_when_the_literal_look_read_the_newest_messages_only(glued, monkeypatch):
    runner = CliRunner()

    def search(*words: str) -> dict:
        return json.loads(runner.invoke(main, ["--db", str(glued), "search", *words, "--json"]).stdout)

    assert search("xyzzy")["literal_among"] is None  # the store is smaller than the window: it read them all
    monkeypatch.setattr(q, "LITERAL_WINDOW", 15)
    glued_word = search("xyzzy")
    assert glued_word["literal_among"] == 15 and len(glued_word["results"]) == 3
    assert search("entry")["literal_among"] is None  # a whole-word match: no literal look
    assert search("nowhere")["literal_among"] == 15 and search("nowhere")["results"] == []
    human = runner.invoke(main, ["--db", str(glued), "search", "nowhere"]).stdout
    assert "no matches" in human and "literal text looked for in the newest 15 messages" in human
