"""`recover DEST` and the file rebuild behind `repair` of derived damage (see salvage.py)."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hermes_state_tools.core.connection import is_disk_full
from hermes_state_tools.core.paths import create_private_file, file_identity, sidecar_paths
from hermes_state_tools.core.reports import Report
from hermes_state_tools.errors import DamagedDatabaseError, DatabaseInUseError, DestinationFullError, StorageIOError
from hermes_state_tools.maintenance.salvage import SalvageReport, rebuild_into
from hermes_state_tools.store.files import (
    dated_name,
    others_have_open,
    place,
    remove_stale_temps,
    remove_with_sidecars,
    require_new_destination,
    swap_in,
    temp_beside,
    to_wal,
)
from hermes_state_tools.store.opening import require_database_file


def _rebuild(source: Path, dest: Path, purpose: str, exact: bool) -> tuple[SalvageReport, Path]:
    """The verified rebuilt file under its temporary name beside `dest`; nothing left on failure."""
    remove_stale_temps(dest.parent)
    tmp, workdir = temp_beside(dest, purpose), temp_beside(dest, "snap")
    remove_with_sidecars(tmp)
    try:
        create_private_file(tmp)  # conversations: owner-only (0600), like the store itself
        return rebuild_into(source, tmp, workdir, exact=exact), tmp
    except BaseException as exc:
        remove_with_sidecars(tmp)
        if is_disk_full(exc) and not isinstance(exc, StorageIOError):  # the new file's folder, not the source
            reason = " ".join(str(exc).split())
            raise DestinationFullError(f"{dest.parent}: no room for the new file ({reason}); nothing was left there"
                                       ) from exc
        raise
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@dataclass(frozen=True)
class RecoverReport(Report):
    """What `recover` placed at `path`: whether every canonical row came back, and what the salvage found."""

    path: str
    complete: bool
    salvage: Mapping[str, Any]  # SalvageReport.as_dict(), as it was when the file was placed

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "path": self.path, "complete": self.complete, **self.salvage}


def recover_file(source: Path, dest: Path) -> RecoverReport:
    """Salvage every readable session and message of `source` into a new verified v6 file at `dest`.

    `source` is only read (no -wal/-shm created); `dest` must not exist and appears only complete.
    """
    with contextlib.suppress(DamagedDatabaseError):  # a destroyed header: its pages are still read
        require_database_file(source)
    require_new_destination(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    report, tmp = _rebuild(source, dest, "recover", exact=False)
    try:
        place(tmp, dest)
    finally:
        remove_with_sidecars(tmp)
    return RecoverReport(str(dest), report.complete, MappingProxyType(report.as_dict()))


def _identities(db: Path) -> tuple[object, ...]:
    """What a commit changes: the database's and its WAL's size, time and inode."""
    return tuple(file_identity(path) for path in (db, *sidecar_paths(db)[:1]))


def rebuild_in_place(db: Path) -> dict[str, Any]:
    """repair of derived damage: every canonical row copied exactly into a fresh file beside `db`,
    schema, indexes and FTS created there, verified, then swapped in; the original (with its -wal)
    kept as `<db>.pre-repair-<timestamp>`. Refuses while another process has `db` open."""
    if others_have_open(db):
        raise DatabaseInUseError(f"{db}: another process has the database open; stop it (Hermes) and re-run repair")
    read = _identities(db)
    report, tmp = _rebuild(db, db, "repair", exact=True)
    try:
        to_wal(tmp)
        # again, right before the swap: a writer that came, committed and left meanwhile changed the file,
        # and its rows are not in the rebuilt one
        if others_have_open(db):
            raise DatabaseInUseError(f"{db}: another process opened the database; nothing was changed; re-run repair")
        if _identities(db) != read:
            raise DatabaseInUseError(f"{db}: another process wrote to the database while repair rebuilt it; "
                                     "nothing was changed; re-run repair")
        aside = dated_name(db, "pre-repair")
        swap_in(db, tmp, aside)
    finally:
        remove_with_sidecars(tmp)
    return {"backup": str(aside), **report.as_dict()}
