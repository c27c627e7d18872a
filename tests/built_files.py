"""A database file many tests build alike (a dump loaded, the healthy store, a planted damage), built
once per test process and copied: every test still gets its own real file, the bytes that build makes,
with its mode (0600) and whatever it left beside it (a -wal)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Hashable
from pathlib import Path

_built: dict[Hashable, Path] = {}
_folder: list[Path] = []


def use_folder(folder: Path) -> None:
    """Build into `folder` (conftest gives the session's own temporary folder)."""
    _folder[:] = [folder]


def _build_folder() -> Path:
    if not _folder:  # outside pytest's session: a folder of this process's own, removed at its exit
        folder, owner = Path(tempfile.mkdtemp(prefix="hst-built-")), os.getpid()
        atexit.register(lambda: os.getpid() == owner and shutil.rmtree(folder, ignore_errors=True))
        _folder.append(folder)
    return _folder[0]


def copy_built(key: Hashable, build: Callable[[Path], object], dest: Path) -> Path:
    """`dest` as `build(dest)` makes it, for a `dest` that does not exist yet: the first call for `key`
    runs `build` in a folder of its own, every call copies what it made (the file and its siblings)."""
    if dest.exists():
        raise FileExistsError(f"{dest} already exists")
    source = _built.get(key)
    if source is None:
        folder = Path(tempfile.mkdtemp(dir=_build_folder()))
        build(folder / "built.db")
        source = _built[key] = folder / "built.db"
    dest.parent.mkdir(parents=True, exist_ok=True)
    for made in sorted(source.parent.iterdir()):
        shutil.copy(made, dest.with_name(dest.name + made.name[len(source.name):]))
    return dest
