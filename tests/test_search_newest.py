"""A common prefix or phrase is ranked among its newest matches without FTS5 ranking them: the results
are the ones FTS5's bm25 ranks first among those same matches, with FTS5's snippets."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_state_tools import SessionDB
from hermes_state_tools.search import newest
from hermes_state_tools.search import query as q
from hermes_state_tools.search.sanitize import sanitize_fts5_query

# Words sharing prefixes, in ASCII and not (folded alike by the tokenizer: Déploy is deploy), digits.
WORDS = ["deploy", "deployment", "DEPLOYED", "dep", "Déploy", "déjà", "staging", "stage", "st", "go",
         "café", "cafe", "naïve", "x-ray", "a1b2", "über", "12", "123abc", "Ωmega", "ωmegas"]
SEPARATORS = [" ", " ", " ", ", ", "-", "\n", "_", " 🙂 ", ". "]
FTS_SNIPPET = "snippet(messages_fts, 0, '>>>', '<<<', '...', 40)"


def build(path: Path, texts: list[str]) -> sqlite3.Connection:
    SessionDB(path).close()
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    with conn:
        for s in range(3):
            conn.execute("INSERT INTO sessions (id, source, started_at) VALUES (?, ?, ?)",
                         (f"s{s}", ("cli", "telegram", "discord")[s], 1000.0 + s))
        conn.executemany("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                         [(f"s{n % 3}", ("user", "assistant", "tool")[n % 2], text, 2000.0 + n)
                          for n, text in enumerate(texts)])
    return conn


def reference(conn: sqlite3.Connection, fts_query: str, filters: tuple[str, list[object]], window: int,
              limit: int, offset: int) -> tuple[list[float], dict[int, float]]:
    """FTS5's own ranks: of the best `limit` among the newest `window` matches, and of every match."""
    where, params = filters
    rank = {row[0]: row[1] for row in conn.execute(
        "SELECT messages_fts.rowid, rank FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
        f"JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ?{where}", (fts_query, *params))}
    newest_ids = sorted(rank, reverse=True)[:window]
    return sorted(rank[i] for i in newest_ids)[offset:offset + limit], rank


def check_against_fts5(conn: sqlite3.Connection, query: str, filters: tuple[str, list[object]], window: int,
                       limit: int, offset: int) -> None:
    fts_query = sanitize_fts5_query(query)
    got = q.fts_search(conn, fts_query, filters, limit, offset, window=window)
    expected, rank = reference(conn, fts_query, filters, q.window_for(offset, limit, window), limit, offset)
    assert [rank[r["id"]] for r in got] == expected, (query, filters, window)
    for result in got:
        snippet = conn.execute(f"SELECT {FTS_SNIPPET} FROM messages_fts WHERE messages_fts MATCH ? AND rowid = ?",
                               (fts_query, result["id"])).fetchone()[0]
        assert result["snippet"] == snippet
        row = conn.execute("SELECT m.session_id, m.role, m.timestamp, s.source FROM messages m "
                           "JOIN sessions s ON s.id = m.session_id WHERE m.id = ?", (result["id"],)).fetchone()
        assert (result["session_id"], result["role"], result["timestamp"], result["source"]) == tuple(row)


texts = st.lists(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), min_size=1, max_size=12)
                 .map(lambda pairs: "".join(w + sep for w, sep in pairs).strip()), min_size=5, max_size=90)
queries = st.one_of(
    st.tuples(st.sampled_from(WORDS), st.integers(1, 4)).map(lambda wn: wn[0][:wn[1]] + "*"),
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=3).map(lambda words: '"' + " ".join(words) + '"'),
)
FILTERS = [("", []), q._filters(["cli", "discord"], None, None), q._filters(None, None, ["user"])]


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=texts, query=queries, window=st.integers(1, 40), offset=st.sampled_from([0, 3]),
       which=st.integers(0, len(FILTERS) - 1), scan=st.sampled_from([1, 5, 100]))
def test_a_bounded_prefix_or_phrase_gives_what_fts5_ranks_first_among_the_same_newest_matches(
        monkeypatch, texts, query, window, offset, which, scan):
    monkeypatch.setattr(newest, "PREFIX_SCAN_FACTOR", scan)
    with tempfile.TemporaryDirectory() as folder:
        conn = build(Path(folder) / "state.db", texts)
        try:
            check_against_fts5(conn, query, FILTERS[which], window, 4, offset)
        finally:
            conn.close()


@pytest.fixture
def common(tmp_path):
    """300 messages, each with a word starting 'deploy' and most with the phrase 'staging go'."""
    conn = build(tmp_path / "state.db", [f"deploy{'ment' * (n % 3)} x{n} " + "staging go " * (n % 4)
                                         + "filler " * (n % 7) for n in range(300)])
    yield conn
    conn.close()


@pytest.mark.parametrize("query", ["deploy*", "Deplo*", '"staging go"', "stag*"])
def test_fts5_never_ranks_nor_merges_a_common_prefix_or_phrase(common, query, monkeypatch):
    monkeypatch.setattr(q, "RECENT_WINDOW", 50)
    statements: list[str] = []
    common.set_trace_callback(statements.append)
    found = q.answer(common, query, limit=5)
    common.set_trace_callback(None)
    ranked = [s for s in statements if "ORDER BY rank" in s or "bm25" in s]
    assert not ranked and len(found.results) == 5 and found.ranked_among == 50
    if query.endswith("*"):  # a prefix is never asked of the file's index: FTS5 would merge its lists
        assert not [s for s in statements if "messages_fts MATCH" in s]
    check_against_fts5(common, query, ("", []), 50, 5, 0)
    # and with fewer matches than the window, every match is ranked, still not by FTS5 (bm25's idf
    # would read every row that holds the term once more)
    monkeypatch.setattr(q, "RECENT_WINDOW", 2000)
    statements.clear()
    common.set_trace_callback(statements.append)
    assert q.answer(common, query, limit=5).ranked_among is None
    common.set_trace_callback(None)
    assert not [s for s in statements if "ORDER BY rank" in s or "bm25" in s]
    check_against_fts5(common, query, ("", []), 2000, 5, 0)


def test_a_query_of_more_than_one_term_or_a_plain_word_is_left_to_fts5(common):
    # and a phrase whose instances can overlap ("go go" twice in "go go go": highlight marks one span),
    # folded as the tokenizer folds ("Go gö"), or a prefix of more than one word
    for fts_query in ("deploy* x1", "deploy", '"staging go" OR deploy', '"go go"', '"Go gö"', '"a b a"',
                      '"x-ra"*'):
        assert newest.lone_term(common, fts_query) is None, fts_query
    assert newest.lone_term(common, '"a b c a b"') is None
    assert newest.lone_term(common, '"a b b a c"') is not None  # "a" comes back, but no end is a start
    assert newest.lone_term(common, '"A b-c"') == newest.LoneTerm('"A b-c"', False, b" a  b  c ")
    assert newest.lone_term(common, "Dé*") == newest.LoneTerm("Dé*", True, b" de")  # folded as FTS5 folds it
    assert newest.lone_term(common, "über*") == newest.LoneTerm("über*", True, b" uber")
    assert newest.lone_term(common, '"Ωmega x"') == newest.LoneTerm('"Ωmega x"', False, b"")  # all in FTS5
    assert newest._ascii_words("Go, go-GO!\n x_1 ") == (b" go  go  go  x  1 ", 5)
    # x1* is a lone prefix, rarer than one message in PREFIX_SCAN_FACTOR: FTS5 answers it
    x1 = newest.lone_term(common, "x1*")
    assert x1 is not None and newest.prefix_counts(common, x1, ("", []), 100) is None
    check_against_fts5(common, "x1*", ("", []), 100, 5, 0)


def test_search_messages_on_the_facade_ranks_a_common_prefix_among_the_newest(tmp_path, monkeypatch):
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("s", "cli")
        for n in range(40):
            db.append_message("s", "user", f"deploy{'ed' * (n % 2)} number {n}" + " deploying" * (n % 5 == 0))
        monkeypatch.setattr(q, "RECENT_WINDOW", 10)
        hits = db.search_messages("deploy*", limit=3)
        assert [h["id"] for h in hits] == [36, 31, 40]  # two instances, then the shortest, newest first
        assert all(h["snippet"].count(">>>") >= 1 and h["context"] for h in hits)


def test_varints_read_as_sqlite_writes_them():
    assert newest._varints(bytes([0x05, 0x81, 0x00, 0x7F])) == [5, 128, 127]
    assert newest._varints(bytes([0xFF] * 9)) == [2**64 - 1]


def traced_answer(conn: sqlite3.Connection, query: str, limit: int = 5) -> tuple[q.Answer, list[str]]:
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        return q.answer(conn, query, limit=limit), [s for s in statements if "ORDER BY rank" in s or "bm25" in s]
    finally:
        conn.set_trace_callback(None)


def test_a_phrase_whose_matches_are_all_old_is_found_and_ranked_among_all_of_them(tmp_path):
    # 30 old messages hold the phrase (some twice, of varied lengths); 600 newer ones hold both words apart
    old = [f"staging go {'staging go ' * (n % 3 == 0)}{'filler ' * (n % 5)}x{n}" for n in range(30)]
    newer = [f"go to staging {n} {'filler ' * (n % 4)}" for n in range(600)]
    conn = build(tmp_path / "state.db", old + newer)
    try:
        found, ranked_by_fts5 = traced_answer(conn, '"staging go"', limit=10)
        assert not ranked_by_fts5 and found.ranked_among is None and len(found.results) == 10
        assert max(r["id"] for r in found.results) <= 30
        check_against_fts5(conn, '"staging go"', ("", []), q.RECENT_WINDOW, 10, 0)
        check_against_fts5(conn, '"staging go"', q._filters(["cli"], None, None), q.RECENT_WINDOW, 10, 0)
        with SessionDB(tmp_path / "state.db") as db:  # Hermes' search_messages finds them the same
            assert [h["id"] for h in db.search_messages('"staging go"', limit=10)] == [r["id"] for r in found.results]
    finally:
        conn.close()


@pytest.mark.parametrize("query", ['"staging go"', "stagin*", "staging"])
@pytest.mark.parametrize("matches", [19, 20, 21])
def test_a_query_with_about_the_window_of_matches_ranks_its_newest_window(tmp_path, monkeypatch, matches, query):
    # the oldest match is the best one (the phrase alone, twice): ranked only while it is among the newest 20
    texts = ["staging go staging go"] + [f"staging go filler {n} " + "word " * (n % 6) for n in range(matches - 1)]
    conn = build(tmp_path / "state.db", texts + [f"other words {n}" for n in range(50)])
    monkeypatch.setattr(q, "RECENT_WINDOW", 20)
    try:
        found, ranked_by_fts5 = traced_answer(conn, query)
        assert bool(ranked_by_fts5) == (query == "staging")  # a plain word is FTS5's to rank
        assert found.ranked_among == (None if matches <= 20 else 20)  # N: more than N matches, the newest N ranked
        assert (found.results[0]["id"] == 1) == (matches <= 20)
        check_against_fts5(conn, query, ("", []), 20, 5, 0)
    finally:
        conn.close()


def test_ties_rank_as_fts5_orders_them_when_every_match_is_ranked_and_newest_first_in_a_window(tmp_path,
                                                                                               monkeypatch):
    conn = build(tmp_path / "state.db", ["deploy staging go now"] * 12 + ["staging gone"] * 5)
    try:
        for window, expected in ((2000, [1, 2, 3, 4]), (6, [12, 11, 10, 9])):  # all 12 matches; the newest 6
            monkeypatch.setattr(q, "RECENT_WINDOW", window)
            for query in ('"staging go"', "deplo*"):
                assert [r["id"] for r in q.answer(conn, query, limit=4).results] == expected, (query, window)
        fts5 = [rowid for (rowid,) in conn.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH '\"staging go\"' ORDER BY rank LIMIT 4")]
        assert fts5 == [1, 2, 3, 4]
    finally:
        conn.close()


def test_a_phrase_beside_other_terms_or_in_cjk_keeps_its_own_ranking(tmp_path, monkeypatch):
    texts = [f"staging go {'deploy ' * (n % 2)}{'filler ' * (n % 5)}{n}" for n in range(40)]
    conn = build(tmp_path / "state.db", texts + ["東京の天気は晴れ staging", "今日の天気"] + ["go staging"] * 40)
    monkeypatch.setattr(q, "RECENT_WINDOW", 10)
    try:
        # NOT and OR: FTS5 ranks the query among its newest 10 matches, as for any query of several terms
        for query in ('"staging go" NOT deploy', '"staging go" OR nowhere', '"staging go" deploy'):
            found, ranked_by_fts5 = traced_answer(conn, query)
            assert ranked_by_fts5 and found.ranked_among == 10, query
            check_against_fts5(conn, query, ("", []), 10, 5, 0)
        # a CJK phrase is a substring, found however old, newest first
        assert [r["id"] for r in q.answer(conn, '"東京の天気"').results] == [41]
        assert [r["id"] for r in q.answer(conn, '"の天気"').results] == [42, 41]
        # and a lone phrase of words that are not ASCII is counted by FTS5's own tokenizer
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s0', 'user', ?, 9e9)",
                     ("Café naïve déjà café naïve",))
        conn.commit()
        found, ranked_by_fts5 = traced_answer(conn, '"cafe naive"')
        assert not ranked_by_fts5 and [r["id"] for r in found.results] == [83]
    finally:
        conn.close()
