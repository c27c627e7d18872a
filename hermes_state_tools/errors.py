"""One error hierarchy for the library; the CLI maps each class to an exit code in one place."""

from __future__ import annotations

import sqlite3


class HermesStateError(Exception):
    """Base class of every error this library raises on purpose."""


class NewStoreInterrupted(KeyboardInterrupt):
    """Ctrl-C (or a stop signal) while a new database was built aside: none of it was placed, so a
    re-run starts over. An interrupt still (not an Exception), so that everything above unwinds as for
    Ctrl-C; its text says what was lost."""


class NotAHermesDatabaseError(HermesStateError):
    """The file is missing, unreadable, not SQLite, or holds no Hermes schema."""


class SchemaTooNewError(HermesStateError):
    """The database has a layout this tool does not know (a later Hermes than its facts reach, or a
    fork's); it was not touched."""

    def __init__(self, path: object, version: int, supported: int, because: str | None = None) -> None:
        self.path, self.version, self.supported = path, version, supported
        why = because or f"schema version {version} is newer than the newest layout this tool knows ({supported})"
        super().__init__(f"{path}: {why}; the file was not changed (this tool writes the layouts it knows "
                         "and only reads a later one)")


class DatabaseLockedError(HermesStateError, sqlite3.OperationalError):
    """Another process held the write lock past the whole retry budget; nothing was changed."""


class UnknownSessionError(HermesStateError, sqlite3.IntegrityError, LookupError):
    """A call named a session id that is not in the store."""


DAMAGED_REFUSAL = ("the database is damaged; nothing was written; run `hermes-state check`: it says whether `repair` "
                   "or `recover` fixes it")


class DamagedDatabaseError(HermesStateError):
    """SQLite finds the file malformed or its integrity check fails; a writing command refused, nothing changed."""

    def __init__(self, path: object, detail: str = "") -> None:
        self.path, self.detail = path, detail
        super().__init__(f"{path}: {DAMAGED_REFUSAL}" + (f" ({detail})" if detail else ""))


class DatabaseInUseError(HermesStateError):
    """Another process has the database open; a command that replaces the file refused, nothing changed."""


class StorageIOError(HermesStateError):
    """The disk failed under a write (full, quota, I/O error); the transaction was rolled back, nothing half-written."""


class DestinationFullError(StorageIOError):
    """No room left in the folder of a new file (recover's DEST): the message names that folder."""


class UpgradeError(HermesStateError):
    """A schema upgrade step could not be applied; the database keeps the last committed version."""


class BackupError(HermesStateError):
    """The copy could not be made or did not verify; the source was not changed."""


class DestinationExistsError(BackupError):
    """The backup destination exists already; it is never overwritten."""


class DestinationUnwritableError(BackupError):
    """The destination's folder does not let this user create the file (permissions); nothing was left."""


class UnsafeDestinationError(BackupError):
    """A file to write would destroy or be destroyed: the database itself, a name SQLite takes for
    one of a database's own files (`-wal`, `-shm`, `-journal`), or another database."""


class SessionIdError(HermesStateError):
    """An id or id prefix given by the user matches no session, or more than one."""


class ConfirmationRequired(HermesStateError):
    """A command that deletes ran without a terminal to confirm on and without --yes; nothing changed."""


class SameDatabaseError(HermesStateError):
    """`merge` was given the database it merges into as the other one."""


class ImportReaderError(HermesStateError):
    """The import's reader process failed or died; nothing is half-written, a re-run finishes the import."""


class SearchIndexMissingError(HermesStateError):
    """The FTS table or its triggers are missing; `repair` (or opening with SessionDB) rebuilds them."""


class LayoutMismatchError(HermesStateError):
    """`--schema N` named a layout for a database that exists in another one (a file keeps its layout)."""


class UnknownSourceError(HermesStateError):
    """A --source that no session in the database has (the known sources are listed)."""


class ArchiveError(HermesStateError):
    """Base of the fleet archive's errors (the archive on PostgreSQL)."""


class ArchiveUnreachableError(ArchiveError):
    """The archive's server cannot be reached or refused the login; nothing was changed (exit 69)."""


class ArchiveURLError(ArchiveError):
    """The archive URL is malformed or missing; nothing was tried (a usage error)."""


class ArchiveDriverMissingError(ArchiveError):
    """psycopg, the PostgreSQL driver the archive needs, is not installed (a usage error)."""


class ArchiveTooNewError(ArchiveError):
    """The archive was written by a newer hermes-state-tools: it is read, never written (exit 3)."""


class UnknownHostError(ArchiveError):
    """A --host the archive holds nothing of (the known hosts are listed; a usage error)."""


class ArchiveHostMismatchError(ArchiveError):
    """The archive holds other messages under this host's message ids: the file is not the store it
    holds for that host (another machine of the same name, a store rebuilt since); nothing was written."""
