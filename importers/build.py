"""Assemble a LegacySession from normalised messages: source ranking, tool names, re-appended blocks."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hermes_state_tools.core.frozen import built
from hermes_state_tools.core.records import SOURCE_FALLBACK, LegacyMessage, LegacySession, Problem
from hermes_state_tools.importers.messages import fill_tool_names


def platform_source(value: Any) -> str | None:
    """Return the session source a `platform` value names ("local" means the CLI), or None."""
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    return "cli" if value == "local" else value


def usable_id(session_id: str) -> bool:
    """Whether a file name's id can be a session id: `session_.json` gives "", `.jsonl` gives ".jsonl"."""
    return bool(session_id.strip()) and not session_id.startswith(".")


# A file copied beside its original by a file manager, a browser or a sync client, in any language:
# "X (1)", "X - Copy", "X - Kopie (2)", "X copy 2", "X Kopie", "X 2" (Finder), "X (Copy)", GNOME Files'
# "X (another copy)" and "X (3rd copy)", "X_1", "X-1", "X.bak", "X.old", Dropbox's and Nextcloud's
# "X (Ann's conflicted copy 2026-03-01)", Syncthing's "X.sync-conflict-20260301-090000-ABCDEFG",
# OneDrive's "X-DESKTOP-4F2K1", and a copy of a copy ("X - Copy - Copy", "X (1) (1)"). Only when X
# has the shape of a Hermes session id (date_time_hex, or cron_job_date_time) is the copy read as X:
# no Hermes id goes on past that shape, so what follows it can only be a copy's mark.
_COPY_WORD = ("(?:copy|kopie|copie|copia|c\u00f3pia|kopia|kopio|kopi|kopya|kopija|kopiran\u00fd|m\u00e1solat"
              "|\u043a\u043e\u043f\u0438\u044f|\u043a\u043e\u043f\u0456\u044f|\u03b1\u03bd\u03c4\u03af\u03b3\u03c1\u03b1\u03c6\u03bf"
              "|\u306e\u30b3\u30d4\u30fc|\u30b3\u30d4\u30fc|\u526f\u672c|\u590d\u5236|\ubcf5\uc0ac\ubcf8)")
COPY_SUFFIX = (rf"(?i: \(\d+\)| \d+| - {_COPY_WORD}(?: \(\d+\))?| ?{_COPY_WORD}(?: \d+)?"
               rf"| \((?:{_COPY_WORD}|another copy|\d+(?:st|nd|rd|th) copy)\)| \([^()]*conflicted copy[^()]*\)"
               r"|[_-]\d+|\.(?:bak|backup|orig|old|copy)\d*|~|\.sync-conflict-[0-9A-Za-z-]+"
               r"|-(?=[0-9A-Za-z-]*[A-Za-z])[0-9A-Za-z]+(?:-[0-9A-Za-z]+)*)")
# a session id, a cron session's, or the name a /save file without an id takes its id from
_SESSION_ID = r"\d{8}_\d{6}_[0-9A-Fa-f]{6,8}|cron_[0-9A-Za-z]+_\d{8}_\d{6}|hermes_conversation_\d{8}_\d{6}"
_COPY_NAME = re.compile(rf"(?P<id>{_SESSION_ID})(?:{COPY_SUFFIX})+")


def file_id(name_id: str) -> str:
    """The session id a file name gives: a copy's name gives its original's (see _COPY_NAME)."""
    match = _COPY_NAME.fullmatch(name_id)
    return match.group("id") if match else name_id


def copy_name_problem(file: str, name_id: str) -> Problem | None:
    """The notice for a file whose name is a copy's, read as the session it copies; None for any other."""
    session_id = file_id(name_id)
    if session_id == name_id:
        return None
    return Problem(file, None, "copy_name", f"the file name {name_id!r} is a copy's; read as session {session_id} "
                   "(its messages merged with the other copies, nothing twice)")


def no_id_problem(file: str) -> Problem:
    return Problem(file, None, "no_session_id", "the file name gives no session id and the file names none; not read")


def build_session(
    session_id: str,
    file: str,
    kind: str,
    messages: list[LegacyMessage],
    source: tuple[str | None, int, str],
    fields: dict[str, Any],
    extra: dict[str, Any],
    saved_at: float | None = None,
) -> tuple[LegacySession, list[Problem]]:
    """Return the session a file holds; `source` is (named source or None, its rank, the fallback);
    `saved_at`: when the file was last written, where it says."""
    named, rank, fallback = source
    fields = {**fields, "source": named or fallback}
    kept, problems = drop_duplicate_blocks(fill_tool_names(messages), file)
    session = built(  # (every reader's sessions come through here: LegacySession without its frozen __init__)
        LegacySession,
        session_id=session_id,
        file=file,
        kind=kind,
        fields=fields,
        source_rank=rank if named else SOURCE_FALLBACK,
        messages=tuple(kept),
        extra=extra,
        has_messages=True,
        duplicates_skipped=len(messages) - len(kept),
        saved_at=saved_at,
    )
    return session, problems


def _key(message: LegacyMessage) -> tuple[Any, ...]:
    return (message.role, message.content, message.tool_calls, message.tool_call_id)


def drop_duplicate_blocks(
    messages: list[LegacyMessage], file: str
) -> tuple[list[LegacyMessage], list[Problem]]:
    """Drop blocks that repeat the whole history before them (an old bug re-appended it); report each."""
    keys = [_key(m) for m in messages]
    if not keys or keys[0] not in keys[1:]:  # a repeat starts with the first message again: none here
        return messages, []
    times = [m.timestamp for m in messages]
    kept: list[int] = []
    problems: list[Problem] = []
    at = 0
    while at < len(messages):
        size = _repeat_size(keys, times, kept, at)
        if size:
            problems.append(_duplicate_problem(file, messages, at, size))
            at += size
            continue
        kept.append(at)
        at += 1
    return [messages[i] for i in kept], problems


def _repeat_size(keys: list[tuple[Any, ...]], times: list[Any], kept: list[int], at: int) -> int:
    """Return the length of the block at `at` that repeats the history so far (2 or more), else 0."""
    if _is_repeat(keys, times, kept, at):
        return len(kept)
    # After an earlier repeat was dropped, a copy of the raw prefix (repeat included) counts too.
    if len(kept) != at and _is_repeat(keys, times, range(at), at):
        return at
    return 0


def _is_repeat(keys: list[tuple[Any, ...]], times: list[Any], prefix: Sequence[int], at: int) -> bool:
    """Tell whether the messages at `at` repeat those at the indexes `prefix`, in order and in time."""
    size = len(prefix)
    if size < 2 or at + size > len(keys):
        return False
    # Compare the ends first: almost every position fails there without copying a slice.
    if keys[at] != keys[prefix[0]] or keys[at + size - 1] != keys[prefix[-1]]:
        return False
    if keys[at : at + size] != [keys[i] for i in prefix]:
        return False
    # A copy holds the history's own times, or the turn's (_restamped): an exchange said again a
    # minute on (a second "ok") has its own times and is no repeat.
    return times[at : at + size] == [times[i] for i in prefix] or _restamped(times, at, size)


def _restamped(times: list[Any], at: int, size: int) -> bool:
    """The gateway before March 2026 (Hermes PR #395) re-appended the whole history when the messages
    its agent returned were no more than the history it loaded, stamping every copy with the turn's
    time, and then the turn's own messages with that time too. An exchange said again (a second "ok"
    a minute on) is a turn of its own: no message after it shares its time."""
    turn = times[at]
    return (turn is not None and at + size < len(times) and times[at + size] == turn
            and all(t == turn for t in times[at : at + size]))


def _duplicate_problem(file: str, messages: list[LegacyMessage], at: int, size: int) -> Problem:
    """Return the notice for one skipped repeated block."""
    first, last = messages[at].line, messages[at + size - 1].line
    where = f"lines {first}-{last}" if first is not None else f"messages {at + 1}-{at + size}"
    detail = f"{where} repeat the whole history before them ({size} messages); skipped as duplicates"
    return Problem(file, first, "duplicate_block", detail)
