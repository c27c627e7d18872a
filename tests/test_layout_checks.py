"""check, repair, rebuild-fts, maintain and vacuum on every known layout, each in that layout's own form.

The files are built as each Hermes builds them: the layout's own statements (core/layouts.py), rows
written through its own triggers the way its `append_message` writes them (counters kept per append),
and on a layout with `active` a rewound turn (rows made inactive, message_count kept).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import hermes_fixtures
import pytest
from click.testing import CliRunner
from damage import HERMES_INLINE_UPDATE
from helpers import raw_scalar

from hermes_state_tools.cli import main
from hermes_state_tools.core.layouts import known_versions, layout, normalized
from hermes_state_tools.maintenance.checks import check_file
from hermes_state_tools.maintenance.repair import repair_file
from hermes_state_tools.search.trigram import TRIGRAM_TABLE

LATER = tuple(v for v in known_versions() if v > 6)
PLANTED_ON = (6, 10, 11, 17)
CALLS = json.dumps([{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}])

# session id, parent, messages (role, content, tool_calls, tool_name)
SESSIONS = (
    ("s1", None, (("user", "deploy the staging box 東京サーバー", None, None), ("assistant", None, CALLS, None),
                  ("tool", "disk ok", None, "terminal"), ("assistant", "done", None, None))),
    ("s2", "s1", (("user", "second one", None, None), ("assistant", "first reply", None, None),
                  ("user", "take this back", None, None), ("assistant", "rewound reply", None, None))),
)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _append(conn: sqlite3.Connection, session_id: str, role: str, content: str | None, calls: str | None,
            tool_name: str | None, n: int) -> None:
    """One message as Hermes' append_message writes it: the row (its triggers index it), then the counters."""
    extra = {"active": 1} if "active" in _columns(conn, "messages") else {}
    names = ", ".join(("session_id", "role", "content", "tool_calls", "tool_name", "timestamp", *extra))
    conn.execute(f"INSERT INTO messages ({names}) VALUES ({', '.join('?' * (6 + len(extra)))})",
                 (session_id, role, content, calls, tool_name, 1_700_000_000.0 + n, *extra.values()))
    conn.execute("UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + ? "
                 "WHERE id = ?", (1 if calls else 0, session_id))


def build(path: Path, version: int) -> Path:
    """A file of `version`'s layout holding two sessions (a parent and its child), tool calls, CJK text,
    and where the layout has `active`, a rewound turn."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        layout(version).create(conn)
        n = 0
        for session_id, parent, messages in SESSIONS:
            conn.execute("INSERT INTO sessions (id, source, started_at, parent_session_id, message_count, "
                         "tool_call_count) VALUES (?, 'cli', 1700000000.0, ?, 0, 0)", (session_id, parent))
            for role, content, calls, tool_name in messages:
                n += 1
                _append(conn, session_id, role, content, calls, tool_name, n)
        if "active" in _columns(conn, "messages"):  # rewind: the last turn leaves the conversation, counted still
            conn.execute("UPDATE messages SET active = 0 WHERE session_id = 's2' AND id > "
                         "(SELECT MIN(id) + 1 FROM messages WHERE session_id = 's2')")
        conn.execute("COMMIT")
    finally:
        conn.close()
    return path


def raw(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def kinds(path: Path, quick: bool = False) -> set[str]:
    return {finding.kind for finding in check_file(path, quick=quick)}


def triggers(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        return {name: normalized(sql) for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")}
    finally:
        conn.close()


def own_triggers(version: int) -> dict[str, str]:
    return {name: normalized(sql) for name, sql in layout(version).triggers.items()}


def version_row(path: Path) -> int:
    return int(raw_scalar(path, "SELECT version FROM schema_version"))


def fts5_agrees(path: Path, version: int) -> None:
    conn = sqlite3.connect(path)
    try:
        for index in layout(version).search:
            conn.execute(f"INSERT INTO {index.name}({index.name}, rank) VALUES('integrity-check', 1)")
    finally:
        conn.close()


def cli(*args: object) -> int:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code


@pytest.mark.parametrize("version", (6, *LATER))
def test_a_clean_file_of_each_layout_has_nothing_to_report_or_repair(tmp_path, version):
    path = build(tmp_path / "state.db", version)
    assert check_file(path) == [] and check_file(path, quick=True) == []
    report = repair_file(path)
    assert report.problems == () and report.changes == ()


@pytest.mark.parametrize("version", [v for v in PLANTED_ON if v > 6])
@pytest.mark.parametrize("command", (("check",), ("check", "--quick"), ("repair",), ("rebuild-fts",),
                                     ("maintain",), ("vacuum",)))
def test_every_maintenance_command_exits_0_and_keeps_the_layout(tmp_path, version, command):
    path = build(tmp_path / "state.db", version)
    assert cli("--db", path, *command, "--no-progress") == 0
    assert triggers(path) == own_triggers(version) and version_row(path) == version
    assert check_file(path) == []
    fts5_agrees(path, version)


@pytest.mark.parametrize("version", [v for v in LATER if "messages_fts_trigram" in
                                     {index.name for index in layout(v).search}])
def test_no_side_trigram_table_beside_hermes_own(tmp_path, version):
    path = build(tmp_path / "state.db", version)
    assert cli("--db", path, "maintain", "--no-progress") == 0
    assert cli("--db", path, "rebuild-fts", "--no-progress") == 0
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TRIGRAM_TABLE,)).fetchone() is None
    finally:
        conn.close()


def _altered_update_trigger(version: int) -> tuple[str, ...]:
    """messages_fts_update replaced by a body that indexes the message text alone."""
    return ("DROP TRIGGER messages_fts_update",
            "CREATE TRIGGER messages_fts_update AFTER UPDATE ON messages BEGIN "
            "INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content); "
            "INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END"
            if version >= 11 else
            "CREATE TRIGGER messages_fts_update AFTER UPDATE ON messages BEGIN SELECT 1; END")


def _unindexed(version: int) -> tuple[str, ...]:
    """A message written while the insert triggers were gone, then the triggers put back."""
    drop = [f"DROP TRIGGER {name}" for name in layout(version).triggers if name.endswith("_insert")]
    add = [sql for name, sql in layout(version).triggers.items() if name.endswith("_insert")]
    return (*drop, "INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s1', 'user', 'x', 1)",
            "UPDATE sessions SET message_count = message_count + 1 WHERE id = 's1'", *add)


PLANTS = {
    "missing_trigger": lambda v: ("DROP TRIGGER messages_fts_delete",),
    "altered_trigger": _altered_update_trigger,
    "missing_index": lambda v: ("DROP INDEX idx_sessions_started",),
    "missing_fts_table": lambda v: ("DROP TABLE messages_fts",),
    "fts_out_of_sync": _unindexed,
    "missing_parent": lambda v: ("UPDATE sessions SET parent_session_id = 'gone' WHERE id = 's2'",),
    "counter_mismatch": lambda v: ("UPDATE sessions SET message_count = 99 WHERE id = 's1'",),
}
KIND = {"altered_trigger": "missing_trigger", "missing_fts_table": "missing_index"}


@pytest.mark.parametrize("version", PLANTED_ON)
@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_planted_damage_is_found_as_its_kind_and_repaired_in_the_layouts_form(tmp_path, version, plant):
    path = build(tmp_path / "state.db", version)
    raw(path, *PLANTS[plant](version))
    assert KIND.get(plant, plant) in kinds(path)
    report = repair_file(path)
    assert report.ok, report.unfixed
    assert check_file(path) == [] and version_row(path) == version
    assert triggers(path) == own_triggers(version)
    fts5_agrees(path, version)


@pytest.mark.parametrize("version", [v for v in PLANTED_ON if v > 6])
def test_the_later_search_index_is_checked_too(tmp_path, version):
    path = build(tmp_path / "state.db", version)
    second = layout(version).search[-1].name
    raw(path, f"DROP TRIGGER {second}_delete", "DELETE FROM messages WHERE id = 1",
        "UPDATE sessions SET message_count = message_count - 1 WHERE id = 's1'",
        layout(version).triggers[f"{second}_delete"])
    found = check_file(path)
    assert [f.kind for f in found] == ["fts_out_of_sync"] and second in found[0].detail
    assert {f.kind for f in check_file(path, quick=True)} == {"fts_out_of_sync"}
    assert repair_file(path).ok and check_file(path) == []


@pytest.mark.parametrize("version", (11, 17))
def test_an_inline_index_holding_other_text_than_its_layout_indexes_is_found(tmp_path, version):
    # FTS5's own integrity-check passes (the index matches the text it stores), yet the tool name
    # changed while the update trigger was gone: a search for it finds nothing.
    path = build(tmp_path / "state.db", version)
    raw(path, "DROP TRIGGER messages_fts_update", "DROP TRIGGER messages_fts_trigram_update",
        "UPDATE messages SET tool_name = 'browser' WHERE tool_name = 'terminal'",
        layout(version).triggers["messages_fts_update"], layout(version).triggers["messages_fts_trigram_update"])
    fts5_agrees(path, version)
    found = check_file(path)
    assert {f.kind for f in found} == {"fts_out_of_sync"} and len(found) == 2
    assert repair_file(path).ok and check_file(path) == []
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'browser'").fetchall() == [(3,)]
    finally:
        conn.close()


@pytest.mark.parametrize("version", [v for v in LATER if "active" in layout(v).column_names("messages")])
def test_counters_as_hermes_keeps_them_through_rewind_and_compaction(tmp_path, version):
    path = build(tmp_path / "state.db", version)
    assert check_file(path) == []  # rewound: message_count 4 with 2 live rows
    raw(path, "UPDATE sessions SET message_count = 2 WHERE id = 's2'")  # compacted in place: the live rows
    assert check_file(path) == [] and check_file(path, quick=True) == []
    raw(path, "UPDATE sessions SET message_count = 1 WHERE id = 's2'")  # fewer than the live rows
    assert kinds(path) == {"counter_mismatch"} and kinds(path, quick=True) == {"counter_mismatch"}
    raw(path, "UPDATE sessions SET message_count = 5 WHERE id = 's2'")  # more than every row
    assert kinds(path) == {"counter_mismatch"} and kinds(path, quick=True) == {"counter_mismatch"}
    assert repair_file(path).ok and check_file(path) == []


def test_a_v6_file_with_the_legacy_inline_update_trigger_is_named(tmp_path):
    # What Hermes 23+ installs over any index without tool_name: a plain DELETE, which on an
    # external-content index removes the tokens of the row's new text instead of its old.
    path = build(tmp_path / "state.db", 6)
    raw(path, "DROP TRIGGER messages_fts_update", HERMES_INLINE_UPDATE)
    found = check_file(path)
    assert [f.kind for f in found] == ["fts_trigger_hazard"] and "schema 23" in found[0].detail
    assert "--schema" in found[0].detail
    assert repair_file(path).ok and triggers(path) == own_triggers(6)


def _schema(path: Path) -> list[tuple[str, str]]:
    """Every object of the file but this tool's own CJK side table (made where Hermes has no trigram index)."""
    conn = sqlite3.connect(path)
    try:
        return [(name, normalized(sql)) for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_stat%' "
            "AND name NOT LIKE 'hst_%' ORDER BY name")]
    finally:
        conn.close()


@pytest.mark.parametrize("name", hermes_fixtures.names())
def test_check_finds_nothing_on_each_hermes_made_file(tmp_path, name):
    path = hermes_fixtures.load(name, tmp_path)
    assert check_file(path) == [] and check_file(path, quick=True) == []


@pytest.mark.parametrize("name", hermes_fixtures.names("populated"))
def test_every_maintenance_command_on_each_hermes_made_file_keeps_its_schema(tmp_path, name):
    path = hermes_fixtures.load(name, tmp_path)
    schema = _schema(path)
    for command in (("repair",), ("rebuild-fts",), ("maintain",), ("vacuum",)):
        assert cli("--db", path, *command, "--no-progress") == 0, command
    assert _schema(path) == schema and check_file(path) == []


def _tables(path: Path) -> dict[str, list[str]]:
    """Every row of every table but the search indexes' own, as text, sorted."""
    conn = sqlite3.connect(path)
    try:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                                "AND name NOT LIKE 'messages_fts%' AND name NOT LIKE 'sqlite_%'")]
        return {name: sorted(map(repr, conn.execute(f'SELECT * FROM "{name}"'))) for name in names}
    finally:
        conn.close()


RECOVERED = ("v7", "v10", "v11", "v14-active", "v16-archive-compact", "v17", "v17-tip")


@pytest.mark.parametrize("name", RECOVERED)
def test_recover_builds_dest_in_the_sources_own_layout(tmp_path, name):
    # v14-active and v17-tip hold an index and columns their Hermes added without a version bump.
    path = hermes_fixtures.load(name, tmp_path)
    dest = tmp_path / "out.db"
    result = CliRunner().invoke(main, ["--db", str(path), "recover", str(dest), "--no-progress", "--json"],
                                catch_exceptions=False)
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and doc["complete"] and doc["columns_not_kept"] == []
    assert _schema(dest) == _schema(path) and _tables(dest) == _tables(path)
    assert check_file(dest) == []


@pytest.mark.parametrize("name", ("v10", "v11", "v17-tip"))
def test_repair_of_a_destroyed_index_rebuilds_the_file_in_its_own_layout(tmp_path, name):
    from page_damage import destroy_btree

    path = hermes_fixtures.load(name, tmp_path)
    schema, tables = _schema(path), _tables(path)
    destroy_btree(path, "idx_messages_session")
    assert [f.kind for f in check_file(path)][:1] == ["integrity"]
    assert cli("--db", path, "repair", "--no-progress") == 0
    assert check_file(path) == [] and _schema(path) == schema and _tables(path) == tables


@pytest.mark.parametrize("name", ("v6", "v10", "v11", "v17"))
def test_hermes_sees_a_repaired_file_as_it_saw_its_own(tmp_path, name):
    from hermes_oracle import hermes_view, require_hermes, summarize

    require_hermes()
    entry = hermes_fixtures.manifest()[name]
    path = hermes_fixtures.load(name, tmp_path)
    version = version_row(path)
    raw(path, "DROP TRIGGER messages_fts_delete", *_altered_update_trigger(version), "DROP INDEX idx_sessions_started")
    assert repair_file(path).ok and triggers(path) == own_triggers(version)
    view = hermes_view(entry["commit"], path)
    assert summarize(view) == entry["hermes_view"] and set(view["integrity"].values()) == {"ok"}


@pytest.mark.parametrize("name", ("v11", "v14-active", "v17-tip"))
def test_hermes_sees_a_recovered_file_as_it_saw_its_source(tmp_path, name):
    from hermes_oracle import hermes_view, require_hermes, summarize

    require_hermes()
    entry = hermes_fixtures.manifest()[name]
    dest = tmp_path / "out.db"
    assert cli("--db", hermes_fixtures.load(name, tmp_path), "recover", dest, "--no-progress") == 0
    view = hermes_view(entry["commit"], dest)
    assert summarize(view) == entry["hermes_view"] and set(view["integrity"].values()) == {"ok"}


@pytest.mark.parametrize("version", (11, 17))
@pytest.mark.parametrize("missing", ("table", "trigger"))
def test_search_on_a_later_file_missing_its_index_advises_repair_and_repair_makes_it_searchable(tmp_path, version,
                                                                                             missing):
    path = build(tmp_path / "state.db", version)
    raw(path, "DROP TABLE messages_fts" if missing == "table" else "DROP TRIGGER messages_fts_insert")
    result = CliRunner().invoke(main, ["--db", str(path), "search", "staging"])
    assert result.exit_code != 0 and "hermes-state repair" in result.output, result.output
    assert "newer hermes-state-tools" not in result.output
    assert cli("--db", path, "repair") == 0
    assert triggers(path) == own_triggers(version) and version_row(path) == version
    assert cli("--db", path, "search", "staging") == 0
