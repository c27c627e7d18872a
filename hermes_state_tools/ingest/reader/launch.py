"""Starting the import's reader process (process.py), in a module that loads nothing else, so a
caller can start it before the import's own modules load and its interpreter starts meanwhile.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from datetime import timezone, tzinfo
from pathlib import Path
from typing import IO, NamedTuple, Protocol
from zoneinfo import ZoneInfo

import hermes_state_tools
from hermes_state_tools.ingest.reader.channel import Find, Read

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


class ReaderProcess(Protocol):
    """The reader process as the import uses it: a subprocess.Popen, or a _Forked one."""

    @property
    def stdin(self) -> IO[bytes] | None: ...
    @property
    def stdout(self) -> IO[bytes] | None: ...
    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def kill(self) -> None: ...


def _widen_pipe(pipe: IO[bytes]) -> None:
    """Let the pipe hold up to 1 MiB (Linux; 64 KiB by default), so a batch crosses in a few large
    reads instead of many small hand-offs between the two processes."""
    if fcntl is None:
        return
    with contextlib.suppress(AttributeError, OSError):  # not Linux; a lower pipe-max-size
        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 2**20)


def _launch_code() -> str:
    """The reader's command line: `-c` rather than `-m`, with this process's copy of the package
    replacing the working directory at the front of its path, so the reader runs the same code
    and a folder in the working directory cannot shadow a package."""
    root = str(Path(hermes_state_tools.__file__).resolve().parent.parent)
    return f"import sys; sys.path[0] = {root!r}; from hermes_state_tools.ingest.reader.process import main; main()"


def _can_start_reader(tz: tzinfo | None) -> bool:
    """A frozen application's executable is the application itself, and a zone the reader cannot
    rebuild (a tzinfo class of the caller's script) would fail there: both read in this process."""
    portable = tz is None or isinstance(tz, (ZoneInfo, timezone))
    return portable and bool(sys.executable) and not getattr(sys, "frozen", False)


def start_reader(tz: tzinfo | None) -> subprocess.Popen[bytes] | None:
    """The reader process, or None where none can be started (the batches are then read here)."""
    if not _can_start_reader(tz):
        return None
    try:
        child = subprocess.Popen([sys.executable, "-c", _launch_code()], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError:
        return None
    assert child.stdout is not None
    _widen_pipe(child.stdout)
    return child


def _close_pipes(child: ReaderProcess) -> None:
    """Close this end of the reader's pipes: its cue to stop."""
    for pipe in (child.stdin, child.stdout):
        with contextlib.suppress(OSError):
            assert pipe is not None
            pipe.close()


def stop_reader(child: ReaderProcess, given_work: bool = False) -> None:
    """Stop a reader process. One never given its work holds nothing yet (its staging folder is made
    once it has work), so it is killed rather than waited for while its interpreter may still be
    starting. One given work is told to stop (its pipes close) and waited for, so it removes its
    staging folder itself; killed if it has not ended within 5 s."""
    _close_pipes(child)
    if given_work:
        try:
            child.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(OSError):
        child.kill()
    child.wait()


# The reader process start_early started, until the import takes it (take_early).
_early: list[ReaderProcess] = []


def start_early(args: list[str]) -> None:
    """Start the reader process before the command line is parsed, when it names `import-jsonl` and
    neither --dry-run nor help: it starts while this process loads click and the commands, and then
    finds the files itself (channel.Find). A guess, and a cheap one to get wrong: a reader the import
    does not take is stopped when the process exits. Forked where that is safe (see _fork_reader)."""
    if "import-jsonl" not in args or any(arg in ("--dry-run", "-h", "--help") for arg in args) or _early:
        return
    child = _fork_reader() or start_reader(None)  # the --tz given, a ZoneInfo, can be rebuilt there
    if child is not None:
        _early.append(child)
        atexit.register(stop_early)


class _Forked:
    """A reader process forked from this one: the part of subprocess.Popen the import uses."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is None:
                self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
            elif time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"reader process {self.pid}", timeout or 0)
            else:
                time.sleep(0.005)
        return self.returncode  # type: ignore[return-value]  # (poll set it)

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def _fork_reader() -> _Forked | None:
    """The reader process as a fork of this one, which has loaded half of what the reader needs: it
    is ready in about 0.05 s instead of a new interpreter's 0.125 s. Only on Linux (elsewhere a fork
    that does not exec is not safe with the system's libraries) and while this process runs one
    thread and has opened no database (the command line has not been parsed yet): None otherwise."""
    if not sys.platform.startswith("linux") or threading.active_count() != 1 or getattr(sys, "frozen", False):
        return None
    to_child, to_reader = os.pipe()
    from_reader, to_parent = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        pid = os.fork()
    except OSError:
        for fd in (to_child, to_reader, from_reader, to_parent):
            os.close(fd)
        return None
    if pid == 0:  # the reader: its pipes as stdin and stdout, nothing else of this process's files
        try:
            os.dup2(to_child, 0)
            os.dup2(to_parent, 1)
            os.closerange(3, _open_files_limit())
            from hermes_state_tools.ingest.reader.process import main

            main()  # ends the process
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(1)
    os.close(to_child)
    os.close(to_parent)
    child = _Forked(pid, os.fdopen(to_reader, "wb"), os.fdopen(from_reader, "rb"))
    _widen_pipe(child.stdout)
    return child


def _open_files_limit() -> int:
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 1 << 16)
    except (OSError, ValueError):
        return 1 << 10


def take_early() -> ReaderProcess | None:
    """The reader start_early started, for the import to take (None if there is none)."""
    return _early.pop() if _early else None


def stop_early() -> None:
    """Stop the reader start_early started, if the import did not take it (a command that reads no
    folder; at exit, whatever the command was)."""
    while _early:
        stop_reader(_early.pop())


class AskedReader(NamedTuple):
    """A reader process and what it was asked to find (it is finding it, or has found it)."""

    process: ReaderProcess
    request: Find


def finding_reader(db: Path, paths: Sequence[Path], tz: tzinfo | None, source: str | None) -> AskedReader | None:
    """A reader process (the one start_early started, or a new one) asked at once to find the files
    under `paths` for an import into `db`, and to read them if `db` is unclaimed; None where none can
    be started. Given to ingest.run.import_paths with the same arguments, which takes it."""
    request = Find(db, [os.fspath(path) for path in paths], tz, source)
    child = take_early() or start_reader(tz)
    if child is None:
        return None
    if not ask(child, request):
        stop_reader(child)
        return None
    return AskedReader(child, request)


def ask(child: ReaderProcess, request: Read | Find) -> bool:
    """Send the reader its request (channel.py); False when it cannot take it (it is gone)."""
    assert child.stdin is not None
    try:
        pickle.dump(request, child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        child.stdin.flush()
    except OSError:
        return False
    return True
