"""The databases made by Hermes' own code load back whole, and hold what their manifest says.

Without Hermes: every dump loads into a file that passes integrity_check and the FTS5
integrity-check of every FTS table, with the manifest's schema version and counts, and the
scenario's notable rows in the state Hermes left them. With HERMES_GIT set, each loaded dump is
opened by the version that made it, which must show exactly what it showed of its own file.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from hermes_state_tools.core.schema import create_schema, describe
from scripts.make_hermes_fixtures import fts_tables, integrity_problems
from tests.hermes_fixtures import FIXTURE_DIR, load, manifest, names
from tests.hermes_oracle import hermes_view, summarize


def _open(name: str, tmp_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(load(name, tmp_path)))
    conn.row_factory = sqlite3.Row
    return conn


def _column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


def test_the_manifest_names_every_dump_and_nothing_else():
    on_disk = {p.stem for p in FIXTURE_DIR.glob("*.sql")}
    assert on_disk == set(manifest())
    assert {"v6", "v11", "v16", "v17-tip", "chain-v17-tip", "v6-empty"} <= on_disk


@pytest.mark.parametrize("name", names())
def test_each_dump_loads_into_a_sound_file_with_the_manifest_counts(name, tmp_path):
    entry = manifest()[name]
    conn = _open(name, tmp_path)
    assert integrity_problems(conn) == []
    assert fts_tables(conn) == entry["fts_tables"] != []
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == entry["schema_version"]
    assert conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == entry["sessions"]
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == entry["messages"]


@pytest.mark.parametrize("name", names("populated") + names("chain") + names("strays"))
def test_the_scenario_rows_are_in_the_state_hermes_left_them(name, tmp_path):
    scenario = manifest()[name]["scenario"]
    conn = _open(name, tmp_path)
    for mid in scenario.get("rewound_messages", []):
        assert tuple(conn.execute("SELECT active FROM messages WHERE id = ?", (mid,)).fetchone()) == (0,)
    flags = "active, compacted" if _column(conn, "messages", "compacted") else "active, 1"
    for mid in scenario.get("compacted_messages", []):
        assert tuple(conn.execute(f"SELECT {flags} FROM messages WHERE id = ?", (mid,)).fetchone()) == (0, 1)
    for sid in scenario.get("archived", []):
        assert conn.execute("SELECT archived FROM sessions WHERE id = ?", (sid,)).fetchone()[0] == 1
    for mid in scenario.get("observed_messages", []):
        assert conn.execute("SELECT observed FROM messages WHERE id = ?", (mid,)).fetchone()[0] == 1
    for mid in scenario.get("multimodal_messages", []):
        content = conn.execute("SELECT content FROM messages WHERE id = ?", (mid,)).fetchone()[0]
        assert content.startswith("\x00json:") and json.loads(content[len("\x00json:"):])[1]["type"] == "image_url"
    for sid in scenario["delegate_children"]:
        assert conn.execute("SELECT parent_session_id FROM sessions WHERE id = ?", (sid,)).fetchone()[0]
        assert (sid in manifest()[name]["delegate_marked"]) == (manifest()[name]["schema_version"] >= 16)


def test_features_appear_where_their_version_brings_them(tmp_path):
    assert not _column(_open("v13", tmp_path), "messages", "active")
    assert _column(_open("v14-active", tmp_path), "messages", "active")
    assert "compacted_messages" not in manifest()["v16-head"]["scenario"]
    assert "compacted_messages" in manifest()["v16-archive-compact"]["scenario"]
    assert not _column(_open("v16-archive-compact", tmp_path), "messages", "compacted")
    assert _column(_open("v16-compacted", tmp_path), "messages", "compacted")
    assert manifest()["v11"]["fts_tables"] == ["messages_fts", "messages_fts_trigram"]
    assert manifest()["v9"]["fts_tables"] == ["messages_fts"]


def test_short_lived_builds_leave_their_columns_in_the_migrated_file(tmp_path):
    conn = _open("strays-v17-tip", tmp_path)
    assert _column(conn, "sessions", "handoff_pending") and _column(conn, "sessions", "icon")
    assert _column(conn, "messages", "anthropic_content_blocks")
    assert not _column(_open("chain-v17-tip", tmp_path), "sessions", "icon")


def test_hermes_v6_creates_the_schema_the_toolkit_knows_as_v6(tmp_path):
    ours = sqlite3.connect(":memory:")
    create_schema(ours, 6)
    assert describe(_open("v6-empty", tmp_path)) == describe(ours)


@pytest.mark.parametrize("name", names())
def test_hermes_shows_of_each_loaded_dump_what_it_showed_of_its_own_file(name, tmp_path):
    entry = manifest()[name]
    view = hermes_view(entry["commit"], load(name, tmp_path))
    assert summarize(view) == entry["hermes_view"]
    assert set(view["integrity"].values()) == {"ok"}
