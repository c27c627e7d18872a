"""Readers for legacy Hermes session files: paths in, a stream of LegacySession and Problem records out.

Readers never touch a database. `read_paths` finds the files (see `discover`) and reads
each by its shape; the library's import writer consumes the stream::

    reader = read_paths([Path("~/.hermes").expanduser()], tz=None, fallback_source=None)
    for record in reader:            # LegacySession or Problem, file by file
        ...
    reader.files_read                # transcript/index files read so far (noise files excluded)

Index files (`sessions.json`) are read first, so their metadata arrives before the
transcripts; every other file follows in path order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import tzinfo
from pathlib import Path

from hermes_state_tools.core.records import LegacyMessage, LegacySession, Problem
from hermes_state_tools.importers.discover import discover, file_shape
from hermes_state_tools.importers.index import read_index
from hermes_state_tools.importers.jsonl import read_jsonl
from hermes_state_tools.importers.snapshot import read_snapshot
from hermes_state_tools.importers.timestamps import parse_timestamp

__all__ = [
    "LegacyMessage",
    "LegacyReader",
    "LegacySession",
    "Problem",
    "discover",
    "parse_timestamp",
    "read_file",
    "read_paths",
]

Record = LegacySession | Problem


def read_file(
    path: Path, tz: tzinfo | None = None, fallback_source: str | None = None, file: str | None = None
) -> Iterator[Record]:
    """Yield the records of one file by its shape; any error becomes a failure Problem, never an exception."""
    file = file if file is not None else str(path)
    readers: dict[str | None, Callable[[], Iterator[Record]]] = {
        "index": lambda: read_index(path, file, tz),
        "jsonl": lambda: read_jsonl(path, file, tz, fallback_source),
        "save": lambda: read_snapshot(path, file, tz, fallback_source),
        "snapshot": lambda: read_snapshot(path, file, tz, fallback_source),
    }
    reader = readers.get(file_shape(path))
    if reader is None:
        yield Problem(file, None, "skipped_file", "not a transcript file; not read")
        return
    try:
        yield from reader()
    except OSError as exc:
        yield Problem(file, None, "unreadable_file", f"cannot read the file ({exc.strerror or exc})", True)
    # One odd file must never stop the import of the others.
    except Exception as exc:
        yield Problem(file, None, "reader_error", f"could not be read: {type(exc).__name__}: {exc}", True)


class LegacyReader:
    """An iterator over the records of every file under some paths, counting the files it reads."""

    def __init__(self, paths: Iterable[Path], tz: tzinfo | None = None, fallback_source: str | None = None):
        self.files, self.problems = discover(paths)
        self.files_read = 0
        self._records = self._read(tz, fallback_source)

    def __iter__(self) -> Iterator[Record]:
        return self

    def __next__(self) -> Record:
        return next(self._records)

    def _read(self, tz: tzinfo | None, fallback_source: str | None) -> Iterator[Record]:
        yield from self.problems
        for path in self.files:
            self.files_read += 1
            yield from read_file(path, tz, fallback_source)


def read_paths(
    paths: Iterable[Path], tz: tzinfo | None = None, fallback_source: str | None = None
) -> LegacyReader:
    """Return an iterator of LegacySession and Problem records for the files under `paths`."""
    return LegacyReader(paths, tz, fallback_source)
