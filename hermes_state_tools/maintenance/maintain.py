"""`maintain`, the scheduled job: check, repair what is safe, drop stale extra data, optimize FTS,
and vacuum when the free space makes it worth it; one report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_state_tools.core.progress import Steps, expect, step
from hermes_state_tools.core.reports import Report, plain
from hermes_state_tools.errors import DAMAGED_REFUSAL
from hermes_state_tools.maintenance.checks import CheckReport, check_report
from hermes_state_tools.maintenance.repair import repair_file
from hermes_state_tools.maintenance.vacuum import (
    DEFERRED,
    free_bytes,
    optimize_fts,
    size_fields,
    vacuum_now,
    worth_vacuuming,
)
from hermes_state_tools.search import trigram
from hermes_state_tools.store.files import others_have_open
from hermes_state_tools.store.live import FileSizes, file_sizes, settle_wal
from hermes_state_tools.store.opening import require_supported, writing
from hermes_state_tools.tables import extras


@dataclass(frozen=True)
class Housekeeping:
    """What maintain did after its check, on a file that is not damaged."""

    extra_rows_dropped: int = 0
    cjk_index: Any = None  # the CJK search side table's refresh (search/trigram.py)
    optimized: bool = False
    vacuumed: bool = False
    free_bytes: int | None = None
    deferred: str | None = None  # why neither the search index was optimized nor the file vacuumed


@dataclass(frozen=True)
class MaintainReport(Report):
    """The scheduled job's one report: the check, what was repaired or left, and the housekeeping."""

    path: str
    check: CheckReport
    repairs: tuple[dict[str, Any], ...]
    unfixed: tuple[dict[str, Any], ...]
    housekeeping: Housekeeping
    before: FileSizes
    after: FileSizes
    backup: str | None = None  # taken when a repair changed the schema
    note: str | None = None  # why nothing was written (damage)

    @property
    def damaged(self) -> bool:
        return self.check.damaged

    def as_dict(self) -> dict[str, Any]:
        checked = self.check.as_dict()
        doc: dict[str, Any] = {
            "ok": not self.unfixed, "path": self.path,
            "check": {"ok": not self.check.findings, "problems": checked["problems"]},
            "skipped": checked["skipped"], "notes": checked["notes"], "damaged": self.damaged,
            "sqlite_wal_reset_bug": checked["sqlite_wal_reset_bug"],
            "repairs": list(self.repairs), "unfixed": list(self.unfixed), **plain(self.housekeeping),
            **size_fields(self.before, self.after),
        }
        doc.update({key: value for key, value in (("backup", self.backup), ("note", self.note)) if value})
        return doc


def maintain_file(path: Path, progress: Steps | None = None) -> MaintainReport:
    """The scheduled job: check, repair what is safe, optimize FTS, vacuum when the free space is worth it.

    One check on a healthy file; a second only after a repair changed something."""
    require_supported(path)  # first: it refuses a missing, foreign or newer file
    checked = check_report(path, progress=progress)
    before = file_sizes(path)
    unfixed = tuple(f.as_dict() for f in checked.findings)
    if checked.damaged:
        # Writing into a damaged b-tree can spread the damage: nothing is written (the CLI exits 65).
        return MaintainReport(str(path), checked, (), unfixed, Housekeeping(), before, file_sizes(path),
                              note=DAMAGED_REFUSAL)
    repairs: tuple[dict[str, Any], ...] = ()
    backup: str | None = None
    if checked.findings:
        repaired = repair_file(path, problems=checked.findings, progress=progress)
        repairs, backup = tuple(c.as_dict() for c in repaired.changes), repaired.backup
        unfixed = tuple(f.as_dict() for f in repaired.unfixed)
    done = _optimize_and_vacuum(path, progress, checked.sound)
    return MaintainReport(str(path), checked, repairs, unfixed, done, before, file_sizes(path), backup)


def _optimize_and_vacuum(path: Path, progress: Steps | None, proven: bool) -> Housekeeping:
    """Drop extra data left by sessions deleted elsewhere, optimize FTS, then VACUUM only when the
    free pages are worth a rewrite; while another process has the file open (a running Hermes) both
    rewrites are left for later and the report says why. The -wal is emptied once writers allow it.
    `proven`: the check just now found the file sound."""
    with writing(path, proven=proven) as (conn, runner):
        expect(progress, 2)
        step(progress, "dropping stale extra data")
        dropped = runner.run(extras.drop_orphans)
        step(progress, "optimizing the search index")
        cjk = trigram.catch_up(conn, runner.run)  # the CJK search side table catches up (never Hermes's tables)
        deferred = DEFERRED if others_have_open(path) else None
        optimized = deferred is None and optimize_fts(conn, runner)
        free, ratio = free_bytes(conn)
        vacuumed = deferred is None and worth_vacuuming(free, ratio)
        if vacuumed:
            vacuum_now(conn, runner, progress)
        settle_wal(conn)
    return Housekeeping(dropped, cjk, optimized, vacuumed, free, deferred)


