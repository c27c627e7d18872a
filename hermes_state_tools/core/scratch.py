"""Private scratch folders (a snapshot to read, a copy to check, an import's staging files) that a
killed run does not leave behind for good.

Each is named `hermes-state-<purpose>-<pid>-<random>`. A run killed before its cleanup (kill -9, a
power loss, a `timeout` of a version that did not handle SIGTERM) leaves its folder, which can hold a
whole copy of the database: a nightly job killed every night would fill the temp folder. So making a
scratch folder first removes the ones in the same place whose process is gone and which have not
changed for a while (a folder of another PID namespace sharing the folder is then still spared
while it is being written).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

PREFIX = "hermes-state-"
_SCRATCH = re.compile(re.escape(PREFIX) + r"([a-z]+(?:-[a-z]+)*)-(\d+)-[A-Za-z0-9_]+$")
STALE_AFTER_S = 600.0


def alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts: it cannot be signalled)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != 0


def make_dir(purpose: str, parent: Path | None = None) -> Path:
    """A new private folder (0700) in `parent` (the temp folder by default), after removing the
    scratch folders that killed runs left there."""
    folder = Path(tempfile.gettempdir()) if parent is None else parent
    remove_stale(folder)
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{purpose}-{os.getpid()}-", dir=folder))


def remove_stale(folder: Path, now: float | None = None) -> list[Path]:
    """Remove the scratch folders in `folder` whose process is gone and which are older than
    STALE_AFTER_S; the removed paths."""
    now = time.time() if now is None else now
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        if (match := _SCRATCH.match(entry.name)) is None:
            continue
        try:
            stale = (entry.is_dir(follow_symlinks=False) and not alive(int(match.group(2)))
                     and now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER_S)
        except OSError:
            continue
        if stale:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed
