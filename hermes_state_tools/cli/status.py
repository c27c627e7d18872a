"""`hermes-state status`."""

from __future__ import annotations

from typing import Any

from hermes_state_tools.cli import main
from hermes_state_tools.cli.base import EXIT_TOO_NEW, common_options, emit, fail, settings, when
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.views.status import read_status


def _human(doc: dict[str, Any]) -> str:
    fts = "unknown" if doc["fts_bytes"] is None else f"{doc['fts_bytes']:,} bytes"
    return "\n".join([
        f"database:       {doc['path']}",
        f"schema version: {doc['schema_version']}" + ("" if doc["schema_version_recorded"] else " (detected)"),
        f"journal mode:   {doc['journal_mode']}",
        f"sessions:       {doc['sessions']:,}",
        f"messages:       {doc['messages']:,}",
        f"file size:      {doc['db_bytes']:,} bytes (WAL {doc['wal_bytes']:,} bytes, FTS {fts})",
        f"oldest session: {when(doc['oldest_session_started'])}",
        f"newest session: {when(doc['newest_session_started'])}",
    ])


@main.command()
@common_options()
def status(as_json: bool) -> None:
    """Show schema version, journal mode, counts, file sizes and the session date range.

    \b
    Examples:
      hermes-state status
      hermes-state --db backup.db status --json
    """
    doc = read_status(settings().db)
    too_new = doc["schema_version"] > SCHEMA_VERSION
    problem = (f"{doc['path']}: schema version {doc['schema_version']} is newer than this tool "
               f"supports ({SCHEMA_VERSION}); nothing was changed")
    emit({**doc, "ok": not too_new, **({"error": problem} if too_new else {})}, _human)
    if too_new:
        fail(problem, EXIT_TOO_NEW, json_document=False)
