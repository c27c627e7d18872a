"""Opening a database file: the one place that reads its version, applies the newer-schema rule,
and opens it read-only (to look), writable (to maintain, never upgraded) or as a store (created
and upgraded, as Hermes opens it)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hermes_state_tools.core import paths
from hermes_state_tools.core.connection import (
    SQLITE_READONLY,
    WriteRunner,
    connect,
    is_corrupt,
    is_io_error,
    is_lock_error,
    looks_like_sqlite,
    result_code,
    retry_on_lock,
)
from hermes_state_tools.core.file_header import only_header_damaged, page_size_of_pages
from hermes_state_tools.core.layouts import read_layout, readable_columns
from hermes_state_tools.core.schema import (
    NEWEST_KNOWN,
    SCHEMA_VERSION,
    TABLE_COLUMNS,
    is_newer,
    object_names,
    read_version,
)
from hermes_state_tools.errors import (
    DamagedDatabaseError,
    DatabaseInUseError,
    DatabaseLockedError,
    NotAHermesDatabaseError,
    SchemaTooNewError,
    StorageIOError,
)
from hermes_state_tools.store.files import others_have_open, remove_stale_temps

# read_open is this module's private helper: what other modules need of it is re-exported here.
from hermes_state_tools.store.read_open import ReadConnection as ReadConnection
from hermes_state_tools.store.read_open import open_for_reading, open_own_pages, snapshot
from hermes_state_tools.store.read_open import writer_arrived as writer_arrived
from hermes_state_tools.store.wal_frames import SCAN_BEFORE_WRITE, find_break
from hermes_state_tools.upgrade.steps import UpgradeReport, bring_up_to_date, pending, rebuilds_search_index


def require_database_file(path: Path) -> None:
    """Refuse a path that is missing, empty, a folder or not SQLite (before anything opens it)."""
    if not path.exists():
        raise NotAHermesDatabaseError(f"{path}: no such database file")
    if not path.is_file():
        raise NotAHermesDatabaseError(f"{path}: not a file")
    if path.stat().st_size == 0:
        raise NotAHermesDatabaseError(f"{path}: empty file, not a Hermes database")
    try:
        sqlite_header = looks_like_sqlite(path)
    except OSError as exc:
        raise NotAHermesDatabaseError(f"{path}: cannot read ({exc.strerror})") from exc
    if not sqlite_header:
        if page_size_of_pages(path):  # its pages are SQLite's: the header (page 1) was destroyed
            raise DamagedDatabaseError(path, "the first page, with the SQLite header, is destroyed")
        raise NotAHermesDatabaseError(f"{path}: not an SQLite database")
    if (field := only_header_damaged(path)) is not None:
        # SQLite would say "not a database", yet the pages past the header are its own
        raise DamagedDatabaseError(path, f"the SQLite header on page 1 is damaged ({field})")


def map_open_error(path: Path, exc: sqlite3.Error) -> Exception:
    """The library error for an sqlite3 error met while opening `path` to read it."""
    if is_lock_error(exc):
        return DatabaseLockedError(f"{path}: database is locked ({exc})")
    if is_corrupt(exc):
        return DamagedDatabaseError(path, " ".join(str(exc).split()))
    if is_io_error(exc):
        return StorageIOError(f"{path}: {exc}")
    if result_code(exc) == SQLITE_READONLY:  # readable: only writing it is refused
        return read_only_refusal(path)
    return NotAHermesDatabaseError(f"{path}: unreadable database ({exc})")


def require_writable(path: Path) -> None:
    """Refuse (exit 2) a file or folder this process cannot write: SQLite would open the file read-only,
    leave a -wal and -shm beside it and fail at the first write (and a WAL database needs its folder
    writable for them)."""
    if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        raise read_only_refusal(path)


def read_only_refusal(path: Path) -> NotAHermesDatabaseError:
    """A database this user may read but not write: said as such, not as an unreadable file."""
    return NotAHermesDatabaseError(f"{path}: cannot be written: the file or its folder is read-only "
                                   "for this user; nothing was changed")


def open_read_connection(path: Path, *, tolerate_schema_damage: bool = True, stable: bool = False) -> ReadConnection:
    """A read-only connection that leaves no file beside `path` (see read_open), errors mapped; a
    malformed schema is read around (writable_schema) unless `tolerate_schema_damage` is False.
    `stable`: one state of the file for a long read (read_open.open_for_reading)."""
    try:
        return open_for_reading(path, tolerate_schema_damage=tolerate_schema_damage, stable=stable)
    except sqlite3.Error as exc:
        raise map_open_error(path, exc) from exc


def open_pages(path: Path, workdir: Path, mend: bool = False) -> tuple[ReadConnection, Path, Path | None]:
    """For salvage, which reads the file's pages itself: a read-only connection, the file whose pages
    hold every committed row, and the snapshot folder (in `workdir`, None: the file is read in place).
    With `mend` (the caller found commits hidden past a damaged WAL frame), they are read too. sqlite3
    errors are raised as SQLite gives them: salvage reads around damage itself."""
    return open_own_pages(path, workdir, mend)


def copy_as_is(path: Path, folder: Path) -> Path:
    """`path` with its -wal/-journal copied into the new private `folder` byte for byte (a damaged file
    too, which the backup API would refuse); the copy's path."""
    return snapshot(path, folder)[1]


# Who hears that a newer schema is being read (the CLI prints one warning line); set per invocation.
_newer_schema_listener: Callable[[Path, int], None] | None = None


def on_newer_schema(listener: Callable[[Path, int], None] | None) -> None:
    """Register the one callback told when a read command reads a file of a newer schema."""
    global _newer_schema_listener
    _newer_schema_listener = listener


def refuse_newer(path: Path, conn: sqlite3.Connection, version: int | None, *, allow_newer: bool = False) -> None:
    """The newer-schema rule: a file of a layout this tool does not know (a later Hermes than its facts
    reach, or a fork's) is never written by this tool. A later Hermes' layout it knows is written in
    that layout's own form (core/layouts.py).

    Reading an unknown layout is allowed where the caller says so (`allow_newer`), through the v6
    columns every later schema keeps; the listener is told once per file.
    """
    if version is None or not is_newer(version):
        return
    try:
        file = read_layout(conn)
    except sqlite3.DatabaseError as exc:
        raise map_open_error(path, exc) from exc
    if file.known:
        return
    if not allow_newer:
        raise SchemaTooNewError(path, version, NEWEST_KNOWN, file.unknown_because)
    if _newer_schema_listener is not None:
        _newer_schema_listener(path, version)


def _hermes_tables_present(path: Path, conn: sqlite3.Connection) -> None:
    """Refuse a database that is not Hermes' (no sessions/messages tables)."""
    try:
        tables = object_names(conn, "table")
    except sqlite3.DatabaseError as exc:
        raise map_open_error(path, exc) from exc
    if not {"sessions", "messages"} <= tables:
        raise NotAHermesDatabaseError(f"{path}: holds no Hermes schema (no sessions/messages tables)")


def _stored_version(path: Path, conn: sqlite3.Connection, tolerant: bool) -> int | None:
    try:
        return read_version(conn)
    except sqlite3.DatabaseError as exc:
        if tolerant:
            return None  # a damaged schema_version table: the check's `integrity` names it
        raise map_open_error(path, exc) from exc


def _look(path: Path, allow_newer: bool, tolerant_version: bool,
          hermes: bool, stable: bool = False) -> tuple[ReadConnection, int | None]:
    """One read-only connection and the stored version, the newer-schema rule applied (before the
    table guard, so a newer file is refused as newer) and, if `hermes`, the Hermes tables required."""
    conn = open_read_connection(path, stable=stable)
    try:
        version = _stored_version(path, conn, tolerant_version)
        refuse_newer(path, conn, version, allow_newer=allow_newer)
        if hermes:
            _hermes_tables_present(path, conn)
    except BaseException:
        conn.close()
        raise
    return conn, version


def open_hermes(path: Path, allow_newer: bool = False, *, tolerant_version: bool = False,
                stable: bool = False) -> tuple[ReadConnection, int | None]:
    """A read-only connection to an existing Hermes database (any version if `allow_newer`, else a
    supported one), with its stored version (None: none recorded, or unreadable if `tolerant_version`).
    Every look leaves no -wal/-shm behind, so a newer file keeps every byte."""
    require_database_file(path)
    return _look(path, allow_newer, tolerant_version, hermes=True, stable=stable)


def open_readonly(path: Path, stable: bool = False) -> ReadConnection:
    """A read-only connection to an existing file holding the Hermes tables (any version); `stable`:
    one state of the file for a long read."""
    require_database_file(path)
    conn = open_read_connection(path, stable=stable)
    try:
        _hermes_tables_present(path, conn)
    except BaseException:
        conn.close()
        raise
    return conn


def require_supported(path: Path, allow_newer: bool = False) -> int | None:
    """Refuse a missing, foreign or (unless `allow_newer`) newer file before anything else touches
    it; returns its stored version. One read-only look, closed at once."""
    conn, version = open_hermes(path, allow_newer)
    conn.close()
    return version


@contextmanager
def reading(path: Path, allow_newer: bool = False, stable: bool = False) -> Iterator[sqlite3.Connection]:
    """Open an existing database to look: read-only, never created, nothing left beside it, closed
    afterwards. A newer schema is refused unless `allow_newer` (read commands); `stable`: one state
    of the file for a long read (read_open.open_for_reading)."""
    conn, version = open_hermes(path, allow_newer, stable=stable)
    try:
        as_version_6(conn, is_newer(version) and not read_layout(conn).known)
        yield conn
    finally:
        conn.close()


def as_version_6(conn: sqlite3.Connection, newer: bool) -> None:
    """Make this read connection see `sessions` and `messages` with at least the version 6 columns,
    where the file's differ: temp views of those names, which SQLite resolves before the file's own
    tables. An older file's missing columns read as NULL (a v1 file has no title); the tables of a
    `newer` layout this tool does not know are read through the columns of the layouts it knows
    (`active`, `archived`, ... which decide what Hermes shows) and the few later ones it reads
    (`layouts.readable_columns`), as the warning line says. Every other column (a later Hermes' layout
    this tool knows, or another tool's) stays."""
    for table, columns in TABLE_COLUMNS.items():
        have = [row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")]
        wanted = [column.name for column in columns]
        missing = [name for name in wanted if name not in have]
        readable = readable_columns(table) | set(wanted)
        extra = [name for name in have if name not in readable]
        if not missing and not (newer and extra):
            continue
        kept = [name for name in have if name in readable] if newer else have
        shared = _SHARED_PROMPT if newer and table == "sessions" and _prompts_shared(conn, have) else None
        select = ", ".join([*(shared if shared and name == "system_prompt" else f't."{name}"' for name in kept),
                            *(f'NULL AS "{name}"' for name in missing)])
        conn.execute(f"CREATE TEMP VIEW {table} AS SELECT {select} FROM main.{table} AS t")


# Hermes from schema 25 keeps a session's system prompt once in `system_prompts`, named by
# `sessions.system_prompt_hash`, and reads it as this (the inline column stays its fallback).
_SHARED_PROMPT = ('COALESCE((SELECT p.prompt FROM main.system_prompts AS p WHERE p.hash = t.system_prompt_hash), '
                  't.system_prompt) AS "system_prompt"')


def _prompts_shared(conn: sqlite3.Connection, session_columns: list[str]) -> bool:
    """The file keeps prompts as Hermes 25+ does: `system_prompt_hash` naming a `system_prompts` table
    with the `hash` and `prompt` columns _SHARED_PROMPT reads (a fork's table of that name may not)."""
    if "system_prompt_hash" not in session_columns or "system_prompts" not in object_names(conn, "table"):
        return False
    return {"hash", "prompt"} <= {row[1] for row in conn.execute("PRAGMA main.table_info(system_prompts)")}


def hidden_columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """The columns of the file's own `table` a read connection's view of it (as_version_6) leaves out:
    those of a layout this tool does not know (empty for every other file)."""
    seen = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    return [row[1] for row in conn.execute(f"PRAGMA main.table_info({table})") if row[1] not in seen]


def damage_found(conn: sqlite3.Connection, full: bool = False) -> str | None:
    """Why the file on `conn` is not sound (None: it is): a duplicated sqlite_master entry, a
    quick_check line, or the SQLITE_CORRUPT error quick_check raised on a destroyed table page.
    `full`: integrity_check instead, which also compares every row with its index entries (a row
    whose last overflow page was zeroed differs from its index entry, and quick_check passes it)."""
    if isinstance(conn, ReadConnection) and conn.schema_damaged:
        return conn.schema_damaged
    try:
        twice = conn.execute("SELECT type, name FROM sqlite_master GROUP BY type, name HAVING COUNT(*) > 1").fetchone()
        if twice is not None:
            return f"sqlite_master holds the {twice[0]} {twice[1]} more than once"
        lines = [row[0] for row in conn.execute(f"PRAGMA {'integrity_check' if full else 'quick_check'}(1)")]
    except sqlite3.DatabaseError as exc:
        if is_corrupt(exc):
            return " ".join(str(exc).split())
        raise
    return None if lines == ["ok"] else " ".join(lines[0].split())[:200]


# How many times a look that saw a problem is made when writers keep tearing it (each arrival of a
# short-lived writer during an immutable look; the next look, with the writer there, shares its WAL).
# The last of them reads a private copy made while the file held still (read_open.open_for_reading's
# `stable`), which no writer can tear.
LOOKS = 4


def last_look(attempt: int) -> bool:
    """True for the last of the LOOKS: the one made on a stable private copy."""
    return attempt == LOOKS - 1


def _proven(path: Path, look: Callable[[bool], tuple[ReadConnection, int | None]], full: bool = False) -> int | None:
    """The version `look(stable)` read, once the file it opened is sound (DamagedDatabaseError
    otherwise); looked at again when a writer arrived during an immutable look (a checkpoint may have
    torn it), the last time on a stable copy."""
    for attempt in range(LOOKS):
        conn, version = look(last_look(attempt))
        try:
            problem = damage_found(conn, full)
            again = problem is not None and writer_arrived(conn, path)
        except sqlite3.Error as exc:
            raise map_open_error(path, exc) from exc
        finally:
            conn.close()
        if not again:
            break
    if problem is None and (hidden := find_break(path, SCAN_BEFORE_WRITE)) is not None:
        problem = f"{hidden.detail()}; `recover` reads past the damage"  # a write here would drop them
    if problem is not None:
        raise DamagedDatabaseError(path, problem)
    return version


def prove_sound(path: Path, full: bool = False) -> None:
    """Before anything writes: the file must pass quick_check (`full`: integrity_check) and hold each
    sqlite_master entry once, else DamagedDatabaseError and not a byte written (SQLite happily writes
    into a damaged file)."""
    require_database_file(path)
    _proven(path, lambda stable: (open_read_connection(path, stable=stable), None), full)


def require_sound(path: Path, full: bool = False) -> int | None:
    """require_supported and prove_sound in one look: an existing Hermes database of a supported
    schema, sound, before anything writes to it; returns its stored version. `full`: see damage_found."""
    require_database_file(path)
    return _proven(path, lambda stable: _look(path, False, False, hermes=True, stable=stable), full)


# Above this size a rebuild of the search index holds the write lock longer than a writer waits for it
# (measured: about 6-10 MB a second on a busy 2-core machine; Hermes' appends give up after about 17 s).
LONG_LOCK_BYTES = 32 * 2**20


def refuse_long_lock_while_open(path: Path, what: str) -> None:
    """Refuse (DatabaseInUseError, exit 75) work that holds the write lock for many seconds while another
    process has the database open: its writes (a running Hermes' appends) would time out and fail."""
    size = path.stat().st_size
    if size > LONG_LOCK_BYTES and others_have_open(path):
        size //= 2**20
        raise DatabaseInUseError(f"{path}: {what} holds the write lock for the whole rebuild (about {size // 8} s "
                                 f"at {size} MiB), and another process has the database open: its writes would "
                                 "time out; stop Hermes (the gateway) and run it again")


@contextmanager
def writing(path: Path, *, proven: bool = False,
            full: bool = False) -> Iterator[tuple[sqlite3.Connection, WriteRunner]]:
    """Open an existing supported, sound database to maintain it: writable, with its write runner,
    never upgraded. `proven`: the caller found the file sound a moment ago (prove_sound, or a check whose
    integrity step ran and found nothing), so its quick_check (0.8 s at a million messages) is not run
    a second time; the schema is still looked at. `full`: integrity_check instead of quick_check, for
    work that rebuilds indexes from the rows (VACUUM, the FTS rebuild) and so would make a destroyed
    row their truth."""
    if proven:
        require_supported(path)  # a missing, foreign or newer file is refused before anything writes
    else:
        require_sound(path, full)  # and a damaged one
    require_writable(path)
    remove_stale_temps(path.parent)  # what a killed backup/repair/restore left (a swap is finished first)
    conn, runner = open_writable(path, threading.RLock())
    try:
        yield conn, runner
    finally:
        conn.close()


@dataclass(frozen=True)
class SchemaLook:
    """What opening an existing file as a store would do to its schema, from one read-only look."""

    pending: bool  # an upgrade step or a structure repair is due
    rebuilds_index: bool  # ... one that recreates the search index and fills it from every message
    state: tuple[object, ...]  # the version row and SQLite's schema cookie: what every such step changes

    @property
    def version(self) -> int | None:
        """The version row (None when it is missing or not a number)."""
        return self.state[0] if isinstance(self.state[0], int) else None


def look_at_schema(path: Path) -> SchemaLook:
    """One read-only look at the file's schema (the file's own tables, not a read command's v6 views)."""
    conn = open_read_connection(path)
    try:
        return SchemaLook(pending(conn), rebuilds_search_index(conn),
                          (read_version(conn), conn.execute("PRAGMA schema_version").fetchone()[0]))
    finally:
        conn.close()


def schema_change_pending(path: Path) -> bool:
    """True when opening `path` as a store would change its schema (an upgrade step or a repair is due)."""
    return look_at_schema(path).pending


def open_writable(path: Path, lock: threading.RLock) -> tuple[sqlite3.Connection, WriteRunner]:
    """A WAL-mode read-write connection on a 0600 file, foreign keys enforced."""
    paths.create_private_file(path)
    existed = [side.exists() for side in paths.sidecar_paths(path)]
    conn = connect(path)
    try:
        retry_on_lock(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
        conn.execute("PRAGMA foreign_keys=ON")
    except DatabaseLockedError:
        conn.close()
        raise
    except sqlite3.DatabaseError as exc:
        conn.close()
        _remove_new_empty_sidecars(path, existed)
        raise map_open_error(path, exc) from exc  # a full disk is 74, damage 65, else not a database
    paths.tighten_permissions(path)
    return conn, WriteRunner(conn, lock)


def _remove_new_empty_sidecars(path: Path, existed: list[bool]) -> None:
    """A failed open (a full disk: the -shm could not grow) leaves the -wal/-shm it just created; with
    the -wal empty they hold nothing, and a stray -shm would fail every later reader."""
    wal, shm = paths.sidecar_paths(path)
    if existed[0] or (wal.exists() and wal.stat().st_size):
        return
    wal.unlink(missing_ok=True)
    if not existed[1]:
        shm.unlink(missing_ok=True)


def open_store(path: Path, lock: threading.RLock, proven: bool = False,
               schema: int = SCHEMA_VERSION) -> tuple[sqlite3.Connection, WriteRunner, UpgradeReport]:
    """Open (creating if needed, in the layout of `schema`) and bring a schema 1-5 to v6, one transaction
    per step; a later Hermes' layout keeps its own. `proven`: the caller's require_sound passed on this
    file a moment ago (an import checks before it reads a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not proven and path.exists() and path.stat().st_size:  # a newer file refused, then a damaged one
        require_database_file(path)
        _proven(path, lambda stable: _look(path, False, False, hermes=False, stable=stable))
    conn, runner = open_writable(path, lock)
    try:
        report = bring_up_to_date(conn, runner.run, schema)
    except BaseException:
        conn.close()
        raise
    paths.tighten_permissions(path)
    return conn, runner, report
