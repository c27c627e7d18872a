"""Reading and planning in a second process, so parsing runs on one core while SQLite writes on the other.

A thread cannot do this: the writer's `executemany` drops and retakes the GIL for every row,
and a busy parsing thread makes each retake wait. A child process sends prepared batches
down its stdout instead; if the importing process dies, the pipe breaks and the child
exits with it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import traceback
from collections.abc import Iterator
from datetime import tzinfo
from pathlib import Path
from typing import Any, BinaryIO

import hermes_state_tools
import importers

from ..connection import connect
from ..errors import ImportReaderError
from .prepare import Prepared, batches, prepare
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


def serve(args: tuple[Path, list[Path], tzinfo | None, str | None], out: BinaryIO) -> None:
    """The child's side: read, plan, and send each batch down `out` as a pickle."""
    db_path, files, tz, source = args
    log = ReadLog()
    try:
        for batch in prepared_batches(db_path if db_path.exists() else None, files, tz, source, log):
            pickle.dump(("batch", batch, log.problems, log.files_read), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
            log.problems, log.files_read = [], 0
        message: tuple[Any, ...] = ("done", None, log.problems, log.files_read)
    except BrokenPipeError:
        return  # the importing process is gone: stop quietly
    except BaseException:
        message = ("error", traceback.format_exc(limit=8), log.problems, log.files_read)
    with contextlib.suppress(BrokenPipeError):
        pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
        out.flush()


def _child_environment() -> dict[str, str]:
    """The environment for the child, with this process's copies of the packages first on its path."""
    roots = {str(Path(module.__file__).resolve().parent.parent) for module in (hermes_state_tools, importers)}
    inherited = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*sorted(roots), *([inherited] if inherited else [])])}


def remote_batches(db_path: Path, files: list[Path], tz: tzinfo | None, source: str | None,
                   log: ReadLog) -> Iterator[list[Prepared]]:
    """`prepared_batches` computed in a child process (`python -m hermes_state_tools.ingest.reader_child`).

    A plain subprocess rather than multiprocessing: spawn would re-run the caller's main
    module in the child, which breaks any script that calls the library without a
    `__main__` guard.
    """
    child = subprocess.Popen([sys.executable, "-m", f"{__package__}.reader_child"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=_child_environment())
    assert child.stdin is not None and child.stdout is not None
    try:
        pickle.dump((db_path, files, tz, source), child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        child.stdin.close()
        while True:
            try:
                kind, payload, problems, files_read = pickle.load(child.stdout)
            except (EOFError, pickle.UnpicklingError) as exc:
                raise ImportReaderError(f"the import's reader process died unexpectedly (exit {child.wait()}); "
                                        "what was imported so far is kept, re-run to finish") from exc
            log.problems += problems
            log.files_read += files_read
            if kind == "error":
                last = payload.strip().splitlines()[-1] if payload.strip() else "unknown error"
                raise ImportReaderError(f"the import's reader process failed ({last}); what was imported so far "
                                        "is kept, re-run to finish")
            if kind == "done":
                return
            yield payload
    finally:
        child.stdout.close()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
