"""Opening an existing database for the toolkit: read-only to look, writable to maintain; never created or upgraded."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .connection import WriteRunner
from .database import open_writable, refuse_newer
from .readonly import open_readonly, require_supported


@contextmanager
def reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to an existing Hermes database of a supported schema, closed afterwards."""
    # The version is read first by a look that leaves no -wal/-shm behind, so a newer file keeps every byte.
    refuse_newer(path)
    conn = open_readonly(path)
    try:
        require_supported(conn, path)
        yield conn
    finally:
        conn.close()


@contextmanager
def writing(path: Path) -> Iterator[tuple[sqlite3.Connection, WriteRunner]]:
    """A writable connection (with its write runner) to an existing supported Hermes database, never upgraded."""
    with reading(path):
        pass  # refuses a missing, foreign or newer file before anything opens it for writing
    conn, runner = open_writable(path, threading.RLock())
    try:
        yield conn, runner
    finally:
        conn.close()
