"""`hermes-state upgrade`."""

from __future__ import annotations

from typing import Any

import click

from hermes_state_tools.cli import main
from hermes_state_tools.cli.base import common_options, emit, settings, step_bar
from hermes_state_tools.maintenance.upgrade_file import upgrade_file


def _human(doc: dict[str, Any]) -> str:
    verb = "would upgrade" if doc["dry_run"] else "upgraded"
    if not (doc["steps"] or doc["repairs"] or doc["renamed_titles"] or doc["created"]):
        return f"schema is already at version {doc['to_version']}; nothing to do"
    if doc["from_version"] == doc["to_version"]:
        # Nothing to migrate, only schema objects to put back (a missing index, trigger, ...).
        lines = [f"schema is at version {doc['to_version']}; {'would repair' if doc['dry_run'] else 'repaired'}:"]
    else:
        lines = [f"{verb} schema {doc['from_version']} -> {doc['to_version']}"]
    lines += [f"  step: {step}" for step in doc["steps"]]
    lines += [f"  repair: {repair}" for repair in doc["repairs"]]
    lines += [f"  renamed title of {r['session_id']}: {r['old']!r} -> {r['new']!r}" for r in doc["renamed_titles"]]
    if doc["backup"]:
        lines.append(f"backup: {doc['backup']}")
    return "\n".join(lines)


@main.command()
@click.option("--dry-run", is_flag=True, help="Upgrade a temporary copy and report what would change.")
@click.option("--no-backup", is_flag=True, help="Skip the verified backup taken before upgrading.")
@common_options()
def upgrade(dry_run: bool, no_backup: bool, as_json: bool) -> None:
    """Migrate a database from any schema version 1-5 to 6.

    A verified backup (state.db.bak-<timestamp>) is taken first unless --no-backup. A file of a later
    Hermes' layout this tool knows (7-17) keeps its version: only what its own layout lacks (an
    index, a trigger) is put back, as that Hermes would. A layout it does not know is refused (exit
    3) and left untouched.

    \b
    Examples:
      hermes-state upgrade
      hermes-state --db old.db upgrade --dry-run --json
    """
    with step_bar("upgrade") as progress:
        doc = upgrade_file(settings().db, backup=not no_backup, dry_run=dry_run, progress=progress).as_dict()
    emit(doc, _human)
