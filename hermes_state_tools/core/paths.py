"""Where the store lives: HERMES_HOME is read at call time, never frozen at import."""

from __future__ import annotations

import os
import stat
from pathlib import Path

DB_FILENAME = "state.db"
SIDECAR_SUFFIXES = ("-wal", "-shm")


def hermes_home() -> Path:
    """`$HERMES_HOME` (whitespace-stripped) or `~/.hermes` when it is unset or blank."""
    value = os.environ.get("HERMES_HOME", "").strip()
    return Path(value).expanduser() if value else Path.home() / ".hermes"


def default_db_path() -> Path:
    """The default database file, `$HERMES_HOME/state.db`."""
    return hermes_home() / DB_FILENAME


def sidecar_paths(db_path: Path) -> list[Path]:
    """The WAL and shared-memory files SQLite keeps next to the database."""
    return [db_path.with_name(db_path.name + suffix) for suffix in SIDECAR_SUFFIXES]


def unclaimed(dest: Path) -> bool:
    """No database under this name, and nothing SQLite left of one beside it: a -wal, -shm or
    -journal of a deleted (or still open) file would be read into a file placed here."""
    return not any(p.exists() for p in (dest, *sidecar_paths(dest), dest.with_name(dest.name + "-journal")))


def create_private_file(db_path: Path) -> None:
    """Create the database file owner-only (0600) before SQLite would create it with the umask."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(db_path, flags, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def tighten_permissions(db_path: Path) -> None:
    """Take group and other access off the database and its sidecars (0644 -> 0600).

    The owner's bits are kept: a file its owner made read-only (0444 -> 0400) must stay
    read-only, never become writable because a command opened it to write and failed.
    chmod(2) on the path, never open+close: closing any descriptor of the file would
    drop this process's POSIX locks on it, including those of a live SQLite connection.
    """
    if os.name == "nt":
        return
    for path in (db_path, *sidecar_paths(db_path)):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        private = stat.S_IMODE(st.st_mode) & 0o700
        if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != private:
            try:
                os.chmod(path, private)
            except PermissionError:
                # Someone else's file opened by a reader we share a group with: leave it be.
                pass


def file_identity(path: Path) -> tuple[int, int, int] | None:
    """(size, mtime in ns, inode) of a file, None when it cannot be stat'ed: what changes when a writer
    writes into it, checkpoints into it, or replaces it."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino
