"""`maintain`, the scheduled job: check, repair what is safe, drop stale extra data, optimize FTS,
and vacuum when the free space makes it worth it; one report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_state_tools.core.progress import Steps, step
from hermes_state_tools.errors import DAMAGED_REFUSAL
from hermes_state_tools.maintenance.checks import check_report
from hermes_state_tools.maintenance.repair import repair_file
from hermes_state_tools.maintenance.vacuum import file_bytes, free_bytes, optimize_fts, vacuum_now, worth_vacuuming
from hermes_state_tools.search import trigram
from hermes_state_tools.store.opening import require_supported, writing
from hermes_state_tools.tables import extras


def maintain_file(path: Path, progress: Steps | None = None) -> dict[str, Any]:
    """The scheduled job: check, repair what is safe, optimize FTS, vacuum when the free space is worth it.

    One check on a healthy file; a second only after a repair changed something."""
    require_supported(path)  # first: it refuses a missing, foreign or newer file
    checked = check_report(path, progress=progress)
    problems = checked.findings
    before = file_bytes(path)
    report: dict[str, Any] = {"check": {"ok": not problems, "problems": [f.as_dict() for f in problems]},
                              "skipped": checked.as_dict()["skipped"], "notes": list(checked.notes),
                              "repairs": [], "unfixed": [f.as_dict() for f in problems], "damaged": checked.damaged,
                              "extra_rows_dropped": 0, "optimized": False, "vacuumed": False}
    if checked.damaged:
        # Writing into a damaged b-tree can spread the damage: nothing is written (the CLI exits 65).
        report["note"] = DAMAGED_REFUSAL + " (or `repair` when only derived data is damaged)"
    else:
        if problems:
            repaired = repair_file(path, problems=problems, progress=progress)
            report["backup"] = repaired.backup
            report["repairs"] = [c.as_dict() for c in repaired.changes]
            report["unfixed"] = [f.as_dict() for f in repaired.unfixed]
        report.update(_optimize_and_vacuum(path, progress))
    return {"ok": not report["unfixed"], "path": str(path), **report,
            "bytes_before": before, "bytes_after": file_bytes(path)}


def _optimize_and_vacuum(path: Path, progress: Steps | None) -> dict[str, Any]:
    """Drop extra data left by sessions deleted elsewhere, optimize FTS, then VACUUM only when the
    free pages are worth a rewrite."""
    with writing(path) as (conn, runner):
        step(progress, "dropping stale extra data")
        dropped = runner.run(extras.drop_orphans)
        step(progress, "optimizing the search index")
        cjk = runner.run(trigram.refresh)  # the CJK search side table catches up (never Hermes's tables)
        optimized = optimize_fts(conn, runner)
        free, ratio = free_bytes(conn)
        vacuumed = worth_vacuuming(free, ratio)
        if vacuumed:
            vacuum_now(conn, runner, progress)
    return {"extra_rows_dropped": dropped, "cjk_index": cjk, "optimized": optimized, "vacuumed": vacuumed,
            "free_bytes": free}


