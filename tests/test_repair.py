"""`repair`: each planted kind fixed and reported, nothing lost, idempotent, dry run, one transaction."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from damage import PLANTS, T0, build_healthy, cli_json, counts, found, planted, raw
from helpers import file_digests, raw_scalar
from schema_fixtures import UPGRADABLE, load_fixture

from hermes_state_tools.maintenance import repair
from hermes_state_tools.maintenance.checks import check_file
from hermes_state_tools.maintenance.repair import repair_file

FIXABLE = sorted(PLANTS)  # "integrity" is a damaged index: derived data, rebuilt


@pytest.mark.parametrize("name", FIXABLE)
def test_repair_fixes_each_kind_reports_it_and_loses_nothing(tmp_path, name):
    path = planted(tmp_path, name)
    sessions_before, messages_before = counts(path)
    report = repair_file(path)
    assert report.ok and report.unfixed == ()
    assert found(report.problems) == PLANTS[name][1]
    assert {kind for kind, _ in PLANTS[name][1]} <= {c.kind for c in report.changes}
    assert all(c.action and c.detail for c in report.changes)
    assert check_file(path) == []
    placeholders = 1 if name == "foreign_key" else 0
    moved = 1 if name == "foreign_role" else 0  # into the session's extra data (test_foreign_rows_...)
    assert counts(path) == (sessions_before + placeholders, messages_before - moved)


@pytest.mark.parametrize("name", FIXABLE)
def test_a_second_repair_changes_nothing(tmp_path, name):
    path = planted(tmp_path, name)
    repair_file(path)
    before = file_digests(path)
    again = repair_file(path)
    assert (again.problems, again.changes, again.unfixed) == ((), (), ())
    assert file_digests(path) == before


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_dry_run_reports_the_same_changes_and_keeps_every_byte(tmp_path, name):
    path = planted(tmp_path, name)
    before = file_digests(path)
    dry = repair_file(path, dry_run=True)
    assert file_digests(path) == before
    real = repair_file(path)
    assert dry.dry_run and not real.dry_run
    assert [c.as_dict() for c in dry.changes] == [c.as_dict() for c in real.changes]
    assert [f.as_dict() for f in dry.unfixed] == [f.as_dict() for f in real.unfixed]


def test_index_damage_is_fixed_by_rebuilding_the_file_and_the_original_is_kept(tmp_path):
    path = planted(tmp_path, "integrity")
    original = file_digests(path)["state.db"]
    report = repair_file(path)
    assert report.ok and [c.action for c in report.changes] == ["rebuilt_file"]
    assert check_file(path) == []
    kept = Path(report.backup)
    assert kept.name.startswith("state.db.pre-repair-") and file_digests(kept)[kept.name] == original


@pytest.mark.parametrize(("first", "cleared", "old_parent"), [("alpha", "alpha", "gamma"), ("gamma", "gamma", "beta"),
                                                                ("beta", "beta", "alpha")])
def test_a_cycle_is_broken_at_the_session_that_started_first(tmp_path, first, cleared, old_parent):
    path = planted(tmp_path, "lineage_cycle")
    raw(path, f"UPDATE sessions SET started_at = {T0 - 1000} WHERE id = '{first}'")
    [change] = repair_file(path).changes
    assert (change.kind, change.action, change.old, change.new) == ("lineage_cycle", "cleared_parent", old_parent, None)
    assert set(change.session_ids) == {"alpha", "beta", "gamma"}
    parents = {sid: raw_scalar(path, "SELECT parent_session_id FROM sessions WHERE id = ?", (sid,))
               for sid in ("alpha", "beta", "gamma")}
    assert parents[cleared] is None and sum(p is None for p in parents.values()) == 1


def test_orphaned_messages_get_a_placeholder_session(tmp_path):
    path = planted(tmp_path, "foreign_key")
    [change] = repair_file(path).changes
    assert (change.kind, change.action, change.session_ids, change.old) == (
        "foreign_key", "created_session", ("ghost",), None)
    row = dict(zip(("source", "started_at", "ended_at", "end_reason", "message_count"), sqlite3.connect(
        str(path)).execute("SELECT source, started_at, ended_at, end_reason, message_count FROM sessions "
                           "WHERE id = 'ghost'").fetchone(), strict=True))
    assert row == {"source": "unknown", "started_at": T0 + 4000, "ended_at": T0 + 5000, "end_reason": "recovered",
                   "message_count": 2}
    assert change.new == row


def test_duplicate_titles_earliest_keeps_it_later_ones_are_numbered(tmp_path):
    path = planted(tmp_path, "duplicate_title")
    changes = repair_file(path).changes
    renames = [(c.session_ids, c.old, c.new) for c in changes if c.kind == "duplicate_title"]
    assert renames == [(("gamma",), "Alpha", "Alpha #2"), (("delta",), "Alpha", "Alpha #3")]
    assert [c.detail for c in changes if c.kind == "missing_index"] == ["recreated index idx_sessions_title_unique"]
    assert raw_scalar(path, "SELECT title FROM sessions WHERE id = 'alpha'") == "Alpha"


def test_counter_changes_carry_old_and_new_values(tmp_path):
    changes = {c.session_ids: (c.old, c.new) for c in repair_file(planted(tmp_path, "counter_mismatch")).changes}
    assert changes == {
        ("delta",): ({"message_count": 2, "tool_call_count": 0}, {"message_count": 2, "tool_call_count": 2}),
        ("gamma",): ({"message_count": 99, "tool_call_count": 0}, {"message_count": 1, "tool_call_count": 0}),
    }


@pytest.mark.parametrize(("name", "old"), [("version_row_missing", []), ("version_table_missing", None),
                                           ("version_behind_columns", 5), ("version_two_rows", [6, 6])])
def test_the_version_row_is_set_and_its_old_value_reported(tmp_path, name, old):
    path = planted(tmp_path, name)
    [change] = repair_file(path).changes
    assert (change.kind, change.old, change.new) == ("schema_version", old, 6)
    assert [r[0] for r in sqlite3.connect(str(path)).execute("SELECT version FROM schema_version")] == [6]


def test_a_missing_parent_becomes_null(tmp_path):
    [change] = repair_file(planted(tmp_path, "missing_parent")).changes
    assert (change.session_ids, change.old, change.new) == (("delta",), "vanished", None)


def test_a_failing_fix_rolls_the_whole_repair_back(tmp_path, monkeypatch):
    path = build_healthy(tmp_path / "state.db")
    for name in ("missing_parent", "duplicate_title", "counter_mismatch"):
        PLANTS[name][0](path)
    before = file_digests(path)

    def boom(_run):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setitem(repair.FIXES, "counter_mismatch", boom)
    with pytest.raises(sqlite3.OperationalError):
        repair_file(path)
    assert file_digests(path) == before  # the earlier fixes of the same run were rolled back too


@pytest.mark.parametrize("name", UPGRADABLE)
def test_every_fixture_database_repairs_to_clean_without_losing_rows(tmp_path, name):
    path = load_fixture(name, tmp_path)
    before = counts(path)
    assert repair_file(path).ok
    assert check_file(path) == [] and counts(path) == before


def test_cli_reports_the_contract_keys_and_exit_codes(tmp_path):
    path = planted(tmp_path, "missing_parent")
    code, dry = cli_json("--db", path, "repair", "--dry-run")
    assert (code, dry["ok"], dry["dry_run"]) == (0, True, True)
    assert {"ok", "dry_run", "problems", "changes", "unfixed"} <= set(dry)
    assert dry["changes"][0] == {"kind": "missing_parent", "action": "cleared_parent", "session_ids": ["delta"],
                                 "old": "vanished", "new": None, "detail": "session delta: parent 'vanished' -> NULL"}
    code, real = cli_json("--db", path, "repair")
    assert code == 0 and real["changes"] == dry["changes"]
    assert cli_json("--db", path, "repair")[1]["changes"] == []
    damaged = planted(tmp_path / "damaged", "integrity")
    before = file_digests(damaged)
    code, doc = cli_json("--db", damaged, "repair", "--dry-run")
    assert (code, doc["ok"], [c["action"] for c in doc["changes"]], doc["unfixed"]) == (0, True, ["rebuilt_file"], [])
    assert file_digests(damaged) == before


def test_foreign_rows_move_to_extra_data_whole_and_fill_null_fields(tmp_path):
    path = planted(tmp_path, "foreign_role")
    raw(path, "UPDATE sessions SET model = NULL WHERE id = 'gamma'")
    [change] = [c for c in repair_file(path).changes if c.kind == "foreign_role"]
    assert (change.action, change.session_ids) == ("moved_to_extra", ("gamma",))
    conn = sqlite3.connect(str(path))
    try:
        assert conn.execute("SELECT COUNT(*) FROM messages WHERE role = 'session_meta'").fetchone()[0] == 0
        assert conn.execute("SELECT model FROM sessions WHERE id = 'gamma'").fetchone()[0] == "meta/model"
        data = json.loads(conn.execute("SELECT data FROM hst_session_extra WHERE session_id = 'gamma'").fetchone()[0])
    finally:
        conn.close()
    [row] = data["foreign_rows"]
    assert (row["role"], row["session_id"], json.loads(row["content"])["platform"]) == (
        "session_meta", "gamma", "telegram")
