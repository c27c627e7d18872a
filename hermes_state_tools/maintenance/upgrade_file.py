"""Upgrading a database file: refuse what is too new, back it up, then run the pending steps."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core.progress import Steps, expect, step
from hermes_state_tools.core.reports import Report
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.store.backup import changing_schema, scratch_copy
from hermes_state_tools.store.files import remove_stale_temps
from hermes_state_tools.store.opening import (
    look_at_schema,
    open_store,
    require_sound,
    require_writable,
)


@dataclass(frozen=True)
class UpgradeFileReport(Report):
    from_version: int
    to_version: int
    created: bool
    steps: tuple[str, ...]
    renamed_titles: tuple[dict[str, str], ...]  # {"session_id", "old", "new"}
    repairs: tuple[str, ...]
    backup: str | None  # the verified copy taken first, None when nothing was pending (or --no-backup)
    dry_run: bool
    ok: bool = True


def _run_upgrade(path: Path, backup: str | None, dry_run: bool) -> UpgradeFileReport:
    conn, _runner, report = open_store(path, threading.RLock())
    conn.close()
    return UpgradeFileReport(report.from_version, report.to_version, report.created, tuple(report.steps),
                             tuple(report.renamed_titles), tuple(report.repairs), backup, dry_run)


def upgrade_file(path: Path, *, backup: bool = True, dry_run: bool = False,
                 progress: Steps | None = None) -> UpgradeFileReport:
    """Bring `path` to the current schema; the report has from/to version, steps, backup, renames."""
    # A missing, foreign or newer file is refused first; a damaged one (65) before any .bak is made of it.
    require_sound(path)
    if dry_run:
        expect(progress, 2)
        step(progress, "copying for the dry run")
        with scratch_copy(path) as copy:
            step(progress, "upgrading the copy")
            return _run_upgrade(copy, None, True)
    look = look_at_schema(path)
    if not look.pending:  # nothing to write: a read-only file or folder is no reason to refuse
        version = SCHEMA_VERSION if look.version is None else look.version  # a later layout keeps its own
        return UpgradeFileReport(version, version, False, (), (), (), None, False)
    require_writable(path)  # a file this process cannot write gets no .bak and no -wal beside it
    remove_stale_temps(path.parent)  # a killed earlier upgrade's half backup, under its temporary name
    # Nothing pending means nothing will be written: no backup to clutter the folder with.
    with changing_schema(path, "upgrade", backup=backup, progress=progress) as backup_path:
        expect(progress, 1)
        step(progress, "upgrading")
        return _run_upgrade(path, backup_path, False)
