"""Importing and merging into every later Hermes layout keeps that layout's own form.

Each file here is created by `layout(N).create`, which replays the schema Hermes' own code of that
version creates (hermes_state_tools/layouts/vN.sql), and rows are written the way Hermes' append_message
writes them. What an import or a merge then writes must look, to that Hermes, like its own rows: the
same triggers and search-index text, `active = 1` on every new message, the version row unchanged, and
every later column a merged file held carried into the same column.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from hermes_state_tools.core.layouts import LATER_VERSIONS, layout
from tests.hermes_fixtures import load as load_hermes
from tests.import_helpers import cli, import_json, query
from tests.layout_helpers import hermes_objects as objects
from tests.layout_helpers import schema_entries, search_index_agrees

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "fixtures" / "legacy-home"


def hermes_file(path: Path, version: int, fork_column: str = "") -> Path:
    """An empty database of schema `version`, as that Hermes creates it (WAL, like Hermes); a
    `fork_column` is added to `sessions` as a fork's own layout would."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN")
    for statement in layout(version).statements:
        if fork_column and statement.startswith("CREATE TABLE sessions"):
            statement = statement.replace("id TEXT PRIMARY KEY,", f"id TEXT PRIMARY KEY, {fork_column},")
        conn.execute(statement)
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    conn.execute("COMMIT")
    conn.close()
    return path


def hermes_rows(path: Path) -> None:
    """Rows as a later Hermes writes them: a session with a tool call, a rewound turn, an archived one."""
    conn = sqlite3.connect(path, isolation_level=None)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
    session_columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    conn.execute("INSERT INTO sessions (id, source, started_at, ended_at, end_reason, message_count, "
                 "tool_call_count) VALUES ('h1', 'cli', 100.0, 140.0, 'user_exit', 4, 1)")
    rows = [("user", "check the disk 東京", None, None, None, 101.0),
            ("assistant", None, '[{"id": "c1", "type": "function", "function": {"name": "terminal"}}]', None, None,
             102.0),
            ("tool", "Filesystem 91% used", None, "terminal", "c1", 103.0),
            ("assistant", "Root is at 91%.", None, None, None, 104.0)]
    for role, content, calls, tool, call_id, when in rows:
        conn.execute("INSERT INTO messages (session_id, role, content, tool_calls, tool_name, tool_call_id, timestamp) "
                     "VALUES ('h1', ?, ?, ?, ?, ?, ?)", (role, content, calls, tool, call_id, when))
    if "reasoning_content" in columns:
        conn.execute("UPDATE messages SET reasoning_content = 'thinking' WHERE id = 4")
    if "active" in columns:
        conn.execute("UPDATE messages SET active = 0 WHERE id = 4")
    if "archived" in session_columns:
        conn.execute("UPDATE sessions SET archived = 1 WHERE id = 'h1'")
    conn.close()


@pytest.mark.parametrize("version", LATER_VERSIONS)
def test_import_writes_in_the_layouts_own_form(tmp_path: Path, version: int) -> None:
    db = hermes_file(tmp_path / "state.db", version)
    hermes_rows(db)
    before = objects(db)
    code, doc = import_json(db, SAMPLE)
    assert code in (0, 1) and doc["sessions_created"] > 0  # the sample holds one truncated line (exit 1)
    assert objects(db) == before  # no trigger, index or search table in another layout's form
    assert query(db, "SELECT version FROM schema_version") == [{"version": version}]
    search_index_agrees(db)
    if "active" in layout(version).column_names("messages"):
        assert query(db, "SELECT COUNT(*) AS n FROM messages WHERE active IS NOT 1 AND session_id != 'h1'") == [
            {"n": 0}]
    if version >= 11:  # the inline index holds tool names: Hermes finds the imported tool rows by them
        named = query(db, "SELECT COUNT(*) AS n FROM messages WHERE tool_name IS NOT NULL")[0]["n"]
        found = query(db, "SELECT COUNT(*) AS n FROM messages_fts WHERE messages_fts MATCH 'terminal'")[0]["n"]
        assert named and found >= named


@pytest.mark.parametrize("version", [10, 11, 17])
def test_a_reconciled_active_column_without_default_still_gets_active_1(tmp_path: Path, version: int) -> None:
    """Hermes issue #51646: a reconcile added `active` without its default; an INSERT leaving it out stores
    NULL and every Hermes loader hides the message. New rows get 1 written."""
    db = hermes_file(tmp_path / "state.db", version)
    conn = sqlite3.connect(db)
    if "active" not in {row[1] for row in conn.execute("PRAGMA table_info(messages)")}:
        conn.execute("ALTER TABLE messages ADD COLUMN active INTEGER")
    conn.commit()
    conn.close()
    import_json(db, SAMPLE)
    assert query(db, "SELECT COUNT(*) AS n FROM messages WHERE active IS NULL") == [{"n": 0}]


def test_merge_carries_a_later_layouts_columns_into_the_same_columns(tmp_path: Path) -> None:
    other = hermes_file(tmp_path / "other.db", 17)
    hermes_rows(other)
    db = hermes_file(tmp_path / "state.db", 17)
    result = cli("--db", db, "merge", other, "--json", "--no-progress")
    assert result.exit_code == 0, result.stderr
    [session] = query(db, "SELECT archived, message_count FROM sessions WHERE id = 'h1'")
    assert session["archived"] == 1
    rows = query(db, "SELECT role, active, compacted, reasoning_content FROM messages ORDER BY id")
    assert [r["active"] for r in rows] == [1, 1, 1, 0]
    assert rows[3]["reasoning_content"] == "thinking" and {r["compacted"] for r in rows} == {0}
    assert query(db, "SELECT COUNT(*) AS n FROM sqlite_master WHERE name = 'hst_message_extra'") in (
        [{"n": 0}], [{"n": 1}])
    search_index_agrees(db)


def test_a_merge_of_a_later_file_into_stored_sessions_is_whole_in_one_run(tmp_path: Path) -> None:
    """Sessions both files hold (Hermes' own v17 scenario and the v16 chain over the same ids): the later
    columns the stored rows have stay in those columns, never copied into extra data, so a second merge
    of the same file finds nothing to add."""
    db = load_hermes("v17", tmp_path / "state.db")
    other = load_hermes("chain-v16", tmp_path / "other.db")
    first = json.loads(cli("--db", db, "merge", other, "--json", "--no-progress").stdout)
    assert first["ok"] and first["sessions_created"] > 0 and first["messages_skipped_duplicate"] > 0
    again = json.loads(cli("--db", db, "merge", other, "--json", "--no-progress").stdout)
    assert (again["sessions_created"], again["sessions_updated"], again["messages_imported"],
            again["messages_enriched"]) == (0, 0, 0, 0)
    for table in ("hst_session_extra", "hst_message_extra"):
        assert query(db, f"SELECT COUNT(*) AS n FROM {table} WHERE data LIKE '%hermes_columns%'") == [{"n": 0}]


def test_into_version_6_the_later_columns_wait_in_extra_data_and_come_back(tmp_path: Path) -> None:
    other = hermes_file(tmp_path / "other.db", 17)
    hermes_rows(other)
    v6 = tmp_path / "v6.db"
    from hermes_state_tools import SessionDB

    SessionDB(v6).close()
    result = cli("--db", v6, "merge", other, "--json", "--no-progress")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0
    assert any(p["kind"] == "kept_in_extra" for p in doc["problems"])
    exported = tmp_path / "out.jsonl"
    assert cli("--db", v6, "export", "-o", exported).exit_code == 0
    back = hermes_file(tmp_path / "back.db", 17)
    code, _ = import_json(back, exported)
    assert code == 0
    rows = query(back, "SELECT active, reasoning_content FROM messages ORDER BY id")
    assert [r["active"] for r in rows] == [1, 1, 1, 0] and rows[3]["reasoning_content"] == "thinking"
    assert query(back, "SELECT archived FROM sessions WHERE id = 'h1'") == [{"archived": 1}]
    assert query(back, "SELECT COUNT(*) AS n FROM hst_message_extra WHERE data LIKE '%hermes_columns%'") == [
        {"n": 0}]


@pytest.mark.parametrize("change", ["version 31", "fork column"])
def test_an_unknown_layout_is_never_written(tmp_path: Path, change: str) -> None:
    db = hermes_file(tmp_path / "state.db", 16, "team_id TEXT NOT NULL" if change == "fork column" else "")
    if change == "version 31":
        conn = sqlite3.connect(db)
        conn.execute("UPDATE schema_version SET version = 31")
        conn.commit()
        conn.close()
    before = db.read_bytes()
    result = cli("--db", db, "import-jsonl", SAMPLE, "--no-progress")
    assert result.exit_code == 3, result.stderr
    assert ("team_id" in result.stderr) == (change == "fork column")
    assert db.read_bytes() == before


@pytest.mark.parametrize("version", [6, *LATER_VERSIONS])
def test_a_new_file_of_each_layout_is_the_one_that_hermes_creates(tmp_path: Path, version: int) -> None:
    """Byte for byte: the schema text of every object, as the empty file Hermes' own SessionDB of that
    version made (fixtures/hermes/vN-empty.sql), and what `import-jsonl --schema N` creates."""
    from tests.hermes_fixtures import load

    made = tmp_path / "made.db"
    result = cli("--db", made, "import-jsonl", SAMPLE, "--schema", str(version), "--no-progress")
    assert result.exit_code in (0, 1), result.stderr
    assert schema_entries(made) == schema_entries(load(f"v{version}-empty", tmp_path / "hermes.db"))
    assert query(made, "SELECT version FROM schema_version") == [{"version": version}]
