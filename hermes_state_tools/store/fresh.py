"""A store that does not exist yet, built under a private temporary name and put in place whole.

Nobody can be using a file that does not exist, so a first import need not pay for what lets a
live gateway write in between (the WAL's second copy of every page, checkpoints, fsyncs): it
builds the file with an in-memory journal, no syncs (its pages written back meanwhile,
store/writeback.py) and FTS5 merging its segments in larger steps (tables/fts.py:merge_later),
switches it to WAL at the end, fsyncs it once and links it into place. A failure or a kill
leaves no database under the real name: the temporary file is removed here, or (after a kill)
by the next run's `remove_stale_temps`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from hermes_state_tools.core.paths import unclaimed
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.errors import DestinationExistsError, StorageIOError
from hermes_state_tools.store.files import place, remove_stale_temps, remove_with_sidecars, temp_beside
from hermes_state_tools.store.session_db import SessionDB
from hermes_state_tools.store.writeback import writing_back
from hermes_state_tools.tables import fts

T = TypeVar("T")

TEMP_PURPOSE = "import"


def build_new_store(dest: Path, build: Callable[[SessionDB], T], schema: int = SCHEMA_VERSION) -> T:
    """Run `build` on a new store (mode 0600; schema v6, or the later layout `schema`) that becomes `dest`
    only once it is complete.

    Raises DestinationExistsError, with nothing left behind, when `dest` appeared meanwhile (another
    process created it): it is never overwritten. Any other failure also removes the new file."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(dest.parent)  # what a killed build (or backup, repair, restore) left
    temp = temp_beside(dest, TEMP_PURPOSE)
    remove_with_sidecars(temp)  # our pid's name: only a dead process that had the same pid left this
    try:
        with SessionDB(temp, schema=schema) as db, writing_back(temp):
            _unjournaled(db)
            result = build(db)
            _to_wal(db, temp)
        if not unclaimed(dest):  # appeared meanwhile: the caller imports into what is there
            raise DestinationExistsError(f"{dest}: a database (or what SQLite left of one) appeared meanwhile")
        place(temp, dest)  # fsyncs the file, links it (never over another), fsyncs the folder
    except BaseException:
        remove_with_sidecars(temp)
        raise
    return result


def _unjournaled(db: SessionDB) -> None:
    # MEMORY, not OFF: the writer rolls one session back (SAVEPOINT / ROLLBACK TO) when SQLite
    # refuses a value, and a transaction still rolls back whole; only a crash needs a journal on
    # disk, and a crashed build is thrown away.
    db.handle.conn.execute("PRAGMA journal_mode=MEMORY").fetchone()
    db.handle.conn.execute("PRAGMA synchronous=OFF")  # one fsync before placing replaces them all
    fts.merge_later(db.handle.conn)  # nobody searches the file before it is placed


def _to_wal(db: SessionDB, temp: Path) -> None:
    """The file as Hermes opens one: FTS5's default merging again, and WAL mode, as a store opened the
    usual way is."""
    fts.merge_as_usual(db.handle.conn)
    mode = db.handle.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise StorageIOError(f"{temp}: SQLite could not switch the new database to WAL mode (it stayed {mode})")
