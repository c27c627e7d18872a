"""Batches read in the reader process (process.py), as the importing process receives them: it asks the
reader (launch.ask), takes each batch from the pipe and acknowledges it once committed, so parsing,
planning and staging rows run on one core while SQLite writes on the other.

A thread cannot do this: the writer's `executemany` drops and retakes the GIL for every row,
and a busy parsing thread makes each retake wait. The reader sends prepared batches down its
stdout instead; if the importing process dies, the pipe breaks and the reader exits with it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
from collections.abc import Generator, Sequence
from datetime import tzinfo
from pathlib import Path

from hermes_state_tools.core.records import Problem
from hermes_state_tools.errors import ImportReaderError
from hermes_state_tools.ingest.planning.batches import Batch, local_batches
from hermes_state_tools.ingest.planning.units import ReadLog
from hermes_state_tools.ingest.reader.channel import ACK, BrokenChannel, Read, receive
from hermes_state_tools.ingest.reader.launch import ReaderProcess, ask, start_reader, stop_reader
from hermes_state_tools.ingest.writing.staging import RERUN


def _reader_failed(child: ReaderProcess, why: str) -> ImportReaderError:
    """The error to raise, once the reader has exited (closing its pipes tells it to)."""
    _stop_reader(child, None)
    return ImportReaderError(f"the import's reader process {why} (exit {child.returncode}); {RERUN}")


def _stop_reader(child: ReaderProcess, staging: Path | None) -> None:
    """Close the pipes (the reader's cue to stop), wait for it, and remove what a killed one left."""
    stop_reader(child, given_work=True)
    if staging is not None:  # the reader removes it; this covers a reader that was killed
        shutil.rmtree(staging, ignore_errors=True)


def found_by(child: ReaderProcess) -> tuple[list[str], list[Problem], bool] | None:
    """What a reader asked to find found: the files (as text, in discovery's order), discovery's
    notices, and whether it reads them already, planned against no database. None when it failed
    or is gone: the caller then finds the files itself."""
    assert child.stdout is not None
    try:
        kind, payload, problems, _ = receive(child.stdout, first=True)
    except BrokenChannel:
        return None
    if kind != "found":
        return None
    names, ahead = payload
    return names, problems, ahead


def remote_batches(db_path: Path | None, files: Sequence[Path | str], tz: tzinfo | None, source: str | None,
                   log: ReadLog, child: ReaderProcess | None = None,
                   ahead: bool = False) -> Generator[Batch, None, None]:
    """`planning/batches.py:prepared_batches` computed in a reader process (process.py).

    A plain subprocess rather than multiprocessing: spawn would re-run the caller's main
    module in the child, which breaks any script that calls the library without a
    `__main__` guard. Where no reader process can be started, the batches are read here.
    `child`: a reader process started earlier (start_reader), so its start overlapped other work;
    `ahead`: it found `files` itself and reads them already, planned against no database (of no use,
    and stopped, when `db_path` is one to plan against).
    """
    if child is not None and ahead and db_path is not None:
        stop_reader(child, given_work=True)
        child, ahead = None, False
    child = child if child is not None else start_reader(tz)
    if child is None:
        yield from local_batches(db_path, files, tz, source, log)
        return
    assert child.stdin is not None and child.stdout is not None
    staging: Path | None = None
    try:
        # The paths as text: ten thousand Path objects take longer to unpickle than to make again.
        if not ahead and not ask(child, Read(db_path, [os.fspath(path) for path in files], tz, source)):
            raise _reader_failed(child, "could not be started")
        for number in itertools.count():
            try:
                kind, payload, problems, files_read = receive(child.stdout, first=number == 0)
            except BrokenChannel as exc:
                raise _reader_failed(child, f"stopped unexpectedly: {exc}") from exc
            log.problems += problems
            log.files_read += files_read
            if kind == "staging":
                staging = payload
            elif kind == "error":
                last = payload.strip().splitlines()[-1] if payload.strip() else "unknown error"
                raise _reader_failed(child, f"failed ({last})")
            elif kind == "done":
                return
            else:
                yield payload
                with contextlib.suppress(OSError):  # committed: the reader may stage another batch
                    child.stdin.write(ACK)
                    child.stdin.flush()
    finally:
        _stop_reader(child, staging)
