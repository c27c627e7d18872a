"""Search with CJK text: each CJK run and each Latin word is a term (AND/OR/NOT/phrases as for
Latin), CJK terms match as substrings, through the trigram side table when the file has one."""

from __future__ import annotations

import sqlite3

import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_state_tools import SessionDB
from hermes_state_tools.search import trigram
from hermes_state_tools.search.sanitize import And, Latin, Or, Substring, parse

DOCS = [
    "東京 nginx restart",
    "nginx 東京",
    "今日の東京の天気は晴れ",
    "東京の天気 and nginx logs",
    "大阪 deploy build",
    "nginx only here",
    "Can you check disk usage?",
    "東京nginxが落ちた",
    "周末计划 🏔️ 京都",
    "run -build flags",
    "東",
]
HAS_TRIGRAM = trigram.available(sqlite3.connect(":memory:"))
ENGINES = ["substring", *(["trigram"] if HAS_TRIGRAM else [])]


@pytest.fixture(params=ENGINES)
def store(request, db: SessionDB) -> tuple[SessionDB, str, list[int]]:
    db.create_session("s1", "cli")
    ids = [db.append_message("s1", "user", text) for text in DOCS]
    if request.param == "trigram":
        with db._conn:
            trigram.refresh(db._conn)
    return db, request.param, ids


def found(store, query: str) -> list[int]:
    """The 1-based positions in DOCS of the messages `query` finds."""
    db, _, ids = store
    return sorted(ids.index(r["id"]) + 1 for r in db.search_messages(query, limit=100))


def test_parse_makes_each_cjk_run_and_latin_word_a_term() -> None:
    assert parse("東京 nginx") == And((Substring("東京"), Latin("nginx")))
    assert parse('"東京の天気"') == Substring("東京の天気")
    assert parse("東京 OR nginx") == Or((Substring("東京"), Latin("nginx")))
    assert parse("東京*") == Substring("東京")
    assert parse("東京、大阪") == And((Substring("東京"), Substring("大阪")))
    assert parse("Agent通信") == Substring("Agent通信")  # glued as typed: one token in the index too
    assert parse("a AND OR b") == And((Latin("a"), Latin("b")))
    assert parse("NOT") == Latin("NOT", phrase=True)
    assert parse("NOT x") is None
    assert parse("") is None and parse('""') is None and parse("()") is None


def test_word_order_does_not_matter(store) -> None:
    both = found(store, "東京 nginx")
    # 8 holds "東京nginxが", ONE unicode61 token: only the side table knows the word nginx in it.
    assert both == found(store, "nginx 東京") == ([1, 2, 4, 8] if store[1] == "trigram" else [1, 2, 4])


def test_a_quoted_cjk_phrase_is_one_substring(store) -> None:
    assert found(store, '"東京の天気"') == [3, 4]
    assert found(store, "東京の天気") == [3, 4]


def test_or_prefix_not_and_parentheses(store) -> None:
    assert found(store, "東京 OR nginx") == [1, 2, 3, 4, 6, 8]
    assert found(store, "東京*") == [1, 2, 3, 4, 8]
    assert found(store, "nginx NOT 東京") == [6]
    assert found(store, "東京 NOT nginx") == ([3] if store[1] == "trigram" else [3, 8])
    assert found(store, "東京 AND NOT 天気") == [1, 2, 8]
    assert found(store, "(大阪 OR 京都) build") == [5]


def test_cjk_terms_of_any_length(store) -> None:
    assert found(store, "東") == [1, 2, 3, 4, 8, 11]
    assert found(store, "京都") == [9]
    assert found(store, "计划") == [9]
    assert found(store, "今日の東京の天気は晴れ") == [3]


def test_a_phrase_mixing_latin_and_cjk_is_case_insensitive(store) -> None:
    assert found(store, '"nginx 東京"') == [2]
    assert found(store, '"NGINX 東京"') == [2]


def test_latin_terms_beside_cjk_stay_words(store) -> None:
    assert found(store, "東京 restart") == [1]
    assert found(store, "東京 rest*") == [1]
    assert found(store, "東京 res") == []  # a word, not a substring


@pytest.mark.skipif(not HAS_TRIGRAM, reason="this SQLite has no trigram tokenizer")
def test_messages_past_the_watermark_and_deleted_ones(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    first = db.append_message("s1", "user", "今日の東京の天気")
    with db._conn:
        assert trigram.refresh(db._conn)["last_id"] == first
    newer = db.append_message("s1", "user", "新しい東京の天気")
    glued = db.append_message("s1", "user", "大阪dockerが")
    assert {r["id"] for r in db.search_messages("東京の天気")} == {first, newer}  # the tail is read too
    assert [r["id"] for r in db.search_messages("docker 大阪")] == [glued]
    db._conn.execute("UPDATE messages SET content = 'nothing' WHERE id = ?", (first,))
    assert [r["id"] for r in db.search_messages("東京の天気")] == [newer]  # checked on the live row
    db._conn.execute("DELETE FROM messages WHERE id = ?", (first,))
    with db._conn:
        report = trigram.refresh(db._conn)
    assert report == {"indexed": 2, "dropped": 1, "last_id": glued}
    assert [r["id"] for r in db.search_messages("東京の天気")] == [newer]


def test_the_side_table_is_not_created_without_cjk(db: SessionDB) -> None:
    db.create_session("s1", "cli")
    db.append_message("s1", "user", "only latin")
    with db._conn:
        assert trigram.refresh(db._conn)["last_id"] == -1
    assert trigram.watermark(db._conn) == -1


def test_hostile_queries_never_raise(store) -> None:
    for query in ['"', "(", ")", "((東京", "AND 東京", "OR OR 東", 'NEAR(東 b)', "東:b", "^東", "東*",
                  "東京)", "\x00東", "{東}", "東 NOT", "NOT 東", '"東', "東 -x"]:
        found(store, query)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="東京大阪天気のはnginx ()\"*-ORANDNOT", max_size=20))
def test_any_query_runs(store, query: str) -> None:
    found(store, query)


_CJK_TEXT = st.text(alphabet="東京大阪天気の晴れ안녕世界计划 nginxdeploy。", min_size=1, max_size=40)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_CJK_TEXT, start=st.integers(0, 40), length=st.integers(1, 6), indexed=st.booleans())
def test_any_piece_of_a_cjk_run_finds_its_message(db: SessionDB, text: str, start: int, length: int,
                                                   indexed: bool) -> None:
    from hermes_state_tools.search.sanitize import CJK_RUN

    runs = [run for run in CJK_RUN.findall(text.replace("。", " ")) if run]
    if not runs:
        return
    run = runs[start % len(runs)]
    piece = run[start % len(run):][:length]
    session = f"s{abs(hash((text, start, length, indexed)))}"
    db.create_session(session, "cli")
    message = db.append_message(session, "user", text)
    if indexed and HAS_TRIGRAM:
        with db._conn:
            trigram.refresh(db._conn)
    found = [r["id"] for r in db.search_messages(piece, source_filter=["cli"], limit=10_000)]
    assert message in found
    assert all(piece in db._conn.execute("SELECT content FROM messages WHERE id = ?", (i,)).fetchone()[0]
               for i in found)


@pytest.mark.skipif(not HAS_TRIGRAM, reason="this SQLite has no trigram tokenizer")
def test_maintain_indexes_a_batch_per_write_transaction_and_looks_for_cjk_without_writing(
        db: SessionDB, monkeypatch: pytest.MonkeyPatch) -> None:
    # maintain held the write lock while a GLOB read every message for CJK (17 s at 300,000 messages,
    # a live Hermes' appends gave up) and while it indexed the whole table in one transaction.
    db.create_session("s1", "cli")
    latin = [db.append_message("s1", "user", f"plain text {n} café") for n in range(25)]
    writes: list[str] = []

    def run(fn, *args):
        writes.append(fn.__name__)
        return db._writer.run(fn, *args)

    assert trigram.catch_up(db._conn, run)["last_id"] == -1 and writes == []  # no CJK: nothing written
    monkeypatch.setattr(trigram, "_REFRESH_BATCH", 10)
    cjk = [db.append_message("s1", "user", f"東京の天気 {n}") for n in range(12)]
    report = trigram.catch_up(db._conn, run)
    assert report == {"indexed": 12, "dropped": 0, "last_id": cjk[-1]}
    assert writes == ["_index_batch"] * 5 + ["_drop_deleted"]  # 37 messages: 4 batches, then none left
    assert {r["id"] for r in db.search_messages("東京の天気")} == set(cjk) and latin


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet=st.one_of(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                                           st.sampled_from("東京の天気ひカ한글ｶ㐀 aé🚀")), max_size=12), max_size=6))
def test_holds_cjk_finds_what_the_pattern_finds(db: SessionDB, texts: list[str]) -> None:
    # One store for every example (a new file each cost most of the test's time), emptied first.
    db.delete_session("s1")
    assert db.message_count() == 0
    db.create_session("s1", "cli")
    for text in texts:
        db.append_message("s1", "user", text)
    assert trigram.holds_cjk(db._conn) == any(trigram._CJK.search(text) for text in texts)
