"""`hermes-state recover` and `restore`: getting the data back when a file is damaged."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from hermes_state_tools.cli import main, maintenance
from hermes_state_tools.cli.base import EXIT_PROBLEMS, common_options, emit, existing_folder, fail, settings
from hermes_state_tools.errors import ConfirmationRequired
from hermes_state_tools.maintenance.recover import recover_file
from hermes_state_tools.store.restore import RestorePlan, restore_file

_SHOWN_RANGES = 10


def _ranges(ranges: list[list[int]]) -> str:
    shown = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges[:_SHOWN_RANGES])
    return shown + (f", ... ({len(ranges)} ranges)" if len(ranges) > _SHOWN_RANGES else "")


def _human_recover(doc: dict[str, Any]) -> str:
    lines = [f"recovered {doc['sessions_recovered']:,} sessions and {doc['messages_recovered']:,} messages "
             f"into {doc['path']} (verified)"]
    if doc["messages_lost"]:
        lines.append(f"lost {doc['messages_lost']:,} messages (ids {_ranges(doc['messages_lost_ranges'])})")
    if doc["sessions_lost"]:
        lines.append(f"lost {doc['sessions_lost']:,} session rows"
                     + (f" ({', '.join(doc['sessions_lost_ids'][:10])})" if doc["sessions_lost_ids"] else ""))
    if doc["placeholder_sessions"]:
        lines.append(f"{len(doc['placeholder_sessions']):,} placeholder sessions hold messages whose session row "
                     "was lost (end_reason 'recovered')")
    if doc["rows_damaged"]:
        shown = ", ".join(doc["rows_damaged"][:10]) + (", ..." if len(doc["rows_damaged"]) > 10 else "")
        lines.append(f"{len(doc['rows_damaged']):,} rows came back with destroyed text (zero bytes, or U+FFFD for "
                     f"stray bytes), kept as read: {shown}")
    if doc["rows_from_page_scan"]:
        lines.append(f"{doc['rows_from_page_scan']:,} rows read from pages the damaged b-tree no longer reached")
    if doc["other_tables_lost"]:
        lines.append(f"tables that could not be read: {', '.join(doc['other_tables_lost'])}")
    if doc["columns_not_kept"]:
        lines.append(f"columns a schema-6 file has no place for, their values not in {doc['path']}: "
                     f"{', '.join(doc['columns_not_kept'])}")
    if doc["pages_missing"]:
        lines.append(f"the file ends {doc['pages_missing']:,} pages before the end its header gives (cut short): "
                     "what those pages held is lost, and cannot be counted")
    if doc["wal_transactions_past_damage"]:
        lines.append(f"{doc['wal_transactions_past_damage']:,} committed transactions past a damaged frame of the "
                     "-wal (which SQLite alone does not read) came back"
                     + (f"; {doc['wal_pages_lost']:,} damaged pages no later frame held are lost"
                        if doc["wal_pages_lost"] else ""))
    if doc["wal_transactions_not_applied"]:
        lines.append(f"{doc['wal_transactions_not_applied']:,} committed transactions past a damaged frame of the "
                     "-wal were not applied: something wrote after the damage, and their pages would replace "
                     "newer rows; they stay in the source's -wal")
    if doc["complete"]:
        lines.append("everything came back")
    return "\n".join(lines)


@main.command()
@click.argument("dest", type=click.Path(path_type=Path, dir_okay=False), callback=existing_folder)
@common_options()
def recover(dest: Path, as_json: bool) -> None:
    """Salvage every readable session and message of a damaged database into a new file DEST.

    The database (--db) is only read, never changed, and nothing is left beside it. Rows are read
    around the damaged pages; rows under a destroyed interior page are read from the leaf pages.
    Messages whose session row was lost keep their rows under a placeholder session. DEST is a
    new, verified schema-6 file, built under a temporary name beside it and renamed into place
    (DEST must not exist). Reports what came back and the message ids that were lost.

    Exit 0 when everything came back, 1 when something did not: rows that could not be read (all
    counted), another table lost, or a newer Hermes' columns the schema-6 DEST cannot hold (named
    in columns_not_kept; the database keeps them).

    \b
    Examples:
      hermes-state recover ~/.hermes/state-recovered.db
      hermes-state --db damaged.db recover new.db --json
    """
    doc = recover_file(settings().db, dest).as_dict()
    emit(doc, _human_recover)
    if not doc["complete"]:
        sys.exit(EXIT_PROBLEMS)


def _confirmer(yes: bool) -> Callable[[RestorePlan], None]:
    def confirm(plan: RestorePlan) -> None:
        if yes:
            return
        if not maintenance.stdin_is_terminal():  # looked up at call time: tests stand in a terminal
            raise ConfirmationRequired("restore replaces the database: without a terminal to confirm on, pass --yes")
        if not click.confirm(f"Replace {plan.db} with {plan.backup}; the current file is kept as {plan.aside}?",
                             default=False, err=True):
            fail("restore cancelled; nothing was changed", EXIT_PROBLEMS)

    return confirm


@main.command()
@click.argument("backup_path", metavar="BACKUP", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--yes", is_flag=True, help="Do not ask (needed when there is no terminal).")
@common_options()
def restore(backup_path: Path, yes: bool, as_json: bool) -> None:
    """Put BACKUP in place of the database, keeping the current file aside.

    BACKUP is verified (integrity_check, a Hermes schema this tool knows) and copied to a
    temporary file beside the database, verified again; the current file (with its -wal) is
    kept as `state.db.pre-restore-<timestamp>` and the copy renamed into place. A damaged
    database is replaced like any other; a missing, empty or foreign one is refused (exit 2:
    put a lost database back with `backup`). Refused while another process (Hermes) has the
    database open (exit 75). Asks on a terminal; without one it needs --yes (exit 2 otherwise).

    \b
    Examples:
      hermes-state restore ~/.hermes/state.db.bak-20260501T120000Z
      hermes-state --db state.db restore backups/state.db.bak-20260501T120000Z --yes --json
    """
    doc = restore_file(settings().db, backup_path, _confirmer(yes)).as_dict()
    emit(doc, lambda d: f"restored {d['path']} from {d['restored_from']} ({d['sessions']:,} sessions, "
                        f"{d['messages']:,} messages, verified)"
                        + (f"; the previous file is kept as {d['previous']}" if d["previous"] else ""))
