"""Every writing command on databases Hermes' own code made, at every version it knows.

The files are the dumps of fixtures/hermes (scripts/make_hermes_fixtures.py ran each Hermes version's
own SessionDB): each populated layout from v6 to the v17 tip, and the files one database became as
each later Hermes opened it in turn (with the columns short-lived builds left). Each command must
exit 0 and leave that Hermes' own triggers, indexes, search tables and version row as they were, and
the search indexes holding the text that layout indexes. With HERMES_GIT naming Hermes' git directory,
the same version's SessionDB then reads the result and must show every imported message, finding it
by its text (and by its tool name from v11, whose index holds tool names).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.hermes_fixtures import load, manifest, names
from tests.hermes_oracle import hermes_view
from tests.import_helpers import cli, export_bytes, query
from tests.layout_helpers import hermes_objects, search_index_agrees

LEGACY = (
    '{"role": "session_meta", "platform": "cli", "timestamp": "2026-03-01T10:10:10"}\n'
    '{"role": "user", "content": "quarkonium question", "timestamp": "2026-03-01T10:10:11"}\n'
    '{"role": "assistant", "content": null, "tool_calls": [{"id": "c9", "type": "function", '
    '"function": {"name": "zettelkasten", "arguments": "{}"}}], "timestamp": "2026-03-01T10:10:12"}\n'
    '{"role": "tool", "content": "found 3 notes", "tool_call_id": "c9", "tool_name": "zettelkasten", '
    '"timestamp": "2026-03-01T10:10:13"}\n'
    '{"role": "assistant", "content": "quarkonium answer", "timestamp": "2026-03-01T10:10:14"}\n'
)
LEGACY_ID = "20260301_101010_abcdef"
EVERY = [*names("populated"), "chain-v17-tip", "strays-v17-tip"]


def run(db: Path, *args: object) -> None:
    result = cli("--db", db, *args, "--no-progress")
    assert result.exit_code == 0, (args, result.stderr)


def legacy_home(tmp_path: Path) -> Path:
    sessions = tmp_path / "home" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / f"{LEGACY_ID}.jsonl").write_text(LEGACY, encoding="utf-8")
    return tmp_path / "home"


def _unchanged(db: Path, objects: dict[str, str], version: int) -> None:
    assert hermes_objects(db) == objects
    assert query(db, "SELECT version FROM schema_version") == [{"version": version}]
    search_index_agrees(db)


@pytest.mark.parametrize("name", EVERY)
def test_every_writing_command_keeps_the_layout(name: str, tmp_path: Path) -> None:
    db = load(name, tmp_path / "state.db")
    objects, version = hermes_objects(db), manifest()[name]["schema_version"]
    run(db, "import-jsonl", legacy_home(tmp_path))
    _unchanged(db, objects, version)
    columns = {row["name"] for row in query(db, "SELECT name FROM pragma_table_info('messages')")}
    if "active" in columns:
        assert query(db, "SELECT COUNT(*) AS n FROM messages WHERE session_id = ? AND active IS NOT 1",
                     (LEGACY_ID,)) == [{"n": 0}]
    run(db, "merge", load("v6", tmp_path / "other.db"))
    _unchanged(db, objects, version)
    for command in (["rebuild-fts"], ["repair"], ["check"], ["maintain"], ["vacuum"]):
        run(db, *command)
        _unchanged(db, objects, version)
    run(db, "prune", "--older-than", "1", "--yes")
    _unchanged(db, objects, version)
    for options in ([], ["--dry-run"]):
        result = cli("--db", db, "upgrade", *options, "--json", "--no-progress")
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert (report["from_version"], report["to_version"]) == (version, version)
    said = cli("--db", db, "upgrade", "--no-progress").stdout
    assert said == f"schema is already at version {version}; nothing to do\n"
    _unchanged(db, objects, version)


@pytest.mark.parametrize("name", names("populated"))
def test_export_then_import_into_the_same_layout_keeps_every_column(name: str, tmp_path: Path) -> None:
    db = load(name, tmp_path / "state.db")
    exported = tmp_path / "export.jsonl"
    exported.write_bytes(export_bytes(db))
    back = load(f"{name}-empty", tmp_path / "back.db")
    run(back, "import-jsonl", exported)
    for table, key in (("sessions", "id"), ("messages", "session_id, timestamp, id")):
        before = [_row(r, table) for r in query(db, f"SELECT * FROM {table} ORDER BY {key}")]
        after = [_row(r, table) for r in query(back, f"SELECT * FROM {table} ORDER BY {key}")]
        assert after == before, table


def _row(row: dict[str, object], table: str) -> dict[str, object]:
    return {k: v for k, v in row.items() if not (table == "messages" and k == "id")}


@pytest.mark.parametrize("name", names("populated"))
def test_hermes_reads_what_the_import_wrote(name: str, tmp_path: Path) -> None:
    db = load(name, tmp_path / "state.db")
    run(db, "import-jsonl", legacy_home(tmp_path))
    view = hermes_view(manifest()[name]["commit"], db, ("quarkonium", "zettelkasten"))
    assert [m["content"] for m in view["sessions"][LEGACY_ID]["messages"]] == [
        "quarkonium question", None, "found 3 notes", "quarkonium answer"]
    assert len(view["search"]["quarkonium"]) == 2
    found_by_tool = len(view["search"]["zettelkasten"])
    assert found_by_tool == (2 if manifest()[name]["schema_version"] >= 11 else 0)
    assert set(view["integrity"].values()) == {"ok"}
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT message_count, tool_call_count FROM sessions WHERE id = ?",
                            (LEGACY_ID,)).fetchone() == (4, 1)
    finally:
        conn.close()


@pytest.mark.parametrize("name", [n for n in names("populated") if manifest()[n]["schema_version"] > 6])
def test_search_finds_what_that_hermes_finds(name: str, tmp_path: Path) -> None:
    """The same messages as that version's own search_messages found in the file it wrote (its manifest
    records them): rewound ones left out, compacted-away ones found, tool names found from v11."""
    from hermes_state_tools.views.search import search_report

    db = load(name, tmp_path / "state.db")
    for query_text, found in manifest()[name]["hermes_view"]["search"].items():
        ours = sorted(hit["id"] for hit in search_report(db, query_text, limit=1000).results)
        assert ours == found, query_text


@pytest.mark.parametrize("name", [n for n in names("populated") if manifest()[n]["scenario"].get("archived")])
def test_archived_sessions_are_listed_only_with_all(name: str, tmp_path: Path) -> None:
    from hermes_state_tools.views.sessions import list_page

    db = load(name, tmp_path / "state.db")
    archived = set(manifest()[name]["scenario"]["archived"])
    assert not archived & {s["id"] for s in list_page(db, limit=1000).sessions}
    assert archived <= {s["id"] for s in list_page(db, limit=1000, show_all=True).sessions}


@pytest.mark.parametrize("name", [n for n in names("populated") if manifest()[n]["scenario"].get("rewound_messages")])
def test_sessions_show_leaves_out_rewound_messages_unless_all(name: str, tmp_path: Path) -> None:
    from hermes_state_tools.views.sessions import show_session

    db = load(name, tmp_path / "state.db")
    rewound = set(manifest()[name]["scenario"]["rewound_messages"])
    session = query(db, f"SELECT session_id FROM messages WHERE id = {min(rewound)}")[0]["session_id"]
    shown = {m["id"] for m in show_session(db, session).messages}
    assert not shown & rewound
    assert rewound <= {m["id"] for m in show_session(db, session, show_all=True).messages}
    assert sorted(shown) == manifest()[name]["hermes_view"]["messages"][session]


@pytest.mark.parametrize("name", ["v15", "v16", "v17-tip"])
def test_prune_takes_a_parents_marked_delegate_children_from_v16(name: str, tmp_path: Path) -> None:
    """Hermes 16+ deletes a subagent's session (marked `_delegate_from`) with its parent; a branch
    (`_branched_from`) and an unmarked child stay, orphaned. Before 16 every child stays."""
    db = load(name, tmp_path / "state.db")
    child, parent = "20260111_140301_5ub4g3", "20260111_140233_c0ffee"
    [row] = query(db, "SELECT source FROM sessions WHERE id = ?", (parent,))
    result = cli("--db", db, "prune", "--older-than", "1", "--source", row["source"], "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    gone = manifest()[name]["schema_version"] >= 16
    assert query(db, "SELECT COUNT(*) AS n FROM sessions WHERE id = ?", (child,)) == [{"n": 0 if gone else 1}]
    assert query(db, "SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", (child,))[0]["n"] == 0 or not gone
    assert (child in json.loads(result.stdout)["session_ids"]) == gone
    assert query(db, "SELECT COUNT(*) AS n FROM sessions WHERE source = 'subagent'") == [{"n": 0 if gone else 1}]
    search_index_agrees(db)


@pytest.mark.parametrize("name", names("populated") + names("chain"))
def test_sessions_list_shows_only_what_that_hermes_lists(name: str, tmp_path: Path) -> None:
    """The sessions Hermes' own picker lists: never an archived one, nor from v16 one its migration
    marked as delegated; from v10 a /branch child as a conversation of its own. Hermes 6 lists every
    session, children too, where this list shows the top-level ones and folds the rest under them."""
    from hermes_state_tools.views.sessions import list_page

    db = load(name, tmp_path / "state.db")
    ours = {s["id"] for s in list_page(db, limit=10_000).sessions}
    picker = set(manifest()[name]["hermes_view"]["picker"])
    if manifest()[name]["schema_version"] >= 7:
        assert ours == picker
    else:
        assert ours < picker


def test_a_count_kept_from_a_later_layout_is_recounted_where_every_row_shows(tmp_path: Path) -> None:
    """A compacted session counts only its live rows; merged into v6, where every row is live, it counts
    them all."""
    from hermes_state_tools import SessionDB

    other = load("v16-compacted", tmp_path / "other.db")
    v6 = tmp_path / "v6.db"
    SessionDB(v6).close()
    run(v6, "merge", other)
    assert query(v6, "SELECT id FROM sessions WHERE message_count != "
                     "(SELECT COUNT(*) FROM messages m WHERE m.session_id = sessions.id)") == []
    assert query(other, "SELECT COUNT(*) AS n FROM sessions WHERE message_count != "
                        "(SELECT COUNT(*) FROM messages m WHERE m.session_id = sessions.id)")[0]["n"] > 0


@pytest.mark.parametrize("name, kind", [(n, kind) for n in names("populated")
                                        for kind in ("compacted_messages", "rewound_messages")
                                        if manifest()[n]["scenario"].get(kind)])
def test_an_import_into_a_stored_session_adds_to_its_counters_as_that_hermes_appends(name: str, kind: str,
                                                                                      tmp_path: Path) -> None:
    """A compacted session counts its live rows, a rewound one every row; a message imported into either
    adds one, as `append_message` does, and leaves the count of tool calls the hidden rows hold alone."""
    db = load(name, tmp_path / "state.db")
    row = _session_holding(db, min(manifest()[name]["scenario"][kind]))
    _import_one_more(db, row["id"], tmp_path)
    _assert_one_more_counted(db, row)
    assert query(db, "SELECT COUNT(*) AS n FROM messages WHERE content = 'one more question'") == [{"n": 1}]


def _assert_one_more_counted(db: Path, before: dict[str, Any]) -> None:
    assert query(db, "SELECT message_count, tool_call_count FROM sessions WHERE id = ?", (before["id"],)) == [
        {"message_count": before["message_count"] + 1, "tool_call_count": before["tool_call_count"]}]


def _session_holding(db: Path, message_id: int) -> dict[str, Any]:
    [row] = query(db, "SELECT s.id, s.message_count, s.tool_call_count FROM sessions s "
                      "JOIN messages m ON m.session_id = s.id WHERE m.id = ?", (message_id,))
    return row


def _import_one_more(db: Path, session_id: str, tmp_path: Path, stored_meta: bool = False) -> None:
    """Import the session's own export with one user message more; `stored_meta`: a session_meta row
    appended to it first, as a writer that stores one counts it (the import moves it to extra data)."""
    [line] = export_bytes(db, "--session", session_id).splitlines()
    exported = json.loads(line)
    last = exported["messages"][-1]
    if stored_meta:
        with sqlite3.connect(db) as conn:
            conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES "
                         "(?, 'session_meta', '{\"platform\": \"cli\"}', ?)", (session_id, last["timestamp"] + 1))
            conn.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (session_id,))
    exported["messages"].append({**{k: v for k, v in last.items() if k != "id"}, "role": "user",
                                 "content": "one more question", "tool_calls": None, "tool_name": None,
                                 "tool_call_id": None, "timestamp": last["timestamp"] + 60})
    (tmp_path / "more.jsonl").write_text(json.dumps(exported) + "\n", encoding="utf-8")
    run(db, "import-jsonl", tmp_path / "more.jsonl")


def test_stored_rows_moved_to_extra_data_leave_a_compacted_session_counting_its_live_rows(tmp_path: Path) -> None:
    db = load("v17-tip", tmp_path / "state.db")
    row = _session_holding(db, min(manifest()["v17-tip"]["scenario"]["compacted_messages"]))
    _import_one_more(db, row["id"], tmp_path, stored_meta=True)
    _assert_one_more_counted(db, row)
    assert query(db, "SELECT COUNT(*) AS n FROM messages WHERE role = 'session_meta'") == [{"n": 0}]


def test_an_import_recounts_a_stored_count_no_hermes_keeps(tmp_path: Path) -> None:
    """A NULL count, or one below the live rows, is recounted as `repair` recounts it: check is clean."""
    db = load("v17-tip", tmp_path / "state.db")
    row = _session_holding(db, min(manifest()["v17-tip"]["scenario"]["compacted_messages"]))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET message_count = NULL WHERE id = ?", (row["id"],))
    _import_one_more(db, row["id"], tmp_path)
    assert query(db, "SELECT message_count FROM sessions WHERE id = ?", (row["id"],)) == [
        {"message_count": query(db, "SELECT COUNT(*) AS n FROM messages WHERE session_id = ?", (row["id"],))[0]["n"]}]
    assert cli("--db", db, "check", "--no-progress").exit_code == 0


@pytest.mark.parametrize("name", ["v6", "v11", "v16-compacted", "v17-tip"])
def test_its_own_export_and_a_copy_of_it_bring_nothing_and_leave_the_file_as_it_was(name: str,
                                                                                    tmp_path: Path) -> None:
    """Re-importing what the file holds writes nothing: no row, no extra data, and not its schema
    either (a re-run beside Hermes leaves its triggers and its schema cookie alone)."""
    db = load(name, tmp_path / "state.db")
    copy = load(name, tmp_path / "copy.db")
    (tmp_path / "own.jsonl").write_bytes(export_bytes(db))

    def state() -> tuple[list[str], int]:
        with sqlite3.connect(db) as conn:
            return list(conn.iterdump()), conn.execute("PRAGMA schema_version").fetchone()[0]

    before = state()
    run(db, "import-jsonl", tmp_path / "own.jsonl")
    run(db, "merge", copy)
    assert state() == before


@pytest.mark.parametrize("into, said", [("v11-empty", True), ("v6-empty", True), ("v16-compacted-empty", False)])
def test_a_merge_says_which_hidden_rows_a_layout_without_the_column_shows(into: str, said: bool,
                                                                         tmp_path: Path) -> None:
    """Rewound and compacted-away messages and an archived session are live in a layout that has no
    column to hide them: the merge says so, session by session, with how many; a layout that hides
    them says nothing."""
    other = load("v16-compacted", tmp_path / "other.db")
    db = load(into, tmp_path / "state.db")
    result = cli("--db", db, "merge", other, "--json", "--no-progress")
    assert result.exit_code == 0, result.stderr
    shown = {p["file"].split()[1]: p["detail"] for p in json.loads(result.stdout)["problems"]
             if p["kind"] == "shown_here"}
    scenario = manifest()["v16-compacted"]["scenario"]
    if not said:
        assert shown == {}
        return
    assert set(shown) == {query(other, "SELECT session_id FROM messages WHERE id = ?", (ids[0],))[0]["session_id"]
                          for ids in (scenario["rewound_messages"], scenario["compacted_messages"])
                          } | set(scenario["archived"])
    assert any(f"{len(scenario['rewound_messages'])} message(s) rewound" in d for d in shown.values())
    assert any(f"{len(scenario['compacted_messages'])} message(s) compacted away" in d for d in shown.values())
    assert shown[scenario["archived"][0]].startswith("the session, archived there, is listed here")


@pytest.mark.parametrize("name, indexes", [("v6", ["messages_fts", "hst_messages_trigram"]),
                                           ("v10", ["messages_fts", "messages_fts_trigram"]),
                                           ("v17-tip", ["messages_fts", "messages_fts_trigram"])])
def test_rebuild_fts_names_every_search_index_it_rebuilt(name: str, indexes: list[str], tmp_path: Path) -> None:
    """Each of the layout's own, and this tool's CJK index where a layout before 10 holds CJK text."""
    db = load(name, tmp_path / "state.db")
    result = cli("--db", db, "rebuild-fts", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["indexes"] == indexes
    said = cli("--db", db, "rebuild-fts").stdout
    assert said.startswith(f"rebuilt {' and '.join(indexes)} from ")
    search_index_agrees(db)


def test_hermes_columns_that_are_no_object_carry_nothing(tmp_path: Path) -> None:
    line = {"format": "hermes-state-export/1", "session": {"id": "x1", "source": "cli", "started_at": 1.0e9},
            "extra": {"hermes_columns": "not an object"},
            "messages": [{"role": "user", "content": "hi", "timestamp": 1.0e9 + 1, "extra": {"hermes_columns": [1]}}]}
    exported = tmp_path / "x.jsonl"
    exported.write_text(json.dumps(line) + "\n", encoding="utf-8")
    db = load("v17-empty", tmp_path / "state.db")
    run(db, "import-jsonl", exported)
    assert query(db, "SELECT content, active FROM messages") == [{"content": "hi", "active": 1}]
