"""From discovered files to units: every copy of one session read in this run, in memory one at a time."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import tzinfo
from pathlib import Path

from hermes_state_tools.core.records import LegacySession, Problem
from hermes_state_tools.core.surrogates import has_surrogate, without_surrogates
from hermes_state_tools.importers import read_file
from hermes_state_tools.importers.build import file_id
from hermes_state_tools.importers.discover import name_shape
from hermes_state_tools.importers.jsonl import PlainTranscript, read_plain
from hermes_state_tools.ingest.planning.readahead import ReadAhead


@dataclass
class Unit:
    """The copies of one session found in this run, and where they came from."""

    session_id: str
    copies: list[LegacySession]
    files: tuple[str, ...]  # re-read when the database changed under a prepared plan
    fallback_start: float  # the file's time, when nothing in it has a time
    end_hint: float | None = None  # a snapshot's last_updated: where untimed messages may spread to
    index_entry: LegacySession | None = None
    # A session new to the database whose one file is a plain transcript: its lines, planned
    # without a LegacyMessage each (prepared.plain_plan); `copies` then holds its session alone.
    plain: PlainTranscript | None = None

    def with_copies(self, copies: list[LegacySession]) -> Unit:
        """The same session and files with these copies (none: the shell a plan keeps, enough to
        read and plan it again; with the copies read again: the unit to plan)."""
        return Unit(self.session_id, copies, self.files, self.fallback_start, self.end_hint, self.index_entry)


@dataclass
class ReadLog:
    """What reading produced besides sessions: problems and how many files were read."""

    problems: list[Problem] = field(default_factory=list)
    files_read: int = 0


def name_id(name: str, shape: str | None) -> str | None:
    """The session id a transcript's file name gives, when it gives one (`shape`: the name's
    name_shape); the store's spelling of it (see stored_id)."""
    if shape == "jsonl":  # the name without ".jsonl", as Path.stem gives it (".jsonl" alone is all stem)
        return stored_id(file_id(name[:-len(".jsonl")] if name != ".jsonl" else name))
    if shape == "snapshot" and name.startswith("session_"):
        return stored_id(file_id(name[len("session_"):-len(".json")]))
    return None


def stored_id(session_id: str) -> str:
    """A session id as the store keeps it: a file name's undecodable bytes (Python spells them as
    lone surrogates) and a JSON escape of half an emoji cannot be UTF-8 text; they become U+FFFD,
    as they do in the stored row, so the next import finds the session under the same id."""
    cleaned: str = without_surrogates(session_id)
    return cleaned


def _mtime(path: Path | str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def parent_links(conn: sqlite3.Connection | None) -> dict[str, str]:
    """child id -> parent id for every stored session with a parent (what tells a compression child's
    snapshot saved under its parent's name from a snapshot that merely names another id)."""
    if conn is None:
        return {}
    return dict(conn.execute("SELECT id, parent_session_id FROM sessions WHERE parent_session_id IS NOT NULL"))


def _descends_from(session_id: str, ancestor: str, parents: dict[str, str]) -> bool:
    """Whether `ancestor` is on `session_id`'s parent chain (a chain that loops ends the walk)."""
    seen = {session_id}
    parent = parents.get(session_id)
    while parent is not None and parent not in seen:
        if parent == ancestor:
            return True
        seen.add(parent)
        parent = parents.get(parent)
    return False


_STARTED = re.compile(r"\d{8}_\d{6}")  # a Hermes session id starts with its creation time
# The agent's snapshots, either form: the February ShareGPT logs went under the parent's name too.
SNAPSHOT_KINDS = ("snapshot", "sharegpt")


def _started_later(inner: str, outer: str) -> bool:
    """Both ids carry their creation time and the inner session was created after the outer one."""
    a, b = _STARTED.match(inner), _STARTED.match(outer)
    return a is not None and b is not None and a.group() > b.group()


def _as_child(record: LegacySession, parents: dict[str, str],
              unlinked: bool = False) -> tuple[LegacySession, Problem | None]:
    """Between late February and late March 2026, after compression split a session, the snapshot of
    the child's conversation went to session_<parent id>.json with the child's id inside. The file's
    name was never moved on, so a session compressed twice left its grandchild there: when the id
    inside descends from the file's session, the copy is that descendant's. `unlinked` (a snapshot
    `_may_be_child` picked, and no link this import knows joins the two): the copy is the child's too
    when the id inside was created after the file's session, and the child is linked to it."""
    inner = record.extra.get("snapshot_session_id")
    if record.kind not in SNAPSHOT_KINDS or not isinstance(inner, str):
        return record, None
    fields = record.fields
    if not _descends_from(inner, record.session_id, parents):
        if not (unlinked and inner not in parents and _started_later(inner, record.session_id)):
            return record, None
        fields = {**fields, "parent_session_id": record.session_id}
    extra = {k: v for k, v in record.extra.items() if k != "snapshot_session_id"}
    extra["snapshot_file_session_id"] = record.session_id
    detail = (f"the file is named after session {record.session_id} but holds its compression child {inner} "
              "(a snapshot bug of February-March 2026); its messages belong to the child")
    return (replace(record, session_id=inner, extra=extra, fields=fields),
            Problem(record.file, None, "compression_child", detail))


def _may_be_child(record: LegacySession) -> bool:
    """A snapshot naming another session inside and opening with a compression summary: decided once
    the whole import's parent links are known (the stored ones decided it already in `records`)."""
    inner = record.extra.get("snapshot_session_id")
    first = record.messages[0].content if record.messages else None
    return (record.kind in SNAPSHOT_KINDS and isinstance(inner, str) and isinstance(first, str)
            and first.lstrip().startswith("[CONTEXT SUMMARY]"))


class UnitReader:
    """Groups files by the session their name gives and yields one unit per session."""

    def __init__(self, files: Sequence[Path | str], tz: tzinfo | None, source: str | None, log: ReadLog,
                 parents: dict[str, str] | None = None, stored: set[str] | None = None) -> None:
        self.tz, self.source, self.log = tz, source, log
        self.parents = parents or {}
        # The ids the database holds (None: read every file the careful way): any other session
        # whose one file is a plain transcript is read the fast way.
        self.stored = stored
        self.index: dict[str, LegacySession] = {}
        # The files as text until each is read: a Path costs more to make than its name costs to look
        # at, and the reader process has to group every file before its first batch.
        self.groups: dict[str, list[str]] = {}
        self.singles: list[str] = []
        self.jsonl: set[str] = set()  # the sessions with a gateway transcript among their files
        for path in [os.fspath(file) for file in files]:
            name = os.path.basename(path)
            shape = name_shape(name)
            if shape == "index":
                for record in self.records(Path(path)):
                    self.index.setdefault(record.session_id, record)
            elif (sid := name_id(name, shape)) is not None:
                self.groups.setdefault(sid, []).append(path)
                if shape == "jsonl":
                    self.jsonl.add(sid)
            else:
                self.singles.append(path)

    def records(self, path: Path, session_id: str | None = None) -> Iterator[LegacySession]:
        """The sessions a file holds (optionally only one id); its problems go to the log."""
        self.log.files_read += 1
        for record in read_file(path, self.tz, self.source):
            if isinstance(record, Problem):
                self.log.problems.append(record)
                continue
            if has_surrogate(record.session_id):
                record = replace(record, session_id=stored_id(record.session_id))
                self.log.problems.append(Problem(record.file, None, "lone_surrogate", (
                    f"the session id (from the file name or the file) held bytes or an escape that are not "
                    f"UTF-8 text; stored as {record.session_id!r}, with U+FFFD in their place")))
            # Read again for the unit of `session_id` (a replan): a child this import placed unlinked is its.
            unlinked = session_id is not None and _may_be_child(record) and (
                record.extra.get("snapshot_session_id") == session_id)
            record, moved = _as_child(record, self.parents, unlinked) if self.parents or unlinked else (record, None)
            if session_id is None or record.session_id == session_id:
                if moved is not None:
                    self.log.problems.append(moved)
                yield record

    def units(self) -> Iterator[Unit]:
        order = sorted(self.groups)
        ahead = ReadAhead([p for sid in order for p in self.groups[sid]] + self.singles)
        try:
            yield from self._units(order, ahead)
        finally:
            ahead.close()

    def _units(self, order: list[str], ahead: ReadAhead) -> Iterator[Unit]:
        deferred: list[tuple[LegacySession, Path]] = []
        for sid in order:
            files = self.groups[sid]
            ahead.read(len(files))
            plain = self._plain(sid, files)
            if plain is not None:  # read by its name as text: no Path made
                yield self.unit(sid, [plain.session], files, plain)
                continue
            paths = [Path(file) for file in files]
            by_id: dict[str, list[LegacySession]] = {}
            for path in paths:
                for record in self.records(path):
                    self._learn(record)
                    if _may_be_child(record):
                        deferred.append((record, path))  # until every export line of this import is read
                    else:
                        by_id.setdefault(record.session_id, []).append(record)
            for session_id, copies in by_id.items():
                yield self.unit(session_id, copies, paths)
        for path in map(Path, self.singles):
            ahead.read()
            for record in self.records(path):
                self._learn(record)
                yield self.unit(record.session_id, [record], [path])
        for record, path in deferred:
            record, moved = _as_child(record, self.parents, unlinked=True)
            if moved is not None:
                self.log.problems.append(moved)
            yield self.unit(record.session_id, [record], [path])
        for session_id, entry in sorted(self.index.items()):  # index entries that no transcript named
            yield Unit(session_id, [], (), 0.0, None, entry)
        self.index = {}

    def _plain(self, session_id: str, files: list[str]) -> PlainTranscript | None:
        """The plain transcript that is all this run knows of a session the database lacks, if it is one."""
        if (self.stored is None or session_id in self.stored or session_id in self.index or len(files) != 1
                or session_id not in self.jsonl):  # one file, and that a transcript
            return None
        try:
            plain = read_plain(files[0], files[0], self.tz, self.source)
        except Exception:  # an unreadable or odd file: the careful reader reports it, with its reason
            return None
        if plain is not None:
            self.log.files_read += 1
        return plain

    def _learn(self, record: LegacySession) -> None:
        """Parent links this import names (export lines), which tell a compression child's snapshot."""
        parent = record.fields.get("parent_session_id")
        if isinstance(parent, str):
            self.parents.setdefault(record.session_id, parent)

    def unit(self, session_id: str, copies: list[LegacySession], paths: Sequence[Path | str],
             plain: PlainTranscript | None = None) -> Unit:
        known = [c.saved_at for c in copies if c.saved_at is not None]
        # A plain transcript knows its file's time from reading it: no stat again.
        fallback = plain.mtime if plain is not None else max(_mtime(p) for p in paths)
        return Unit(session_id, copies, tuple(str(p) for p in paths), fallback,
                    max(known) if known else None, self.index.pop(session_id, None), plain)
