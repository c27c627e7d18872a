"""A v6 file opened by a Hermes of schema 23 or later (fixtures/hermes-late, made by Hermes' own code):
`check` names the hazard on a layout it does not know, read-only, and the index state is Hermes' own."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from damage import cli, cli_json, raw
from helpers import file_digests

from hermes_state_tools.maintenance.checks import check_report
from hermes_state_tools.store.sqldump import load_sql

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hermes-late"
NAME = "v6-opened-by-v26"
RUN = json.loads((FIXTURES / f"{NAME}.json").read_text(encoding="utf-8"))


def fts_integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        conn.close()
    return "ok"


def matches(path: Path, word: str) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? "
                                           "ORDER BY rowid", (word,))]
    finally:
        conn.close()


@pytest.fixture
def opened(tmp_path: Path) -> Path:
    """The file as Hermes 26 left it: the dump, then Hermes' own writes into the indexes on opening."""
    path = tmp_path / "state.db"
    load_sql((FIXTURES / f"{NAME}.sql").read_text(encoding="utf-8"), path)
    raw(path, *RUN["open"]["fts_writes"])
    return path


def test_the_fixture_is_the_index_state_hermes_left(opened):
    assert fts_integrity(opened) == RUN["after_open"]["fts_integrity"]["messages_fts"] != "ok"
    raw(opened, RUN["plain_edit"]["statement"])
    assert fts_integrity(opened) == RUN["plain_edit"]["file"]["fts_integrity"]["messages_fts"]
    assert {word: matches(opened, word) for word in RUN["plain_edit"]["index_rowids"]} == \
        RUN["plain_edit"]["index_rowids"]


def test_check_names_the_hazard_on_the_later_layout_without_writing(opened):
    before = file_digests(opened)
    report = check_report(opened)
    assert file_digests(opened) == before
    assert report.schema_newer
    kinds = sorted(f.kind for f in report.findings)
    assert kinds == ["fts_out_of_sync", "fts_trigger_hazard"]
    hazard = next(f for f in report.findings if f.kind == "fts_trigger_hazard")
    assert "hermes sessions optimize-storage" in hazard.detail and "--schema 17" in hazard.detail
    assert len(hazard.detail.splitlines()) == 1


def test_check_names_the_hazard_before_the_index_drifts(tmp_path):
    path = tmp_path / "state.db"  # the dump alone: Hermes' triggers, an index that agrees with the text
    load_sql((FIXTURES / f"{NAME}.sql").read_text(encoding="utf-8"), path)
    assert [f.kind for f in check_report(path).findings] == ["fts_trigger_hazard"]
    raw(path, RUN["plain_edit"]["statement"])
    assert sorted(f.kind for f in check_report(path).findings) == ["fts_out_of_sync", "fts_trigger_hazard"]


def test_the_cli_reports_it_and_repair_refuses_the_unknown_layout(opened):
    code, doc = cli_json("--db", opened, "check")
    assert code == 1 and doc["schema_newer"] is True
    assert "fts_trigger_hazard" in {p["kind"] for p in doc["problems"]}
    before = file_digests(opened)
    result = cli("--db", opened, "repair")
    assert result.exit_code == 3 and file_digests(opened) == before


def test_a_file_hermes_made_in_its_own_layout_is_left_to_the_file_level_checks(opened):
    raw(opened, "DROP TABLE messages_fts",  # what optimize-storage leaves: three columns, no v6 table
        "CREATE VIRTUAL TABLE messages_fts USING fts5(content, tool_name, tool_calls, content=messages, "
        "content_rowid=id)")
    report = check_report(opened)
    assert report.findings == () and {name for name, _ in report.skipped} >= {"fts_sync", "missing_triggers"}
