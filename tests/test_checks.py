"""`check`: a planted-damage test for every kind, read-only and lock-free, the fixtures, --quick."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from damage import PLANTS, build_healthy, change_index_key, cli_json, found, planted, raw, unchanged
from helpers import file_digests
from schema_fixtures import UPGRADABLE, load_fixture

from hermes_state_tools.maintenance import fts_agreement
from hermes_state_tools.maintenance.checks import KINDS, Finding, check_file, check_report, run_checks


def test_a_healthy_database_has_no_findings(tmp_path):
    assert check_file(build_healthy(tmp_path / "state.db")) == []


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_each_planted_damage_is_found_as_exactly_its_kind(tmp_path, name):
    path = planted(tmp_path, name)
    findings = check_file(path)
    assert found(findings) == PLANTS[name][1]
    assert all(f.kind in KINDS and f.detail for f in findings)


def test_every_kind_has_a_planted_damage():
    assert {kind for _, expected in PLANTS.values() for kind, _ in expected} == set(KINDS)


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_check_changes_no_byte_and_takes_no_write_lock(tmp_path, name):
    path = planted(tmp_path, name)
    writer = sqlite3.connect(str(path), isolation_level=None)  # another process, mid-write
    try:
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE sessions SET title = 'in flight' WHERE id = 'gamma'")
        before = file_digests(path)
        assert "state.db" in before and path.with_name("state.db-wal").exists()  # the writer holds the WAL open
        # The writer holds the write lock throughout: a check that needed it would end locked (75).
        code, doc = cli_json("--db", path, "check", "--no-progress")
        assert file_digests(path) == before
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert (code, doc["ok"]) == (1, False)
    assert found(doc["problems"]) == PLANTS[name][1]
    assert all({"kind", "detail", "session_ids"} <= set(p) for p in doc["problems"])


def test_check_of_a_cleanly_closed_file_keeps_the_main_file_and_adds_no_data(tmp_path):
    path = planted(tmp_path, "counter_mismatch")
    before = file_digests(path)
    assert set(before) == {"state.db"}
    check_file(path)
    assert unchanged(path, before)


@pytest.mark.parametrize("name", ["fts_unindexed", "fts_stale", "foreign_key", "lineage_cycle"])
def test_quick_finds_the_same_as_the_full_check(tmp_path, name):
    assert found(check_file(planted(tmp_path, name), quick=True)) == PLANTS[name][1]


def test_quick_compares_message_counts_and_leaves_tool_calls_to_the_full_check(tmp_path):
    # the plant breaks gamma's message_count and delta's tool_call_count
    findings = check_file(planted(tmp_path, "counter_mismatch"), quick=True)
    assert found(findings) == {("counter_mismatch", ("gamma",))}
    assert "message_count 99 (real 1)" in findings[0].detail


def test_quick_finds_a_session_claiming_messages_it_does_not_have(tmp_path):
    path = build_healthy(tmp_path / "state.db")
    raw(path, "DELETE FROM messages WHERE session_id = 'gamma'")  # the delete trigger keeps FTS in step
    assert found(check_file(path, quick=True)) == {("counter_mismatch", ("gamma",))}


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_without_room_for_a_snapshot_the_token_audit_finds_the_same(tmp_path, name, monkeypatch):
    monkeypatch.setattr(fts_agreement, "_snapshot_dir", lambda path, size: None)
    assert found(check_file(planted(tmp_path, name))) == PLANTS[name][1]


def test_the_snapshot_is_private_and_removed_afterwards(tmp_path, monkeypatch):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    made: list[Path] = []
    real_check_copy = fts_agreement._check_copy

    def spy(path: Path, copy: Path, names: tuple[str, ...]) -> fts_agreement.Agreements:
        made.append(copy)
        assert copy.parent.parent == scratch and copy.parent.stat().st_mode & 0o077 == 0  # a private folder
        return real_check_copy(path, copy, names)

    monkeypatch.setattr(fts_agreement, "_check_copy", spy)
    assert found(check_file(planted(tmp_path, "fts_changed"))) == PLANTS["fts_changed"][1]
    assert len(made) == 1 and list(scratch.iterdir()) == []


def test_index_damage_no_message_explains_is_still_found(tmp_path):
    path = build_healthy(tmp_path / "state.db")
    raw(path, "UPDATE messages_fts_docsize SET sz = X'05' WHERE id = 3")  # a wrong token count, same tokens
    assert fts_agreement.id_drift(sqlite3.connect(path)) == ((), ())
    assert found(check_file(path)) == {("fts_out_of_sync", ())}
    assert check_file(path, quick=True) == []  # ids agree: only the full check tokenizes


def test_inside_a_write_transaction_fts5s_own_check_runs_on_the_connection(tmp_path):
    path = planted(tmp_path, "fts_changed")
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        assert fts_agreement.integrity_check(conn) is False
        conn.execute("INSERT INTO messages_fts(messages_fts) VALUES('rebuild')")
        assert fts_agreement.integrity_check(conn) is True
        conn.execute("ROLLBACK")
    finally:
        conn.close()
    readonly = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert fts_agreement.integrity_check(readonly) is None  # refused: the caller falls back to the audit
    finally:
        readonly.close()


def test_quick_skips_what_only_the_full_check_can_see(tmp_path):
    # quick_check does not compare indexes with tables, and --quick compares the FTS index by ids only
    assert check_file(planted(tmp_path, "fts_changed"), quick=True) == []
    changed = build_healthy(tmp_path / "b.db")
    change_index_key(changed)
    assert check_file(changed, quick=True) == []


def test_quick_says_it_left_the_roles_unread(tmp_path):
    # check --quick found one kind fewer than the full check and did not say so
    path = planted(tmp_path, "foreign_role")
    quick, full = check_report(path, quick=True), check_report(path)
    assert found(quick.findings) == set() and found(full.findings) == PLANTS["foreign_role"][1]
    assert [name for name, _why in quick.skipped] == ["foreign_roles"] and full.skipped == ()


def test_check_reports_every_damage_at_once(tmp_path):
    path = build_healthy(tmp_path / "state.db")
    names = ["foreign_key", "fts_changed", "lineage_cycle", "counter_mismatch", "version_row_missing"]
    for name in names:
        PLANTS[name][0](path)
    assert found(check_file(path)) == set().union(*(PLANTS[name][1] for name in names))


FIXTURE_FINDINGS = {
    "v6": set(),
    "trap_no_indexes": {"missing_index"},
    "trap_no_triggers": {"missing_trigger", "fts_out_of_sync"},
    "trap_no_fts": {"missing_index", "missing_trigger", "schema_version"},
    "trap_duplicate_titles": {"duplicate_title", "schema_version"},
}


@pytest.mark.parametrize("name", UPGRADABLE)
def test_fixture_databases_are_checked_without_error(tmp_path, name):
    kinds = {f.kind for f in check_file(load_fixture(name, tmp_path))}
    if name in FIXTURE_FINDINGS:
        assert kinds == FIXTURE_FINDINGS[name]
    else:  # older versions and version-row traps: only the version is wrong
        assert kinds == {"schema_version"}


def test_the_checks_run_inside_a_write_transaction_and_leave_it_clean(tmp_path):
    path = planted(tmp_path, "fts_changed")
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        assert [f.kind for f in run_checks(conn)[0]] == ["fts_out_of_sync"]
        assert conn.execute("SELECT COUNT(*) FROM temp.sqlite_master").fetchone()[0] == 0
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def test_a_finding_reports_as_the_contract_dict():
    assert Finding("missing_parent", "gone", ("s1",)).as_dict() == {
        "kind": "missing_parent", "detail": "gone", "session_ids": ["s1"]}


@pytest.mark.parametrize(("name", "which"), [("messages", "leaf"), ("messages", "interior"), ("sessions", "leaf"),
                                             ("idx_messages_session", "leaf"), ("messages_fts_data", "leaf")])
def test_a_quick_check_names_the_same_destroyed_objects_as_the_full_one(tmp_path, name, which):
    # --quick skips dbstat's page walk when quick_check finds nothing: it must still find every
    # destroyed page quick_check's own walk meets, and name it as the full check does.
    from page_damage import build_db, destroy_btree

    path = build_db(tmp_path / "state.db")
    destroy_btree(path, name, which)
    objects = {}
    for options in ((), ("--quick",)):
        code, doc = cli_json("--db", path, "check", *options)
        assert code == 1
        objects[options] = {p["object"] for p in doc["problems"] if p["kind"] == "integrity"}
    assert name in objects[()] and name in objects[("--quick",)], objects
