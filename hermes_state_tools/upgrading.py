"""Upgrading a database file: refuse what is too new, back it up, then run the pending steps."""

from __future__ import annotations

import tempfile
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .backup import backup_database, timestamped_path
from .database import open_store, refuse_newer
from .readonly import open_readonly, require_supported
from .upgrade import pending


def _check_upgradable(path: Path) -> bool:
    """Refuse a missing, foreign or too-new file before any copy or write; True if work is pending."""
    refuse_newer(path)  # first, with a look that leaves no trace on a file we must not touch
    conn = open_readonly(path)
    try:
        require_supported(conn, path)
        return pending(conn)
    finally:
        conn.close()


def _run_upgrade(path: Path) -> dict[str, Any]:
    conn, _runner, report = open_store(path, threading.RLock())
    conn.close()
    return asdict(report)


def upgrade_file(path: Path, *, backup: bool = True, dry_run: bool = False) -> dict[str, Any]:
    """Bring `path` to the current schema; the report has from/to version, steps, backup, renames."""
    needed = _check_upgradable(path)
    if dry_run:
        with tempfile.TemporaryDirectory(prefix="hermes-state-dry-run-") as scratch:
            copy = Path(scratch) / path.name
            backup_database(path, copy)
            report = _run_upgrade(copy)
        return {"ok": True, **report, "backup": None, "dry_run": True}
    # Nothing pending means nothing will be written: no backup to clutter the folder with.
    backup_path = str(backup_database(path, timestamped_path(path)).path) if backup and needed else None
    return {"ok": True, **_run_upgrade(path), "backup": backup_path, "dry_run": False}
