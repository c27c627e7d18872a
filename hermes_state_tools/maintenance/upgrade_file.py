"""Upgrading a database file: refuse what is too new, back it up, then run the pending steps."""

from __future__ import annotations

import tempfile
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hermes_state_tools.store.backup import backup_before_schema_change, backup_database
from hermes_state_tools.store.files import remove_stale_temps
from hermes_state_tools.store.opening import open_store, prove_sound, schema_change_pending


def _run_upgrade(path: Path) -> dict[str, Any]:
    conn, _runner, report = open_store(path, threading.RLock())
    conn.close()
    return asdict(report)


def upgrade_file(path: Path, *, backup: bool = True, dry_run: bool = False) -> dict[str, Any]:
    """Bring `path` to the current schema; the report has from/to version, steps, backup, renames."""
    needed = schema_change_pending(path)  # refuses a missing, foreign or newer file first
    remove_stale_temps(path.parent)  # a killed earlier upgrade's half backup, under its temporary name
    prove_sound(path)  # before the backup: a damaged file is refused (65), no .bak made of it
    if dry_run:
        with tempfile.TemporaryDirectory(prefix="hermes-state-dry-run-") as scratch:
            copy = Path(scratch) / path.name
            backup_database(path, copy)
            report = _run_upgrade(copy)
        return {"ok": True, **report, "backup": None, "dry_run": True}
    # Nothing pending means nothing will be written: no backup to clutter the folder with.
    backup_path = str(backup_before_schema_change(path)) if backup and needed else None
    return {"ok": True, **_run_upgrade(path), "backup": backup_path, "dry_run": False}
