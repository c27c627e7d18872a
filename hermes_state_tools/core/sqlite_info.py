"""The SQLite library underneath, and what is known to be wrong with it."""

from __future__ import annotations

import sqlite3

# SQLite 3.7.0 (WAL's first release) through 3.51.2 can corrupt a WAL database when two
# connections write or checkpoint at the same moment (the "WAL-reset" bug, fixed in 3.51.3):
# exactly a Hermes gateway plus a CLI plus this toolkit on one state.db.
WAL_RESET_BUG = ((3, 7, 0), (3, 51, 2))


def sqlite_version() -> str:
    """The version of the SQLite library this Python links, e.g. '3.40.1'."""
    return sqlite3.sqlite_version


def has_wal_reset_bug(version: tuple[int, ...] | None = None) -> bool:
    """True when `version` (default: the one in use) is inside the WAL-reset bug's range."""
    version = sqlite3.sqlite_version_info if version is None else version
    first, last = WAL_RESET_BUG
    return first <= tuple(version[:3]) <= last


def wal_reset_notes() -> list[str]:
    """The WAL-reset warning when the SQLite in use has the bug, as a note (not a finding). Reports say
    it where it matters, `status` and a damaged file's check, and carry `sqlite_wal_reset_bug` always."""
    if not has_wal_reset_bug():
        return []
    return [f"SQLite {sqlite_version()} has the WAL-reset bug (3.7.0 through 3.51.2, fixed in 3.51.3): "
            "concurrent writers or checkpoints can corrupt a WAL database; run on SQLite 3.51.3 or later "
            "(see docs/damage.md, 'Running on a fixed SQLite')"]
