"""Every kind of import problem, in one registry: what it means and whether a record was lost.

A *failure* means something the files hold was not stored (the import exits 1); a *notice*
tells of something handled (a blank line skipped, a duplicate merged, a file decoded from a code
page) and leaves the exit code alone. A reader may still mark one entry of a notice kind as a
failure (a value that could not be kept at all); the registry gives the usual case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProblemKind:
    name: str
    failure: bool
    meaning: str


_KINDS = (
    # Files and folders
    ProblemKind("missing_path", True, "a path named on the command line does not exist"),
    ProblemKind("unreadable_path", True, "a folder could not be listed"),
    ProblemKind("unreadable_file", True, "a file could not be read"),
    ProblemKind("reader_error", True, "a reader failed on a file (a bug); the file was not imported"),
    ProblemKind("empty_file", False, "a file is empty"),
    ProblemKind("skipped_file", False, "a file that is not a transcript (noise, temporary, dumps) was not read"),
    ProblemKind("profile_skipped", False, "a profiles/<name>/ folder is imported into its own database"),
    ProblemKind("nothing_found", False, "no legacy transcript files under the paths given"),
    ProblemKind("more_in_home", False, "a folder of a HERMES_HOME was named alone: the home holds more "
                "transcripts (logs/, copies kept beside them), not read; name the home to import them"),
    # Lines and records
    ProblemKind("blank_line", False, "a blank line was skipped"),
    ProblemKind("decoded_cp1252", False, "text that is not UTF-8 was decoded from a Windows code page"),
    ProblemKind("invalid_json", True, "a line or file is not valid JSON; its record was not stored"),
    ProblemKind("truncated_line", True, "the last line was cut short (a crash while writing); not stored"),
    ProblemKind("truncated_index", True, "sessions.json was cut short; its entries were not read"),
    ProblemKind("not_object", True, "a record is not a JSON object; not stored"),
    ProblemKind("not_export_record", True, "a line of an export file is not an export record; not stored"),
    ProblemKind("missing_role", True, "a message has no role; not stored"),
    ProblemKind("missing_session_id", True, "a record names no session id; not stored"),
    ProblemKind("no_session_id", True, "a file's name gives no session id (session_.json, .jsonl) and the file "
                "names none; not stored"),
    ProblemKind("wrong_type", False, "a field has the wrong JSON type; its value is kept in the extra data"),
    ProblemKind("out_of_range", False, "a number no column can hold (wider than 64 bits); kept in the extra data"),
    ProblemKind("bad_timestamp", False, "a timestamp could not be read; the message is placed by order"),
    ProblemKind("bad_tool_call", False, "a tool call could not be parsed; kept as text"),
    ProblemKind("sharegpt_placeholder", False, "a February 2026 ShareGPT log's first human entry is the empty "
                "user_query its writer put in place of the first user message; kept in the session's extra, "
                "not stored as a message"),
    ProblemKind("skipped_entry", False, "an index entry without a usable session was skipped"),
    ProblemKind("session_id_mismatch", False, "a snapshot's own session_id differs from its file name"),
    ProblemKind("compression_child", False, "a snapshot named after a session held its compression child; "
                "imported into the child"),
    ProblemKind("redacted_copy", False, "a message differs from another copy of it only where Hermes masked "
                "secrets (a redacted JSON snapshot); stored once, with the text the unmasked copy has"),
    ProblemKind("duplicate_block", False, "a file repeats a whole earlier block; the repeat was not stored again"),
    ProblemKind("lone_surrogate", False, "text held an unpaired surrogate, stored as U+FFFD"),
    ProblemKind("copy_name", False, "a file named as a copy of a session's (\"X (1)\", \"X - Copy\") was read as "
                "that session"),
    ProblemKind("index_only", False, "the index lists a session whose transcript was not read; nothing was made of "
                "its entry"),
    ProblemKind("no_messages", False, "a session with no messages (a file of none, or an index entry whose "
                "transcript holds none); no session was made from it"),
    # Writing
    ProblemKind("not_stored", True, "a session could not be written; nothing of it was stored"),
    ProblemKind("title_renamed", False, "a title already taken got a ' #N' suffix"),
    ProblemKind("kept_in_extra", False,
                "values of a later Hermes' columns this database has not, kept in the extra data"),
    ProblemKind("shown_here", False,
                "messages a later Hermes hid (rewound, compacted away) or a session it archived are shown by this "
                "database's Hermes, whose layout has no column to hide them"),
    ProblemKind("retimed", False, "timestamps were moved to keep a session's messages in order"),
    ProblemKind("missing_parent", False, "a parent session named by a file does not exist; the link was dropped"),
    ProblemKind("parent_cycle", False, "parent links formed a cycle; one link was dropped"),
)

KINDS: dict[str, ProblemKind] = {kind.name: kind for kind in _KINDS}


def is_failure(kind: str) -> bool:
    """The registry's verdict for a kind; an unknown kind is a bug in the caller."""
    return KINDS[kind].failure


EXAMPLES = 3  # entries shown per kind in a human report


def group_problems(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Report entries grouped by kind, failures first, then the most frequent: kind, failure, count,
    what the kind means and the first few entries (so 300 failures never hide among 900 notices)."""
    groups: dict[tuple[str, bool], list[dict[str, Any]]] = {}
    for problem in problems:
        groups.setdefault((problem["kind"], bool(problem.get("failure"))), []).append(problem)
    ordered = sorted(groups.items(), key=lambda item: (not item[0][1], -len(item[1]), item[0][0]))
    return [{"kind": kind, "failure": failure, "count": len(entries),
             "meaning": KINDS[kind].meaning if kind in KINDS else "", "examples": entries[:EXAMPLES]}
            for (kind, failure), entries in ordered]
