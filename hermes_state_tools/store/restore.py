"""`restore BACKUP`: verify the backup, keep the current file (with its -wal) aside as
`state.db.pre-restore-<timestamp>`, and put a verified copy of the backup in its place atomically."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core.reports import Report
from hermes_state_tools.errors import DamagedDatabaseError, DatabaseInUseError, NotAHermesDatabaseError
from hermes_state_tools.store.backup import backup_database
from hermes_state_tools.store.files import (
    dated_name,
    others_have_open,
    remove_stale_temps,
    remove_with_sidecars,
    swap_in,
    temp_beside,
    to_wal,
)
from hermes_state_tools.store.opening import require_supported


@dataclass(frozen=True)
class RestorePlan:
    """What a restore would do, shown before anything changes."""

    db: Path
    backup: Path
    aside: Path  # where the current file goes


@dataclass(frozen=True)
class RestoreReport(Report):
    path: str
    restored_from: str
    previous: str | None  # where the file that was in place now is (None: there was none)
    sessions: int
    messages: int
    ok: bool = True


def restore_file(db: Path, backup: Path, confirm: Callable[[RestorePlan], None] | None = None) -> RestoreReport:
    """Replace `db` by `backup` (verified: integrity_check and the same counts in the copy placed).

    Refuses a backup that is missing, foreign or of a newer schema, a `db` that is missing, empty,
    foreign or that a newer Hermes wrote (a damaged one is replaced), and refuses while another
    process has `db` open. A kill at any moment leaves `db` as either the old or the restored file,
    the old one always kept under its pre-restore name once the swap began.
    """
    require_supported(backup)  # a missing, foreign or newer backup is refused before anything changes
    _refuse_what_is_not_a_store(db)  # so there is a file in place
    if others_have_open(db):
        raise DatabaseInUseError(f"{db}: another process has the database open; stop it (Hermes) and re-run restore")
    plan = RestorePlan(db, backup, dated_name(db, "pre-restore"))
    if confirm is not None:
        confirm(plan)  # raises to cancel
    remove_stale_temps(db.parent)
    staged = temp_beside(db, "restore")
    remove_with_sidecars(staged)
    try:
        copied = backup_database(backup, staged)  # the backup API: the copy is verified before it exists
        to_wal(staged)  # a backup is a file on its own (journal_mode=DELETE); the store is not
        if db.exists() and others_have_open(db):
            raise DatabaseInUseError(f"{db}: another process opened the database; nothing was changed")
        aside = dated_name(db, "pre-restore") if db.exists() else None
        swap_in(db, staged, aside)
    finally:
        remove_with_sidecars(staged)
    return RestoreReport(str(db), str(backup), str(aside) if aside else None, copied.sessions, copied.messages)


def _refuse_what_is_not_a_store(db: Path) -> None:
    """restore replaces a Hermes database, a damaged one included (what it is for: moved aside as usual).
    A missing, empty or foreign file is refused (exit 2, cli.md's rule for every command but import),
    and one a newer Hermes wrote (SchemaTooNewError, exit 3): this tool never writes such a file, and
    putting an older store under its name is a write."""
    if not db.exists():
        raise NotAHermesDatabaseError(f"{db}: no database to restore over; a lost one is put back with "
                                      f"`hermes-state --db BACKUP backup {db}` (a verified copy)")
    try:
        require_supported(db)
    except DamagedDatabaseError:
        pass
