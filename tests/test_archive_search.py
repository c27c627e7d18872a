"""`archive search` across hosts: the local search's syntax, filters, snippets, newest first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from archive_helpers import push, run

from hermes_state_tools import SessionDB


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two hosts whose session ids overlap, with words, phrases, CJK and roles to tell apart: one archive
    for the module's searches, which only read it."""
    from pg import new_database

    for archive_url in new_database():
        yield _push_fleet(tmp_path_factory.mktemp("fleet"), archive_url)


def _push_fleet(tmp_path: Path, archive_url: str) -> str:
    texts = {
        "laptop": [("user", "deploy nginx on the laptop"), ("assistant", "nginx restarted after deploy"),
                   ("tool", "disk usage 93 percent"), ("user", "東京の天気は晴れです"), ("user", "東京nginxが落ちた")],
        "server": [("user", "configure caddy instead of nginx"), ("assistant", "deployment finished"),
                   ("user", "the weather in 大阪 is rainy"), ("tool", "kubectl apply done")],
    }
    for host, messages in texts.items():
        db = tmp_path / f"{host}.db"
        with SessionDB(db) as store:
            store.create_session("same-id", "cli" if host == "laptop" else "telegram")
            for role, text in messages:
                store.append_message("same-id", role, text)
        push(db, archive_url, host)
    return archive_url


def _hits(url: str, query: str, *options: str) -> list[tuple[str, str]]:
    code, doc, err = run("archive", "search", url, query, "--json", *options)
    assert code == 0, err
    for result in doc["results"]:
        assert {"host", "session_id", "role", "snippet", "timestamp"} <= set(result)
    return [(r["host"], r["snippet"].replace(">>>", "").replace("<<<", "")) for r in doc["results"]]


@pytest.mark.parametrize(("query", "expected"), [
    ("nginx", {"deploy nginx on the laptop", "nginx restarted after deploy", "configure caddy instead of nginx",
               "東京nginxが落ちた"}),
    ("ngin*", {"deploy nginx on the laptop", "nginx restarted after deploy", "configure caddy instead of nginx",
               "東京nginxが落ちた"}),
    ("gin", set()),
    ('"nginx restarted"', {"nginx restarted after deploy"}),
    ("caddy OR kubectl", {"configure caddy instead of nginx", "kubectl apply done"}),
    ("nginx NOT caddy", {"deploy nginx on the laptop", "nginx restarted after deploy", "東京nginxが落ちた"}),
    ("nginx 東京", {"東京nginxが落ちた"}),
    ("deploy*", {"deploy nginx on the laptop", "nginx restarted after deploy", "deployment finished"}),
    ("東京", {"東京の天気は晴れです", "東京nginxが落ちた"}),
    ("天気 OR 大阪", {"東京の天気は晴れです", "the weather in 大阪 is rainy"}),
    ("weather 大阪", {"the weather in 大阪 is rainy"}),
    ("absent", set()),
])
def test_the_local_syntax_finds_what_it_finds_locally(fleet: str, query: str, expected: set[str]) -> None:
    assert {text for _host, text in _hits(fleet, query)} == expected


def test_filters_narrow_by_host_source_and_role(fleet: str) -> None:
    assert {h for h, _ in _hits(fleet, "nginx", "--host", "server")} == {"server"}
    assert {h for h, _ in _hits(fleet, "caddy OR restarted", "--source", "cli")} == {"laptop"}
    assert _hits(fleet, "nginx", "--role", "assistant") == [("laptop", "nginx restarted after deploy")]


def test_dates_bound_the_search(fleet: str) -> None:
    assert _hits(fleet, "nginx", "--until", "2000-01-01") == []
    assert len(_hits(fleet, "nginx", "--since", "2000-01-01")) == 4


def test_results_are_newest_first_and_bounded_by_the_limit(fleet: str) -> None:
    code, doc, _ = run("archive", "search", fleet, "nginx", "--json", "--limit", "2")
    assert code == 0 and len(doc["results"]) == 2
    stamps = [r["timestamp"] for r in doc["results"]]
    assert stamps == sorted(stamps, reverse=True)
    assert doc["results"][0]["snippet"].count(">>>nginx<<<") == 1


def test_a_long_text_is_stored_whole_and_indexed_in_part(tmp_path: Path, archive_url: str) -> None:
    long_output = ("lorem ipsum " * 200_000) + " needle-at-the-end"  # far past a tsvector's 1 MB
    db = tmp_path / "a.db"
    with SessionDB(db) as store:
        store.create_session("s", "cli")
        store.append_message("s", "tool", "early marker " + long_output)
    push(db, archive_url, "h")
    assert len(_hits(archive_url, "marker")) == 1
    code, out, _ = run("archive", "export", archive_url, "--host", "h")
    assert code == 0 and long_output in out


def test_an_empty_archive_finds_nothing(archive_url: str) -> None:
    assert _hits(archive_url, "nginx") == []
    code, doc, _ = run("archive", "status", archive_url, "--json")
    assert code == 0 and doc["hosts"] == [] and doc["schema_version"] is None


@pytest.mark.parametrize("query", ["nginx", '"nginx restarted"', "caddy OR kubectl", "nginx NOT caddy", "deploy*",
                                   "東京", "nginx 東京", "天気 OR 大阪"])
def test_the_newest_first_walk_finds_what_collecting_every_match_finds(
        fleet: str, query: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_state_tools.archive import search

    collected = _hits(fleet, query)
    monkeypatch.setattr(search, "FEW_MATCHES", -1)  # every term counts as common: walked newest first
    assert _hits(fleet, query) == collected


def test_a_rare_term_is_answered_in_two_statements(fleet: str) -> None:
    """A search's latency is mostly its round trips: the estimate and the search, nothing around them."""
    import psycopg

    from hermes_state_tools.archive.search import SearchFilters, run_search

    statements: list[str] = []

    class Counting(psycopg.Cursor):  # type: ignore[type-arg]
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            statements.append(str(query))
            return super().execute(query, params, **kwargs)

    with psycopg.connect(fleet, autocommit=True, cursor_factory=Counting) as pg:
        found = run_search(pg, "kubectl", SearchFilters(), 20)
        assert [r["host"] for r in found] == ["server"]
        assert len(statements) == 2 and statements[0].startswith("EXPLAIN")
        statements.clear()
        assert run_search(pg, "kubectl", SearchFilters(host="laptop"), 20) == []
        assert len(statements) == 2
