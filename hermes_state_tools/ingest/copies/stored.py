"""What the database already holds for one session: the merge's starting point."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.records import FOREIGN_ROLES, LegacySession
from hermes_state_tools.core.schema import table_columns
from hermes_state_tools.ingest.copies.align import durable_text, message_key
from hermes_state_tools.ingest.copies.merge import ENRICHED_COLUMNS, PARTS_KEY, Existing, ExistingMessage
from hermes_state_tools.ingest.copies.redaction import has_mask
from hermes_state_tools.tables import extras, lineage

Fingerprint = tuple[int, int] | None  # (message count, highest message id), None when the session is absent


def texts_wanted(copies: Iterable[LegacySession]) -> bool:
    """Whether a copy holds text with redaction masks: only then are the stored texts needed
    (to tell whether one is that text unmasked, masked.py)."""
    return any(_masked_content(m.content) for c in copies for m in c.messages)


def _masked_content(content: Any) -> bool:
    if isinstance(content, str):  # the cheap gate on the raw text: cleaning and stripping make no mask
        return has_mask(content)
    text = durable_text(content) if isinstance(content, list) else None
    return text is not None and has_mask(text)


def load_existing(conn: sqlite3.Connection, session_id: str, texts: bool = False) -> Existing | None:
    """The session row and its messages as alignment needs them, or None when it is not stored.

    Rows are streamed and each keeps its alignment key (a digest for long text), not its content:
    a re-import holds no second copy of a big session's text. A text with redaction masks is kept
    (a copy may hold it unmasked), and with `texts` every text. Rows that are no message (the
    February 2026 gateway's session_meta rows) stay out of the alignment; the writer moves them."""
    row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    present = table_columns(conn, "messages")
    enriched = [c for c in ENRICHED_COLUMNS if c in present]
    # A dry run reads a file at an older schema: the upgrade the real run makes first adds these
    # columns empty, so the real run fills them; planning them as filled would predict less.
    absent = frozenset(c for c in ENRICHED_COLUMNS if c not in present)
    cursor = conn.execute(
        f"SELECT id, role, content, tool_call_id, tool_calls, timestamp{''.join(', ' + c for c in enriched)} "
        "FROM messages WHERE session_id = ? ORDER BY timestamp, id", (session_id,)
    )
    extra_keys = {mid: frozenset(data) for mid, data in extras.message_extras(conn, session_id).items()
                  if isinstance(data, dict)}
    columns = frozenset(present)
    messages, foreign = [], []
    for m in cursor:
        if m[1] in FOREIGN_ROLES:
            foreign.append(m[0])
            continue
        calls = jsonutil.loads_or_raw(m[4]) if m[4] else None
        missing = absent | {c for c, v in zip(enriched, m[6:], strict=True) if v is None or v == ""}
        if isinstance(m[2], str) and not m[2].startswith(jsonutil.MULTIMODAL_PREFIX):
            missing |= {PARTS_KEY}  # stored as text: a copy's list of parts (its images) is kept beside it
        kept = m[2] if texts or (isinstance(m[2], str) and has_mask(m[2])) else None
        messages.append(ExistingMessage(m[0], m[1], kept, m[3], calls, m[5], message_key(m[1], m[2], m[3], calls),
                                        missing, extra_keys.get(m[0], frozenset()), columns))
    return Existing(dict(row), tuple(messages), tuple(foreign), _parked_parent(conn, session_id))


def _parked_parent(conn: sqlite3.Connection, session_id: str) -> str | None:
    """The parent link the writer kept aside for this session, while that parent is still missing or
    the link would close a lineage cycle (a re-run must not make the link the first run refused)."""
    parked = extras.session_extra(conn, session_id).get("parent_session_id")
    if not isinstance(parked, str):
        return None
    if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parked,)).fetchone():
        return parked
    return parked if lineage.closes_cycle(conn, session_id, parked) else None


def fingerprint(conn: sqlite3.Connection, session_id: str) -> Fingerprint:
    """The session's fingerprint as stored now (one query: the writer asks it for every session)."""
    stored, count, highest = conn.execute(
        "SELECT (SELECT 1 FROM sessions WHERE id = ?1), COUNT(*), COALESCE(MAX(id), 0) FROM messages "
        "WHERE session_id = ?1", (session_id,)
    ).fetchone()
    return None if stored is None else (count, highest)


def fingerprint_of(existing: Existing | None) -> Fingerprint:
    """The fingerprint of what load_existing read: the same snapshot as the plan made from it."""
    if existing is None:
        return None
    ids = [m.id for m in existing.messages] + list(existing.foreign_ids)
    return (len(ids), max(ids, default=0))


def stored_session_ids(conn: sqlite3.Connection) -> set[str]:
    """Every session id in the database: sessions outside it need no lookup to plan (one created
    meanwhile fails the writer's fingerprint check and is planned again)."""
    return {row[0] for row in conn.execute("SELECT id FROM sessions")}
