"""Full-text search: the sanitizer, hostile user input, CJK text, filters, snippets and context."""

from __future__ import annotations

import itertools
import json
import sqlite3
from contextlib import closing

import pytest
from helpers import examples, session_with_messages
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hermes_state_tools import SessionDB

sanitize = SessionDB._sanitize_fts5_query


@pytest.fixture
def platforms(db):
    """Three sessions on different platforms, each with a user and an assistant message (English and CJK)."""
    for sid, source in (("s_cli", "cli"), ("s_tg", "telegram"), ("s_tool", "tool")):
        db.create_session(sid, source, model=f"{source}-model")
        db.append_message(sid, "user", f"Python and Rust question from {source}: 关于记忆的问题")
        db.append_message(sid, "assistant", f"Python and Rust answer for {source}: 关于记忆的回答")
    return db


def store_with_decoy(db, content, decoy="completely unrelated filler sentence"):
    """One session holding `content` and a decoy message; returns the id of the `content` message."""
    db.create_session("s1", "cli")
    target = db.append_message("s1", "user", content)
    db.append_message("s1", "user", decoy)
    return target


# -- the sanitizer on its own --------------------------------------------------

@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("hello world", "hello world"),
        ("hello AND", "hello"),
        ("OR world", "world"),
        ("***", ""),
        ("deploy*", "deploy*"),
        ('"exact phrase"', '"exact phrase"'),
        ("chat-send", '"chat-send"'),
        ("docker-compose-up", '"docker-compose-up"'),
        ('"chat-send"', '"chat-send"'),
        ('"my chat-send thing"', '"my chat-send thing"'),
        ("P2.2", '"P2.2"'),
        ('"P2.2"', '"P2.2"'),
        ("simulate.p2", '"simulate.p2"'),
        ("simulate.p2.test.ts", '"simulate.p2.test.ts"'),
        ("my-app.config", '"my-app.config"'),
        ("my-app.config.ts", '"my-app.config.ts"'),
        ("", ""),
        ("   ", ""),
    ],
)
def test_sanitizer_exact_output(query, expected):
    assert sanitize(query) == expected


@pytest.mark.parametrize(("query", "forbidden"), [("C++", "+"), ('"unterminated', '"'), ("(problem", "("),
                                                  ("{test}", "{"), ("x ^y", "^")])
def test_sanitizer_strips_syntax_characters(query, forbidden):
    assert forbidden not in sanitize(query)


@pytest.mark.parametrize(
    ("query", "contained"),
    [
        ('"docker networking" setup', ['"docker networking"', "setup"]),
        ('"hello world" OR "foo bar"', ['"hello world"', '"foo bar"', "OR"]),
        ("fix chat-send bug", ['"chat-send"', "fix", "bug"]),
        ("chat-send OR deploy-prod", ['"chat-send"', '"deploy-prod"']),
        ("P2.2 OR simulate.p2", ['"P2.2"', '"simulate.p2"']),
    ],
)
def test_sanitizer_keeps_phrases_and_quotes_compound_terms(query, contained):
    result = sanitize(query)
    for part in contained:
        assert part in result


@pytest.mark.parametrize(
    ("text", "expected"),
    [("记忆断裂", True), ("こんにちは", True), ("カタカナ", True), ("안녕하세요", True), ("기억", True),
     ("日本語mixedwithenglish", True), ("hello world", False), ("", False), ("Ünïcödé", False)],
)
def test_contains_cjk_returns_a_real_bool(text, expected):
    assert SessionDB._contains_cjk(text) is expected


# -- plain FTS behaviour --------------------------------------------------------

def test_search_finds_content_and_marks_the_snippet(db):
    db.create_session("s1", "cli")
    db.append_message("s1", "user", "How do I deploy with Docker?")
    db.append_message("s1", "assistant", "Use docker compose up.")
    db.append_message("s1", "assistant", "Unrelated reply.")
    results = db.search_messages("docker")
    assert len(results) == 2
    assert all(">>>" in r["snippet"] and "<<<" in r["snippet"] for r in results)
    assert any(">>>docker<<<" in r["snippet"].lower() for r in results)


def test_result_fields(db):
    db.create_session("s1", "telegram", model="claude-x")
    message_id = db.append_message("s1", "tool", "needle in output", tool_name="shell")
    [result] = db.search_messages("needle")
    session = db.get_session("s1")
    assert result["id"] == message_id
    assert (result["session_id"], result["role"], result["tool_name"]) == ("s1", "tool", "shell")
    assert (result["source"], result["model"]) == ("telegram", "claude-x")
    assert result["session_started"] == session["started_at"]
    assert result["timestamp"] == db.get_messages("s1")[0]["timestamp"]
    assert {"snippet", "context"} <= set(result)
    assert "content" not in result


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_blank_query_returns_empty_list(db, query):
    session_with_messages(db, "s1", "anything at all")
    assert db.search_messages(query) == []


def test_best_match_first(db):
    session_with_messages(db, "s1", "kubernetes once among many other words here today",
                          "kubernetes kubernetes kubernetes")
    results = db.search_messages("kubernetes")
    assert results[0]["snippet"].count(">>>") == 3


def test_boolean_and_phrase_syntax(db):
    session_with_messages(db, "s1", "alpha beta", "alpha gamma", "beta gamma", "gamma alpha beta")
    contents = {m["id"]: m["content"] for m in db.get_messages("s1")}

    def found(query):
        return sorted(contents[r["id"]] for r in db.search_messages(query))

    assert found("alpha beta") == ["alpha beta", "gamma alpha beta"]
    assert found('"alpha beta"') == ["alpha beta", "gamma alpha beta"]
    assert found('"beta alpha"') == []
    assert found("alpha NOT gamma") == ["alpha beta"]
    assert found("beta OR gamma") == sorted(contents.values())


def test_not_and_phrases_keep_their_meaning_when_fts_finds_nothing(db):
    session_with_messages(db, "s1", "alpha gamma", "gamma beta")
    assert db.search_messages("alpha NOT gamma") == []
    assert db.search_messages('"gamma alpha"') == []
    assert [r["snippet"] for r in db.search_messages('"gamma beta"')] == [">>>gamma beta<<<"]


def test_limit_and_offset_page_through_results(db):
    session_with_messages(db, "s1", *(f"common word {i}" for i in range(7)))
    first = db.search_messages("common", limit=3)
    second = db.search_messages("common", limit=3, offset=3)
    third = db.search_messages("common", limit=3, offset=6)
    assert (len(first), len(second), len(third)) == (3, 3, 1)
    assert len({r["id"] for r in first + second + third}) == 7


def test_positional_arguments_in_documented_order(platforms):
    results = platforms.search_messages("python", ["cli", "tool"], ["tool"], ["assistant"], 5, 0)
    assert [(r["source"], r["role"]) for r in results] == [("cli", "assistant")]


# -- hostile user input: every query finds the message that plainly contains it ---

PLAIN_TEXT_CASES = [
    ("chat-send", "Run the chat-send command now"),
    ("my-app.config.ts", "please edit my-app.config.ts today"),
    ("sp_new", "call the sp_new procedure"),
    ("TODO: fix", "TODO: fix the flaky test"),
    ("it's", "well it's done now"),
    ("50%", "upload is 50% done"),
    (".env", "copy the .env file over"),
    ("--force", "git push --force to main"),
    ("C++", "I write C++ at work"),
    ("user@host", "ssh user@host to log in"),
    ("a/b", "the path a/b is wrong"),
    ('"unterminated', "an unterminated string literal"),
    ("hello AND", "hello there friend"),
    ("OR world", "hello world"),
    ("a AND OR b", "a and b together"),
    ("(problem", "there is a problem here"),
    ("deploy*", "deployment finished"),
    ("P2.2", "milestone P2.2 reached"),
    ("simulate.p2.test.ts", "open simulate.p2.test.ts next"),
    ('"docker networking"', "docker networking is hard"),
    ("{test}", "a test case"),
    ("foo:bar", "set foo:bar in the config"),
    ("C#", "learning C# basics"),
    ("-verbose", "use -verbose for details"),
    ("a@b.com", "mail a@b.com today"),
    ("NOT working", "it is not working at all"),
]


@pytest.mark.parametrize(("query", "content"), PLAIN_TEXT_CASES, ids=[q for q, _ in PLAIN_TEXT_CASES])
def test_user_text_finds_the_message_containing_it(db, query, content):
    target = store_with_decoy(db, content)
    assert target in [r["id"] for r in db.search_messages(query)]


@pytest.mark.parametrize("query", ["***", '""', "(", "^", "*", "{}", '"', "+", "-", "\x00"])
def test_queries_with_nothing_searchable_return_empty_without_error(db, query):
    session_with_messages(db, "s1", "some content")
    assert db.search_messages(query) == []


@pytest.mark.parametrize(("query", "content"), [("NOT", "this is NOT fine"), ("OR", "logic gate: OR"),
                                                ("AND NOT", "and not ever")])
def test_a_query_of_only_operator_words_searches_the_words(db, query, content):
    target = store_with_decoy(db, content, decoy="some content")
    assert [r["id"] for r in db.search_messages(query)] == [target]


def test_compound_term_matches_as_a_unit_not_as_loose_words(db):
    hit = store_with_decoy(db, "run chat-send now", decoy="send the chat later")
    [result] = db.search_messages("chat-send")
    assert result["id"] == hit
    assert ">>>chat-send<<<" in result["snippet"]


# -- CJK -----------------------------------------------------------------------

CJK_CASES = [
    ("昨天和其他Agent的聊天记录，记忆断裂问题复现了", "记忆断裂"),
    ("今天讨论A2A通信协议的实现", "通信"),
    ("今天讨论A2A通信协议的实现", "通"),
    ("안녕하세요 반갑습니다", "안녕"),
    ("こんにちは世界", "こんにちは"),
    ("こんにちは世界", "世界"),
    ("カタカナのテスト", "カタ"),
    ("讨论Agent通信协议", "Agent通信"),
    ("讨论Agent通信协议", "agent通信"),
    ("我和youer服务连上了", "youer服务"),
    ("完成率100%完成了", "100%完成"),
]


@pytest.mark.parametrize(("content", "query"), CJK_CASES)
def test_cjk_query_finds_the_message(db, content, query):
    target = store_with_decoy(db, content)
    results = db.search_messages(query)
    assert [r["id"] for r in results] == [target]
    assert results[0]["session_id"] == "s1"


@pytest.mark.parametrize(
    ("query", "hit", "miss"),
    [("100%完成", "进度100%完成", "进度100X完成"), ("a_b完成", "a_b完成了", "axb完成了"),
     ("50%_完成", "50%_完成", "50XY完成")],
)
def test_like_wildcards_in_cjk_queries_are_literal(db, query, hit, miss):
    target = store_with_decoy(db, hit, decoy=miss)
    assert [r["id"] for r in db.search_messages(query)] == [target]


def test_cjk_query_without_matches_is_empty(db):
    session_with_messages(db, "s1", "only English here")
    assert db.search_messages("记忆断裂") == []


def test_cjk_snippet_shows_the_match_in_a_long_message(db):
    content = "前缀内容用于测试片段的居中显示效果好的" * 6 + "记忆断裂" + "后缀内容也需要足够长才能测试截断效果" * 6
    session_with_messages(db, "s1", content)
    [result] = db.search_messages("记忆断裂")
    assert ">>>记忆断裂<<<" in result["snippet"]
    assert len(result["snippet"]) < len(content)


def test_cjk_results_have_context_and_session_fields(platforms):
    [result] = platforms.search_messages("cli: 关于记忆的问题")
    assert result["session_id"] == "s_cli"
    assert (result["source"], result["model"]) == ("cli", "cli-model")
    assert result["session_started"] == platforms.get_session("s_cli")["started_at"]
    assert [c["role"] for c in result["context"]] == ["user", "assistant"]


# -- filters, on the FTS path and the CJK path ---------------------------------------

@pytest.mark.parametrize("query", ["python", "记忆"])
@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, {("cli", "user"), ("cli", "assistant"), ("telegram", "user"), ("telegram", "assistant"),
              ("tool", "user"), ("tool", "assistant")}),
        ({"source_filter": ["telegram"]}, {("telegram", "user"), ("telegram", "assistant")}),
        ({"exclude_sources": ["tool"]}, {("cli", "user"), ("cli", "assistant"), ("telegram", "user"),
                                         ("telegram", "assistant")}),
        ({"source_filter": ["cli", "tool"], "exclude_sources": ["tool"]}, {("cli", "user"), ("cli", "assistant")}),
        ({"role_filter": ["assistant"]}, {("cli", "assistant"), ("telegram", "assistant"), ("tool", "assistant")}),
        ({"role_filter": ["assistant"], "source_filter": ["cli"]}, {("cli", "assistant")}),
        ({"source_filter": []}, set()),
    ],
    ids=["none", "source", "exclude", "include-and-exclude", "role", "role-and-source", "empty-source-list"],
)
def test_filters(platforms, query, filters, expected):
    results = platforms.search_messages(query, **filters)
    assert {(r["source"], r["role"]) for r in results} == expected
    assert len(results) == len(expected)


def test_no_filter_searches_every_platform(db):
    sources = ["cli", "telegram", "signal", "homeassistant", "acp", "matrix"]
    for source in sources:
        session_with_messages(db, f"s_{source}", "universal search test", source=source)
    assert {r["source"] for r in db.search_messages("universal search test")} == set(sources)


# -- context -------------------------------------------------------------------

def test_context_uses_neighbours_of_the_same_session_when_sessions_interleave(db):
    db.create_session("s1", "cli")
    db.create_session("s2", "cli")
    script = [("s1", "before needle"), ("s2", "other one"), ("s1", "needle match"), ("s2", "other two"),
              ("s1", "after needle"), ("s2", "other three")]
    for sid, content in script:
        db.append_message(sid, "user", content)
    [hit] = [r for r in db.search_messages('"needle match"') if r["session_id"] == "s1"]
    assert "needle match" in hit["snippet"]
    assert [c["content"] for c in hit["context"]] == ["before needle", "needle match", "after needle"]


def test_context_at_session_edges(db):
    session_with_messages(db, "s1", "first edge", "middle", "last edge")
    session_with_messages(db, "solo", "lonely edge")
    by_content = {r["context"][0]["content"] if r["session_id"] == "solo" else r["snippet"]: r["context"]
                  for r in db.search_messages("edge")}
    assert [c["content"] for c in by_content["lonely edge"]] == ["lonely edge"]
    assert [c["content"] for c in by_content["first >>>edge<<<"]] == ["first edge", "middle"]
    assert [c["content"] for c in by_content["last >>>edge<<<"]] == ["middle", "last edge"]


def test_context_entries_are_role_and_content_cut_to_200(db):
    db.create_session("s1", "cli")
    db.append_message("s1", "user", "x" * 500)
    db.append_message("s1", "assistant", "findme " + "y" * 500)
    db.append_message("s1", "tool", None, tool_call_id="c1")
    [result] = db.search_messages("findme")
    assert [set(c) for c in result["context"]] == [{"role", "content"}] * 3
    assert [c["role"] for c in result["context"]] == ["user", "assistant", "tool"]
    assert [len(c["content"]) for c in result["context"]] == [200, 200, 0]


def test_context_with_equal_timestamps_breaks_ties_by_id(db):
    session_with_messages(db, "s1", "one", "two target", "three")
    db._conn.execute("UPDATE messages SET timestamp = 5.0")
    [result] = db.search_messages("target")
    assert [c["content"] for c in result["context"]] == ["one", "two target", "three"]


def test_context_of_a_page_larger_than_one_statement_holds(db):
    """Context comes from statements of 200 matches (SQLite's bound-value and compound-select limits):
    every match of a 600-result page gets its own neighbours, in the page's order."""
    db.create_session("s1", "cli")
    for i in range(600):
        db.append_message("s1", "user", f"before {i}")
        db.append_message("s1", "assistant", f"needle {i}")
    db.append_message("s1", "user", "the end")
    results = db.search_messages("needle", limit=600)
    assert len(results) == 600
    for result in results:
        i = int(result["snippet"].split()[-1])
        after = f"before {i + 1}" if i < 599 else "the end"
        assert [c["content"] for c in result["context"]] == [f"before {i}", f"needle {i}", after]


# -- multimodal content ------------------------------------------------------------

@pytest.mark.parametrize("query", ["picture", "图片", "这张图片"])
def test_search_finds_text_parts_of_multimodal_content(db, query):
    parts = [{"type": "text", "text": "What is in this picture? 这张图片里有什么"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    target = store_with_decoy(db, parts)
    results = db.search_messages(query)
    assert [r["id"] for r in results] == [target]
    assert results[0]["context"][0]["content"].startswith("What is in this picture?")


# -- properties ------------------------------------------------------------------

_QUERY_TEXT = st.lists(
    st.one_of(
        st.sampled_from([*'"*+-^():{}.,\'@/#%_\\ \t\x00', " AND ", " OR ", " NOT ", "NEAR", "content:"]),
        st.text(max_size=3),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=_QUERY_TEXT)
@example(query="a AND AND b")
@example(query="NEAR(a b, 2)")
@example(query='"a" OR')
@example(query="x\x00y")
def test_sanitized_query_is_valid_fts5_and_search_never_raises(db, query):
    fts_query = sanitize(query)
    if fts_query:
        db._conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (fts_query,)).fetchall()
    assert isinstance(db.search_messages(query), list)


_counter = itertools.count()


def _words(text: str) -> list[str]:
    """Maximal runs of str.isalnum() characters."""
    return ["".join(g) for alnum, g in itertools.groupby(text, key=str.isalnum) if alnum]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=60).filter(lambda t: any(c.isalnum() for c in t)),
       pick=st.integers(min_value=0, max_value=30))
@example(text="NOT", pick=0)  # once dropped as a dangling operator, leaving nothing to search
@example(text="\x000\u0b58", pick=0)  # leading NUL hid the text from the LIKE fallback
@example(text="deploy OR release", pick=1)
def test_any_appended_message_is_found_by_one_of_its_words(db, text, pick):
    source = f"src{next(_counter)}"
    db.create_session(source, source)
    message_id = db.append_message(source, "user", text)
    words = _words(text)
    word = words[pick % len(words)]
    results = db.search_messages(word, source_filter=[source])
    assert message_id in [r["id"] for r in results]


def test_search_on_closed_store_raises_programming_error(db_path):
    store = SessionDB(db_path)
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        store.search_messages("x")


def _newer_store(path, fts_sql, triggers=True):
    """A v6 store as a newer Hermes (schema 30) reshaped its search index: `fts_sql` creates it."""
    with SessionDB(path) as store:
        store.create_session("s1", "cli")
        store.append_message("s1", "user", "the lisbon trip is booked")
        store.append_message("s1", "assistant", "enjoy lisbon")
        store.append_message("s1", "tool", "ok", tool_name="terminal", tool_call_id="c1")
        store.append_message("s1", "user", "a user asked about porto")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DROP TABLE messages_fts")
        for (name,) in [] if triggers else conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"
                                                        ).fetchall():
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute(fts_sql)
        conn.execute("UPDATE schema_version SET version = 30")
    conn.close()
    return path


def _cli_search(path, query):
    from click.testing import CliRunner

    from hermes_state_tools.cli import main

    return CliRunner().invoke(main, ["--db", str(path), "search", query, "--json"])


@pytest.mark.parametrize(("columns", "triggers", "tool_found"),
                         [("role, content", True, False), ("content, tool_name", False, True)])
def test_a_newer_hermes_index_over_more_columns_is_searched_as_hermes_searches_it(tmp_path, columns, triggers,
                                                                                  tool_found):
    """A newer Hermes may index more than the text: a tool name is a match, as in Hermes' own search
    over its index's content, tool_name and tool_calls (schema 23 on); a role (a fork's column) is
    none, and the snippet is cut from the text. Its triggers may have other names: a read needs only
    the index."""
    path = _newer_store(tmp_path / "state.db",
                        f"CREATE VIRTUAL TABLE messages_fts USING fts5({columns}, content=messages, content_rowid=id)",
                        triggers)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")

    def search(query: str) -> list[dict]:
        result = _cli_search(path, query)
        results = json.loads(result.stdout)["results"]
        assert result.exit_code == (0 if results else 1), result.output
        return results

    assert [r["snippet"] for r in search("user")] == ["a >>>user<<< asked about porto"]
    assert [r["tool_name"] for r in search("terminal")] == (["terminal"] if tool_found else [])
    assert sorted(r["snippet"] for r in search("lisbon")) == ["enjoy >>>lisbon<<<", "the >>>lisbon<<< trip is booked"]


def test_a_newer_hermes_file_without_the_v6_index_is_not_sent_to_repair(tmp_path):
    path = _newer_store(tmp_path / "state.db", "CREATE VIRTUAL TABLE message_search USING fts5(content)")
    result = _cli_search(path, "lisbon")
    assert result.exit_code == 1
    assert "newer Hermes (schema 30)" in result.stderr and "repair" not in result.stderr
