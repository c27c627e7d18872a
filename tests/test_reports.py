"""Every command's library function returns a frozen report (core/reports.py): a value nothing changes
once it is returned, whose `as_dict()` is the command's --json."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from import_helpers import cli, import_json, write_jsonl

from hermes_state_tools.archive.export import ArchiveExportReport
from hermes_state_tools.archive.push import PushReport
from hermes_state_tools.archive.search import ArchiveSearchReport
from hermes_state_tools.archive.status import ArchiveStatus
from hermes_state_tools.core.reports import Report
from hermes_state_tools.ingest import ImportStats, import_paths
from hermes_state_tools.ingest.merge_db import merge_database
from hermes_state_tools.maintenance.checks import CheckReport
from hermes_state_tools.maintenance.maintain import MaintainReport
from hermes_state_tools.maintenance.prune import PruneReport
from hermes_state_tools.maintenance.rebuild_fts import RebuildReport
from hermes_state_tools.maintenance.recover import RecoverReport
from hermes_state_tools.maintenance.repair import RepairReport
from hermes_state_tools.maintenance.upgrade_file import UpgradeFileReport
from hermes_state_tools.maintenance.vacuum import VacuumReport
from hermes_state_tools.store.backup import BackupReport
from hermes_state_tools.store.restore import RestoreReport
from hermes_state_tools.views.search import SearchReport, search_report
from hermes_state_tools.views.sessions import (
    LineageReport,
    SessionListReport,
    SessionReport,
    UsageReport,
    list_page,
    session_lineage,
    show_session,
    usage_stats,
)
from hermes_state_tools.views.status import StatusReport

LINES = [{"role": "user", "content": "hello there", "timestamp": 1772359200.0},
         {"role": "assistant", "content": "hi", "timestamp": 1772359201.0}]

# What each command's library function returns (status, import-jsonl and merge, check, repair, maintain,
# prune, rebuild-fts, upgrade, vacuum, backup, restore, recover, archive push, search, status and export, sessions
# list, show, lineage and stats, search).
REPORTS = [StatusReport, ImportStats, CheckReport, RepairReport, MaintainReport, PruneReport, RebuildReport,
           UpgradeFileReport, VacuumReport, BackupReport, RestoreReport, RecoverReport, PushReport, ArchiveSearchReport,
           ArchiveStatus, ArchiveExportReport, SessionListReport, SessionReport, LineageReport, UsageReport,
           SearchReport]


@pytest.mark.parametrize("report", REPORTS, ids=lambda cls: cls.__name__)
def test_every_command_report_is_a_frozen_report(report: type) -> None:
    assert issubclass(report, Report) and dataclasses.is_dataclass(report)
    assert report.__dataclass_params__.frozen  # type: ignore[attr-defined]


@pytest.mark.parametrize("dry_run", [False, True])
def test_an_import_and_a_merge_return_a_frozen_report_that_is_their_json(tmp_path: Path, dry_run: bool) -> None:
    folder = tmp_path / "sessions"
    write_jsonl(folder / "20260301_101010_4b4b4b4b.jsonl", LINES)
    options = ["--dry-run"] if dry_run else []
    _, doc = import_json(tmp_path / "cli.db", folder, options=options)
    stats = import_paths(tmp_path / "state.db", [folder], dry_run=dry_run)
    assert isinstance(stats, ImportStats) and isinstance(stats, Report)
    assert stats.as_dict() == {**doc, "database_created": str(tmp_path / "state.db")}
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.sessions_created = 2  # type: ignore[misc]
    if not dry_run:
        merged = merge_database(tmp_path / "merged.db", tmp_path / "state.db", dry_run=True)
        assert isinstance(merged, ImportStats) and merged.would_create == ("20260301_101010_4b4b4b4b",)
        with pytest.raises(dataclasses.FrozenInstanceError):
            merged.problems = []  # type: ignore[misc]


def test_the_browsing_reports_are_their_commands_json_key_for_key_in_order(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    write_jsonl(folder / "20260301_101010_4b4b4b4b.jsonl", LINES)
    write_jsonl(folder / "20260302_101010_5c5c5c5c.jsonl", [{**line, "content": "hello again"} for line in LINES])
    db = tmp_path / "state.db"
    import_json(db, folder)
    session = "20260301_101010_4b4b4b4b"
    reports = {("sessions", "list"): list_page(db), ("sessions", "show", session): show_session(db, session),
               ("sessions", "lineage", session): session_lineage(db, session), ("sessions", "stats"): usage_stats(db),
               ("search", "hello"): search_report(db, "hello")}
    for command, report in reports.items():
        result = cli("--db", db, *command, "--json")
        assert result.exit_code == 0, result.stderr
        assert list(report.as_dict().items()) == list(json.loads(result.stdout).items()), command
        with pytest.raises(dataclasses.FrozenInstanceError):
            report.ok = False  # type: ignore[misc]
