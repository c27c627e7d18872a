"""Reading and planning in a second process, so parsing runs on one core while SQLite writes on the other.

A thread cannot do this: the writer's `executemany` drops and retakes the GIL for every row,
and a busy parsing thread makes each retake wait. A separate process sends prepared
batches through a pipe instead; if the importing process dies, the pipe breaks and the
reader exits with it.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Iterator
from datetime import tzinfo
from multiprocessing.connection import Connection
from pathlib import Path

from ..connection import connect
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


def _serve(channel: Connection, db_path: Path, files: list[Path], tz: tzinfo | None, source: str | None) -> None:
    log = ReadLog()
    try:
        for batch in prepared_batches(db_path, files, tz, source, log):
            channel.send(("batch", batch, log.problems, log.files_read))
            log.problems, log.files_read = [], 0
        channel.send(("done", None, log.problems, log.files_read))
    except (BrokenPipeError, EOFError):
        return  # the importing process is gone: stop quietly
    except BaseException:
        channel.send(("error", traceback.format_exc(limit=8), log.problems, log.files_read))
    finally:
        channel.close()


def remote_batches(db_path: Path, files: list[Path], tz: tzinfo | None, source: str | None,
                   log: ReadLog) -> Iterator[list[Prepared]]:
    """`prepared_batches` computed in a child process."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_serve, args=(send, db_path, files, tz, source), daemon=True,
                              name="hermes-import-reader")
    process.start()
    send.close()
    try:
        while True:
            try:
                kind, payload, problems, files_read = receive.recv()
            except EOFError:
                raise RuntimeError("the import's reader process died unexpectedly") from None
            log.problems += problems
            log.files_read += files_read
            if kind == "error":
                raise RuntimeError(f"the import's reader process failed:\n{payload}")
            if kind == "done":
                return
            yield payload
    finally:
        receive.close()
        process.join(timeout=5)
        if process.is_alive():
            process.terminate()
