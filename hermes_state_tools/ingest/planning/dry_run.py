"""A dry run's memory of what it would have written: a session met again (a /save file, an export
line) is planned against that, so the dry run counts what the real run would do."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.message_rows import MESSAGE_COLUMNS, Row
from hermes_state_tools.ingest.copies.merge import (
    ENRICHED_COLUMNS,
    PARTS_KEY,
    Enrichment,
    Existing,
    ExistingMessage,
)
from hermes_state_tools.ingest.planning.prepared import Prepared, StagedRows


def as_written(item: Prepared, before: Existing | None) -> Existing:
    """What the session would hold once `item` is written: the starting point of a dry run's next copy."""
    assert not isinstance(item.rows, StagedRows), "a dry run never stages"
    retimed = dict(item.retimed)
    enriched = {e.message_id: e for e in item.enrich}
    kept = [_enriched(replace(m, timestamp=retimed.get(m.id, m.timestamp)), enriched.get(m.id))
            for m in (before.messages if before else ())]
    extra = dict(item.message_extras)
    added = [_added(n, row, extra.get(n)) for n, row in enumerate(item.rows)]
    row = {**(before.row if before else {}), **item.row}
    return Existing(row, tuple(sorted(kept + added, key=lambda m: (m.timestamp, m.id > 0, abs(m.id)))))


def _added(n: int, row: Row, extra: dict[str, Any] | None) -> ExistingMessage:
    """A row the dry run would insert, as load_existing reads it back: its empty columns and its extra
    keys known, so a later copy fills them as it would in the real run."""
    values = dict(zip(MESSAGE_COLUMNS, row, strict=False))
    missing = {name for name in ENRICHED_COLUMNS if values.get(name) in (None, "")}
    if isinstance(row[2], str) and not row[2].startswith(jsonutil.MULTIMODAL_PREFIX):
        missing.add(PARTS_KEY)
    return ExistingMessage(-n - 1, row[1], row[2], row[3], jsonutil.loads_or_raw(row[4]) if row[4] else None,
                           row[6], missing=frozenset(missing), extra_keys=frozenset(extra or ()))


def _enriched(message: ExistingMessage, enrichment: Enrichment | None) -> ExistingMessage:
    """A stored message as the real run leaves it: its key kept (its text may not have been read), the
    columns and extra keys filled, a masked text replaced by the unmasked one (its key then follows)."""
    if enrichment is None:
        return message
    filled = set(enrichment.columns) | ({PARTS_KEY} if PARTS_KEY in enrichment.extra else set())
    message = replace(message, missing=message.missing - filled, extra_keys=message.extra_keys | set(enrichment.extra))
    return message if enrichment.content is None else replace(message, content=enrichment.content, key=None)


def with_stored_texts(before: Existing, stored: Existing | None) -> Existing:
    """`before` (what a dry run would have written) with the stored rows' texts it did not read: a copy
    with redaction masks is compared with them, as the real run compares it with the rows it reads."""
    texts = {m.id: m.content for m in (stored.messages if stored else ())}
    return replace(before, messages=tuple(
        replace(m, content=texts.get(m.id)) if m.content is None and m.id > 0 else m for m in before.messages))
