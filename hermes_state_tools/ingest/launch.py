"""Starting the import's reader process (reader_child.py), in a module that loads nothing else, so a
caller can start it before the import's own modules load and its interpreter starts meanwhile.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from datetime import timezone, tzinfo
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

import hermes_state_tools

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


def close_pipes(child: subprocess.Popen[bytes]) -> None:
    """Close this end of the reader's pipes: its cue to stop."""
    for pipe in (child.stdin, child.stdout):
        with contextlib.suppress(OSError):
            assert pipe is not None
            pipe.close()


def stop_reader(child: subprocess.Popen[bytes]) -> None:
    """Stop a reader process that was started but never given its work: it holds nothing yet (its
    staging folder is made once it has its files), so it is killed rather than waited for while its
    interpreter may still be starting."""
    close_pipes(child)
    with contextlib.suppress(OSError):
        child.kill()
    child.wait()
