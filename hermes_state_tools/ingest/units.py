"""From discovered files to units: every copy of one session read in this run, in memory one at a time."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path

from hermes_state_tools.core.records import LegacySession, Problem
from hermes_state_tools.importers import parse_timestamp, read_file
from hermes_state_tools.importers.discover import file_shape


@dataclass
class Unit:
    """The copies of one session found in this run, and where they came from."""

    session_id: str
    copies: list[LegacySession]
    files: tuple[str, ...]  # re-read when the database changed under a prepared plan
    fallback_start: float  # the file's time, when nothing in it has a time
    end_hint: float | None = None  # a snapshot's last_updated: where untimed messages may spread to
    index_entry: LegacySession | None = None


@dataclass
class ReadLog:
    """What reading produced besides sessions: problems and how many files were read."""

    problems: list[Problem] = field(default_factory=list)
    files_read: int = 0


def named_id(path: Path) -> str | None:
    """The session id a transcript's file name gives, when it gives one."""
    shape = file_shape(path)
    if shape == "jsonl":
        return path.stem
    if shape == "snapshot" and path.name.startswith("session_"):
        return path.stem[len("session_"):]
    return None


def _mtime(path: Path) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


class UnitReader:
    """Groups files by the session their name gives and yields one unit per session."""

    def __init__(self, files: list[Path], tz: tzinfo | None, source: str | None, log: ReadLog) -> None:
        self.tz, self.source, self.log = tz, source, log
        self.index: dict[str, LegacySession] = {}
        self.groups: dict[str, list[Path]] = {}
        self.singles: list[Path] = []
        for path in files:
            if file_shape(path) == "index":
                for record in self.records(path):
                    self.index.setdefault(record.session_id, record)
            elif (sid := named_id(path)) is not None:
                self.groups.setdefault(sid, []).append(path)
            else:
                self.singles.append(path)

    def records(self, path: Path, session_id: str | None = None) -> Iterator[LegacySession]:
        """The sessions a file holds (optionally only one id); its problems go to the log."""
        self.log.files_read += 1
        for record in read_file(path, self.tz, self.source):
            if isinstance(record, Problem):
                self.log.problems.append(record)
            elif session_id is None or record.session_id == session_id:
                yield record

    def units(self) -> Iterator[Unit]:
        for sid in sorted(self.groups):
            paths = self.groups[sid]
            by_id: dict[str, list[LegacySession]] = {}
            for path in paths:
                for record in self.records(path):
                    by_id.setdefault(record.session_id, []).append(record)
            for session_id, copies in by_id.items():
                yield self.unit(session_id, copies, paths)
        for path in self.singles:
            for record in self.records(path):
                yield self.unit(record.session_id, [record], [path])
        for session_id, entry in sorted(self.index.items()):  # index entries that no transcript named
            yield Unit(session_id, [], (), 0.0, None, entry)
        self.index = {}

    def unit(self, session_id: str, copies: list[LegacySession], paths: list[Path]) -> Unit:
        ends = [parse_timestamp(c.extra.get("last_updated"), self.tz) for c in copies]
        known = [end for end in ends if end is not None]
        return Unit(session_id, copies, tuple(str(p) for p in paths), max(_mtime(p) for p in paths),
                    max(known) if known else None, self.index.pop(session_id, None))
