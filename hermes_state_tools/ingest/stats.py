"""What an import or a merge did (or, with dry_run, would do): counted while it runs (ImportTally),
returned as a frozen report (ImportStats), whose `as_dict()` is the command's `--json`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from hermes_state_tools.core.records import Problem
from hermes_state_tools.core.reports import Report

if TYPE_CHECKING:
    from hermes_state_tools.ingest.writing.writer import Written


@dataclass(frozen=True)
class ImportStats(Report):
    """What an import did (or, with dry_run, would do); the CLI report is `as_dict()`."""

    dry_run: bool = False
    sessions_created: int = 0
    sessions_updated: int = 0
    messages_imported: int = 0
    messages_skipped_duplicate: int = 0
    messages_enriched: int = 0  # stored messages that gained fields the files know
    files_read: int = 0
    backup: str | None = None  # taken when the database had to be upgraded first
    would_upgrade: Mapping[str, Any] | None = None  # a dry run: the schema change the real run would make
    problems: list[Problem] = field(default_factory=list)  # in the order they were met (a copy: the run's own is gone)
    would_create: tuple[str, ...] = ()  # a dry run's session ids, as counted (a session may come twice)
    would_update: tuple[str, ...] = ()
    database_created: str | None = None  # the file was missing (or empty) and the run made (would make) it

    @property
    def failed(self) -> bool:
        """True when some record could not be stored (exit code 1)."""
        return any(p.failure for p in self.problems)

    def as_dict(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        failures: dict[str, int] = {}
        notices: dict[str, int] = {}
        for problem in self.problems:
            kinds[problem.kind] = kinds.get(problem.kind, 0) + 1
            side = failures if problem.failure else notices
            side[problem.kind] = side.get(problem.kind, 0) + 1
        doc: dict[str, Any] = {
            "ok": not self.failed, "dry_run": self.dry_run, "sessions_created": self.sessions_created,
            "sessions_updated": self.sessions_updated, "messages_imported": self.messages_imported,
            "messages_skipped_duplicate": self.messages_skipped_duplicate,
            "messages_enriched": self.messages_enriched, "files_read": self.files_read,
            "backup": self.backup, "database_created": self.database_created,
            "records_not_stored": sum(p.failure for p in self.problems),
            "problem_counts": kinds, "failure_counts": failures, "notice_counts": notices,
            "problems": [p.as_dict() for p in self.problems],
        }
        if self.dry_run:  # each id once; a session the run would create and then add to is created
            created = dict.fromkeys(self.would_create)
            updated = [sid for sid in dict.fromkeys(self.would_update) if sid not in created]
            would_upgrade = dict(self.would_upgrade) if self.would_upgrade is not None else None
            doc |= {"would_create": list(created), "would_update": updated, "would_upgrade": would_upgrade}
        return doc


@dataclass
class ImportTally:
    """The counts of a run under way, ImportStats' fields as they grow: each session written (or, in a
    dry run, planned) is counted as it comes, and the run's steps fill in the rest; `report()` is what
    the run returns."""

    dry_run: bool = False
    sessions_created: int = 0
    sessions_updated: int = 0
    messages_imported: int = 0
    messages_skipped_duplicate: int = 0
    messages_enriched: int = 0
    files_read: int = 0
    backup: str | None = None
    would_upgrade: dict[str, Any] | None = None
    problems: list[Problem] = field(default_factory=list)
    would_create: list[str] = field(default_factory=list)
    would_update: list[str] = field(default_factory=list)
    database_created: str | None = None

    def count(self, item: Written) -> None:
        self.sessions_created += item.created
        self.sessions_updated += item.updated
        self.messages_imported += item.messages
        self.messages_skipped_duplicate += item.duplicates
        self.messages_enriched += item.enriched
        self.problems += item.problems
        if self.dry_run and (item.created or item.updated):
            (self.would_create if item.created else self.would_update).append(item.session_id)

    def report(self) -> ImportStats:
        """The counts so far as a frozen report (its own copies of the lists)."""
        upgrade = None if self.would_upgrade is None else MappingProxyType(dict(self.would_upgrade))
        return ImportStats(**{f.name: getattr(self, f.name) for f in fields(self)} | {
            "would_upgrade": upgrade, "problems": list(self.problems), "would_create": tuple(self.would_create),
            "would_update": tuple(self.would_update)})
