"""Starting the import's reader process (reader_child.py), in a module that loads nothing else, so a
caller can start it before the import's own modules load and its interpreter starts meanwhile.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from datetime import timezone, tzinfo
from pathlib import Path
from typing import IO, NamedTuple
from zoneinfo import ZoneInfo

import hermes_state_tools
from hermes_state_tools.ingest.channel import Find, Read

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


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
    return f"import sys; sys.path[0] = {root!r}; from hermes_state_tools.ingest.reader_child import main; main()"


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


def _close_pipes(child: subprocess.Popen[bytes]) -> None:
    """Close this end of the reader's pipes: its cue to stop."""
    for pipe in (child.stdin, child.stdout):
        with contextlib.suppress(OSError):
            assert pipe is not None
            pipe.close()


def stop_reader(child: subprocess.Popen[bytes], given_work: bool = False) -> None:
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


# The reader process started_early started, until the import takes it (take_early).
_early: list[subprocess.Popen[bytes]] = []


def start_early(args: list[str]) -> None:
    """Start the reader process before the command line is parsed, when it names `import-jsonl` and
    neither --dry-run nor help: loading click and the commands takes about as long as the reader's
    interpreter takes to start, and the reader then finds the files itself (channel.Find). A guess,
    and a cheap one to get wrong: a reader the import does not take is stopped when the process exits."""
    if "import-jsonl" not in args or any(arg in ("--dry-run", "-h", "--help") for arg in args) or _early:
        return
    if (child := start_reader(None)) is not None:  # the --tz given, a ZoneInfo, can be rebuilt there
        _early.append(child)
        atexit.register(_stop_untaken)


def take_early() -> subprocess.Popen[bytes] | None:
    """The reader start_early started, for the import to take (None if there is none)."""
    return _early.pop() if _early else None


def _stop_untaken() -> None:
    while _early:
        stop_reader(_early.pop())


class AskedReader(NamedTuple):
    """A reader process and what it was asked to find (it is finding it, or has found it)."""

    process: subprocess.Popen[bytes]
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


def ask(child: subprocess.Popen[bytes], request: Read | Find) -> bool:
    """Send the reader its request (channel.py); False when it cannot take it (it is gone)."""
    assert child.stdin is not None
    try:
        pickle.dump(request, child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        child.stdin.flush()
    except OSError:
        return False
    return True
