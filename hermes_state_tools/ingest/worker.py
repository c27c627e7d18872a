"""Where batches come from: read and planned in this process, or in a reader process (reader_child.py)
so parsing, planning and staging rows run on one core while SQLite writes on the other.

A thread cannot do this: the writer's `executemany` drops and retakes the GIL for every row,
and a busy parsing thread makes each retake wait. The reader sends prepared batches down its
stdout instead; if the importing process dies, the pipe breaks and the reader exits with it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import tzinfo
from pathlib import Path
from typing import BinaryIO

import hermes_state_tools
import importers

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from ..connection import connect
from ..errors import ImportReaderError
from .channel import ACK, receive
from .prepare import Batch, Prepared, batches, prepare
from .units import ReadLog, UnitReader


def prepared_batches(db_path: Path | None, files: list[Path], tz: tzinfo | None, source: str | None,
                     log: ReadLog) -> Iterator[list[Prepared]]:
    """Units read from `files`, planned against the database as it is (None: no database yet)."""
    conn = connect(db_path, readonly=True) if db_path is not None else None
    try:
        reader = UnitReader(files, tz, source, log)
        yield from batches(p for unit in reader.units() if (p := prepare(conn, unit)) is not None)
    finally:
        if conn is not None:
            conn.close()


def local_batches(db_path: Path, files: list[Path], tz: tzinfo | None, source: str | None,
                  log: ReadLog) -> Iterator[Batch]:
    """Batches read and planned in this process (small imports: a second one costs more to start)."""
    for items in prepared_batches(db_path, files, tz, source, log):
        yield Batch(items)


def _child_environment() -> dict[str, str]:
    """The environment for the child, with this process's copies of the packages first on its path."""
    roots = {str(Path(module.__file__).resolve().parent.parent) for module in (hermes_state_tools, importers)}
    inherited = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*sorted(roots), *([inherited] if inherited else [])])}


def _widen_pipe(pipe: BinaryIO) -> None:
    """Let the pipe hold up to 1 MiB (Linux; 64 KiB by default), so a batch crosses in a few large
    reads instead of many small hand-offs between the two processes."""
    if fcntl is None:
        return
    with contextlib.suppress(AttributeError, OSError):  # not Linux; a lower pipe-max-size
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 2**20)


def remote_batches(db_path: Path, files: list[Path], tz: tzinfo | None, source: str | None,
                   log: ReadLog) -> Iterator[Batch]:
    """`prepared_batches` computed in a child process (`python -m hermes_state_tools.ingest.reader_child`).

    A plain subprocess rather than multiprocessing: spawn would re-run the caller's main
    module in the child, which breaks any script that calls the library without a
    `__main__` guard. Where no process can be started (an embedded interpreter without an
    executable, a process limit), the batches are read here instead.
    """
    try:
        child = subprocess.Popen([sys.executable or "python3", "-m", f"{__package__}.reader_child"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_child_environment())
    except OSError:
        yield from local_batches(db_path, files, tz, source, log)
        return
    assert child.stdin is not None and child.stdout is not None
    _widen_pipe(child.stdout)
    staging: Path | None = None
    try:
        pickle.dump((db_path, files, tz, source), child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        child.stdin.flush()
        while True:
            try:
                kind, payload, problems, files_read = receive(child.stdout)
            except (EOFError, pickle.UnpicklingError) as exc:
                raise ImportReaderError(f"the import's reader process died unexpectedly (exit {child.wait()}); "
                                        "what was imported so far is kept, re-run to finish") from exc
            log.problems += problems
            log.files_read += files_read
            if kind == "staging":
                staging = payload
            elif kind == "error":
                last = payload.strip().splitlines()[-1] if payload.strip() else "unknown error"
                raise ImportReaderError(f"the import's reader process failed ({last}); what was imported so far "
                                        "is kept, re-run to finish")
            elif kind == "done":
                return
            else:
                yield payload
                with contextlib.suppress(BrokenPipeError):  # committed: the reader may stage another batch
                    child.stdin.write(ACK)
                    child.stdin.flush()
    finally:
        for pipe in (child.stdin, child.stdout):
            with contextlib.suppress(BrokenPipeError):
                pipe.close()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if staging is not None:  # the reader removes it; this covers a reader that was killed
            shutil.rmtree(staging, ignore_errors=True)
