"""`hermes-state status`."""

from __future__ import annotations

from typing import Any

from hermes_state_tools.cli import main
from hermes_state_tools.cli.base import common_options, emit, settings, when
from hermes_state_tools.views.status import read_status


def _hidden_messages(doc: dict[str, Any]) -> str:
    """What of the messages Hermes keeps out of its conversations, said beside the count."""
    parts = [f"{doc[key]:,} {what}" for key, what in (("messages_rewound", "rewound"),
                                                      ("messages_compacted", "compacted away")) if doc[key]]
    return f" ({', '.join(parts)})" if parts else ""


def _human(doc: dict[str, Any]) -> str:
    fts = "unknown" if doc["fts_bytes"] is None else f"{doc['fts_bytes']:,} bytes"
    return "\n".join([
        f"database:       {doc['path']}",
        f"schema version: {doc['schema_version']}" + ("" if doc["schema_version_recorded"] else " (detected)"),
        f"journal mode:   {doc['journal_mode']}",
        f"sessions:       {doc['sessions']:,}" + (f" (and {doc['sessions_archived']:,} archived)"
                                                   if doc["sessions_archived"] else ""),
        f"messages:       {doc['messages']:,}" + _hidden_messages(doc),
        f"file size:      {doc['db_bytes']:,} bytes (WAL {doc['wal_bytes']:,} bytes, FTS {fts})",
        f"oldest session: {when(doc['oldest_session_started'])}",
        f"newest session: {when(doc['newest_session_started'])}",
        f"sqlite:         {doc['sqlite_version']}",
        *(f"note: {note}" for note in doc["notes"]),
    ])


@main.command()
@common_options()
def status(as_json: bool) -> None:
    """Show schema version, journal mode, counts, file sizes, the session date range and the SQLite in use.

    Read-only, leaves no file beside the database (works in a read-only folder). A newer schema
    is read (the columns of the layouts this tool knows) with one warning line. A note warns when
    the SQLite in use has the WAL-reset bug (3.7.0 through 3.51.2): here, and in `check` only when
    the file is damaged; --json of status, check and maintain says "sqlite_wal_reset_bug": true|false.

    \b
    Examples:
      hermes-state status
      hermes-state --db backup.db status --json
    """
    emit(read_status(settings().db).as_dict(), _human)
