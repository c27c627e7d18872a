"""Normalised records that the legacy readers produce and the library's import writer consumes.

Readers never touch the database: every file becomes a stream of `LegacySession`
records (each with its messages) and `Problem` entries. Everything crosses the
boundary as dataclasses the writer only reads. Sessions and problems are frozen; a
message is built once per line read, so it is a slotted dataclass (a frozen one costs
four times as much to build) that nothing changes once its reader has handed it on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hermes_state_tools.core.problems import KINDS, is_failure

# How much a reader trusts the `source` it found, highest first: the gateway index
# names the platform for certain, `session_meta` lines next, then a snapshot's own
# `platform` field; a fallback is only used when nothing names it.
SOURCE_FROM_INDEX = 3
SOURCE_FROM_META = 2
SOURCE_FROM_SNAPSHOT = 1
SOURCE_FALLBACK = 0

# Roles of rows that are no message: the February 2026 gateway also wrote its session_meta lines
# into `messages`. Such rows are kept in the session's extra data under FOREIGN_ROWS_KEY instead.
FOREIGN_ROLES = ("session_meta",)
# How a ShareGPT log's tool call without an id is named: an id no API gave, which a copy of the same
# call elsewhere does not share.
GENERATED_CALL_PREFIX = "sharegpt_"
FOREIGN_ROWS_KEY = "foreign_rows"
# Where a record carries the values of a later Hermes' columns (core/layouts.py's later_columns) that
# its file held: an export of such a file, or another state.db merged in. The writer moves each into
# its column where the database has it, and leaves the rest in the extra data.
HERMES_COLUMNS_KEY = "hermes_columns"


@dataclass(frozen=True)
class Problem:
    """One report entry: a bad record, a skipped file, a merged duplicate or a mismatch."""

    file: str
    line: int | None
    kind: str
    detail: str
    # True when a record could not be stored (the import then exits 1); False for
    # notices such as blank lines, skipped noise files and merged duplicates. None: as the
    # kind's entry in core/problems.py says.
    failure: bool = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.failure is None:
            object.__setattr__(self, "failure", is_failure(self.kind))
        elif self.kind not in KINDS:
            raise KeyError(f"unregistered problem kind {self.kind!r}")

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "kind": self.kind, "detail": self.detail,
                "failure": self.failure}


@dataclass(slots=True)
class LegacyMessage:
    """One message as a legacy file recorded it, normalised to the v6 message columns."""

    role: str
    content: Any = None  # str, a list of multimodal parts, or None
    timestamp: float | None = None  # epoch seconds; None when the file had none
    tool_call_id: str | None = None
    tool_calls: list[Any] | None = None
    tool_name: str | None = None
    token_count: int | None = None
    finish_reason: str | None = None
    reasoning: str | None = None
    reasoning_details: Any = None
    codex_reasoning_items: Any = None
    # Keys the v6 schema has no column for (mirror flag, message_id, raw ShareGPT value, ...).
    extra: dict[str, Any] = field(default_factory=dict)
    line: int | None = None  # 1-based line in the file, None for whole-object files


@dataclass(frozen=True)
class LegacySession:
    """One session as one file (or index entry) recorded it."""

    session_id: str
    file: str  # the path it was read from
    kind: str  # "jsonl", "snapshot", "sharegpt", "save", "export", "index"
    # v6 `sessions` columns this file names (source, model, system_prompt, user_id,
    # started_at, input_tokens, title, parent_session_id, ended_at, ...). Only keys
    # with a known value are present.
    fields: dict[str, Any] = field(default_factory=dict)
    source_rank: int = SOURCE_FALLBACK
    messages: tuple[LegacyMessage, ...] = ()
    # Session data with no column (inner snapshot id, tools, display name, ...).
    extra: dict[str, Any] = field(default_factory=dict)
    # False for index entries, which carry metadata only and never messages.
    has_messages: bool = True
    # Messages the reader dropped because the file repeated a whole earlier block
    # (the old re-append bug); they count as skipped duplicates in the report.
    duplicates_skipped: int = 0
    # When the file was last written, where it says (a snapshot's last_updated): it holds no message
    # said after that.
    saved_at: float | None = None
