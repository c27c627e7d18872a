"""The import's reader process: reads and plans, stages each batch's rows in a file of its own, and
sends the batch down its channel; the importing process acknowledges each committed batch on stdin.

Started by remote.remote_batches. When the importing process goes away (its end of stdin
closes), the reader stops and removes its staging folder. It ignores Ctrl-C, SIGTERM and SIGHUP (the importing
process handles it and the reader follows through the pipes), and its stdout is stderr: the
channel is a private copy of the original stdout, so nothing printed can garble a frame.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import shutil
import signal
import sqlite3
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, cast

from hermes_state_tools.core import scratch
from hermes_state_tools.core.paths import unclaimed
from hermes_state_tools.importers.discover import discover_names
from hermes_state_tools.ingest.planning.batches import Batch, StagedCreates, prepared_batches
from hermes_state_tools.ingest.planning.units import ReadLog
from hermes_state_tools.ingest.reader.channel import READ_AHEAD, Find, Read, send
from hermes_state_tools.ingest.writing.staging import stage_batch

# The reader allocates some 10^5 rows a batch, and the cyclic collector, started by those
# allocations, walks them again and again to free next to nothing (a few hundred objects in a run
# of 10,000 files): 4% of the reader's time. It is switched off here and run once every this many batches.
COLLECT_EVERY = 16


class _Acknowledgements(threading.Thread):
    """Counts the importer's acknowledgements as they come (so its writes never block), and
    notices when it is gone (its end of the pipe closes)."""

    def __init__(self, inbox: BinaryIO) -> None:
        super().__init__(daemon=True)
        self.inbox, self.count, self.gone = inbox, 0, False
        self.changed = threading.Condition()

    def run(self) -> None:
        try:
            # The file descriptor, not the buffered file: a thread blocked in a buffered read at
            # exit makes the interpreter abort.
            while chunk := os.read(self.inbox.fileno(), 4096):
                with self.changed:
                    self.count += len(chunk)
                    self.changed.notify_all()
        except OSError:
            pass  # a broken pipe says the same as its end: the importer is gone
        finally:
            with self.changed:
                self.gone = True
                self.changed.notify_all()

    def wait_for(self, count: int) -> bool:
        """Wait until `count` batches are acknowledged; False when the importer is gone."""
        with self.changed:
            while self.count < count and not self.gone:
                self.changed.wait()
            return self.count >= count

    def wait_gone(self) -> None:
        self.wait_for(sys.maxsize)  # no count is reached before the importer's end of the pipe closes


def _staging_folder() -> Path | None:
    """A private folder (0700) for the staging files; None (rows then travel in the pipe) when the
    temporary directory cannot take one."""
    try:
        return scratch.make_dir("import")
    except OSError:
        return None


def _deliver(out: BinaryIO, message: tuple[object, ...]) -> bool:
    """Send a message; False when the importing process is gone (a broken pipe; EINVAL on Windows)."""
    try:
        send(out, message)
    except OSError:
        return False
    return True


def _request(inbox: BinaryIO, out: BinaryIO) -> Read | None:
    """What to read. Asked to find the files (channel.Find), the reader finds them and says what it
    found; when the database is unclaimed it reads them at once, planned against no database (the
    importing process checks that it builds a new file too), else it waits for the Read that says
    what to plan against. None: the importing process is gone."""
    request: Read | Find = pickle.load(inbox)
    if isinstance(request, Read):
        return request
    names, problems = discover_names([Path(path) for path in request.paths])
    ahead = unclaimed(request.db)
    if not _deliver(out, ("found", (names, ahead), problems, 0)):
        return None
    if ahead:
        return Read(None, names, request.tz, request.source)
    after: Read = pickle.load(inbox)
    return after


def serve(inbox: BinaryIO, out: BinaryIO) -> None:
    acks = _Acknowledgements(inbox)
    log = ReadLog()
    staging: Path | None = None
    try:
        request = _request(inbox, out)
        if request is None:
            return
        acks.start()  # (after the last request is read: the acknowledgements come on the same pipe)
        staging = _staging_folder()
        if not _deliver(out, ("staging", staging, [], 0)):
            return
        # None: plan against no database (a new file built aside; nothing else can be in it).
        db_path = request.plan_against
        planned_against = db_path if db_path is not None and db_path.exists() else None
        files, tz, source = request.files, request.tz, request.source
        for number, items in enumerate(prepared_batches(planned_against, files, tz, source, log)):
            if not acks.wait_for(number - READ_AHEAD + 1):
                return  # the importing process is gone: stop quietly
            # Staging a batch moves binding its values from the writer to this process: worth it
            # while the writer has batches queued, not once it waits for this one (this process is
            # then the slower side, and the rows travel in the pipe instead).
            path = staging / f"batch-{number:06d}.db" if staging is not None and acks.count < number else None
            staged = stage_batch(path, items) if path is not None else None
            if staged is None:  # unstaged: rows travel in the pipe
                batch = Batch(items)
            elif (block := StagedCreates.of(staged)) is not None:  # the usual first import: no plans sent
                batch = Batch((), path, block)
            else:
                batch = Batch(staged, path)
            if not _deliver(out, ("batch", batch, log.problems, log.files_read)):
                return
            log.problems, log.files_read = [], 0
            if number % COLLECT_EVERY == COLLECT_EVERY - 1:
                gc.collect()
        _deliver(out, ("done", None, log.problems, log.files_read))
    except BaseException:
        _deliver(out, ("error", traceback.format_exc(limit=8), log.problems, log.files_read))
    finally:
        # Staged batches stay until the importing process has written them all or is gone.
        if acks.is_alive():
            acks.wait_gone()
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def main() -> None:
    # Ctrl-C, SIGTERM or a closed terminal reach the importing process too; it decides, and the end
    # of its pipe stops this one.
    for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.SIG_IGN)
    gc.disable()  # collected every COLLECT_EVERY batches instead (serve)
    # Binding None makes Python's sqlite3 look for an adapter it never finds (a tuple built, a dict
    # missed, two attribute look-ups) before it binds NULL; most staged values past the text are None.
    # One found at once (a C call that gives None back) takes a third off binding such rows. Only here:
    # the registry is the whole process's, and this process is the import's own.
    sqlite3.register_adapter(type(None), cast("Callable[[None], None]", {}.get))
    # By descriptor (0, 1, 2), not through sys.stdin and sys.stdout: a reader forked from a process
    # whose streams were replaced (a test runner's capture) has its pipes on 0 and 1 all the same.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(os.fdopen(0, "rb", closefd=False), channel)
    # Its work is done and its files removed: exit at once rather than tear the interpreter down
    # (tens of milliseconds the importing process would wait for at the end of every import).
    with contextlib.suppress(OSError):
        channel.close()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
