"""`hermes-state check`, `repair`, `rebuild-fts`, `vacuum`, `backup`, `maintain` and `prune`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from hermes_state_tools.cli import main
from hermes_state_tools.cli.base import (
    EXIT_DAMAGED,
    EXIT_PROBLEMS,
    common_options,
    emit,
    existing_folder,
    fail,
    plural,
    settings,
    step_bar,
)
from hermes_state_tools.errors import DAMAGED_REFUSAL, ConfirmationRequired

# Each command loads its library module when it runs, so `check --quick` (a cron job's every run)
# does not load repair, maintain, prune, vacuum and backup as well.
if TYPE_CHECKING:
    from hermes_state_tools.maintenance.prune import PrunePlan

_SHOWN_IDS = 10


def _listed(title: str, items: list[dict[str, Any]]) -> list[str]:
    """A heading and one `kind: detail` line per finding or change; nothing when there are none."""
    return [title] + [f"  {item['kind']}: {item['detail']}" for item in items] if items else []


def _human_check(doc: dict[str, Any]) -> str:
    if doc["ok"]:
        lines = [f"{doc['path']}: no problems found"]
    else:
        lines = _listed(f"{doc['path']}: {plural(len(doc['problems']), 'problem')}:", doc["problems"])
    lines += [f"  skipped {s['check']}: {s['reason']}" for s in doc["skipped"]]
    if doc["damaged"]:
        lines.append(DAMAGE_ADVICE)
    lines += [f"note: {note}" for note in doc["notes"]]
    return "\n".join(lines)


DAMAGE_ADVICE = ("the file is damaged: nothing writes into it now; `repair` rebuilds derived data (indexes, "
                 "search index); for canonical data run `hermes-state recover NEW.db` (see docs/damage.md)")


def _human_repair(doc: dict[str, Any]) -> str:
    if not doc["problems"]:
        return "no problems found; nothing to repair"
    verb, left = ("would change", "would be left unfixed") if doc["dry_run"] else ("changed", "left unfixed")
    lines = [f"found {plural(len(doc['problems']), 'problem')}; {verb} {plural(len(doc['changes']), 'thing')}:"]
    lines += [f"  {c['kind']}: {c['detail']}" for c in doc["changes"]]
    lines += _listed(f"{left}:", doc["unfixed"]) or ["nothing " + left]
    if doc.get("backup"):
        lines.append(f"backup taken first: {doc['backup']}")
    return "\n".join(lines)


def _exit_unless(ok: bool) -> None:
    if not ok:
        sys.exit(EXIT_PROBLEMS)


@main.command()
@click.option("--quick", is_flag=True, help="quick_check instead of integrity_check; FTS compared by ids only; "
              "roles not read (foreign_roles is listed as skipped).")
@common_options()
def check(quick: bool, as_json: bool) -> None:
    """Check the database for damage and inconsistencies (read-only).

    Looks at the file's integrity, foreign keys, the search index against the messages, lineage
    cycles and missing parents, per-session counters, duplicate titles and the schema version.

    A damaged file is checked to the end: each damaged table or index is named, as canonical data
    (sessions, messages, schema_version) or derived (indexes, the search index); checks that
    cannot run on the damaged parts are listed as skipped. A later Hermes' file (schema 7-17) is
    checked against its own layout: its triggers, indexes and every search index with the text
    that layout indexes; a layout this tool does not know gets the file-level checks (integrity,
    foreign keys), and version 6's search checks where it still holds version 6's index (a v6
    file a Hermes of schema 23 or later opened: fts_trigger_hazard). The SQLite version in use
    is reported, with a note when it has the WAL-reset bug.

    Exit 0 when healthy, 1 when a problem was found (every one listed). Never takes the write
    lock, never changes the file and leaves nothing beside it, so it is safe while Hermes runs.

    \b
    Examples:
      hermes-state check
      hermes-state --db backup.db check --quick --json
    """
    path = settings().db
    with step_bar("check") as progress:
        from hermes_state_tools.maintenance.checks import check_report
        report = check_report(path, quick, progress)
    emit({"ok": not report.findings, "path": str(path), "quick": quick, **report.as_dict()}, _human_check)
    _exit_unless(not report.findings)


@main.command()
@click.option("--dry-run", is_flag=True, help="Make the repair in a transaction, report it, and roll it back.")
@common_options()
def repair(dry_run: bool, as_json: bool) -> None:
    """Fix what `check` finds, without losing data, in one transaction.

    Rebuilds the search index, recreates missing triggers and indexes, recounts counters, breaks
    lineage cycles, clears parents that do not exist, renames duplicate titles, fixes the version
    row, and gives orphaned messages a placeholder session. Every change is reported. Exit 0 when
    nothing is left unfixed (with --dry-run: when everything found would be fixed), else 1.

    Damage to derived data (an index, the search index, a duplicated schema entry) is fixed by
    rebuilding the file: every canonical row copied exactly into a new file beside it, verified,
    swapped in; the original is kept as state.db.pre-repair-<timestamp>. Refused (exit 75) while
    another process has the database open. Damage to canonical rows (sessions, messages) is
    refused with exit 65 and nothing written: `recover` salvages them into a new file.

    \b
    Examples:
      hermes-state repair --dry-run
      hermes-state repair --json
    """
    with step_bar("repair") as progress:
        from hermes_state_tools.maintenance.repair import repair_file
        report = repair_file(settings().db, dry_run, progress=progress)
    emit(report.as_dict(), _human_repair)
    _exit_unless(report.ok)


@main.command("rebuild-fts")
@common_options()
def rebuild_fts(as_json: bool) -> None:
    """Rebuild the full-text index from the messages table.

    A missing FTS table or trigger is recreated first. A damaged file is refused (exit 65, nothing
    written; see `check` and `repair`).

    \b
    Examples:
      hermes-state rebuild-fts
      hermes-state --db state.db rebuild-fts --json
    """
    from hermes_state_tools.maintenance.rebuild_fts import rebuild_fts_file
    doc = rebuild_fts_file(settings().db).as_dict()
    emit(doc, lambda d: f"rebuilt {' and '.join(d['indexes'])} from {d['messages_indexed']:,} messages"
                        + (f" (recreated {', '.join(d['recreated'])})" if d["recreated"] else ""))


def _files(doc: dict[str, Any]) -> str:
    """The two files apart, when the report has them: what a total's change was made of."""
    if "wal_bytes_after" not in doc:
        return ""
    return (f" (database file {doc['database_bytes_before']:,} -> {doc['database_bytes_after']:,} bytes, "
            f"-wal {doc['wal_bytes_before']:,} -> {doc['wal_bytes_after']:,} bytes)")


def _human_vacuum(doc: dict[str, Any]) -> str:
    before, after = doc["bytes_before"], doc["bytes_after"]
    if after < before:
        change = f"{before - after:,} bytes smaller on disk ({before:,} -> {after:,} bytes)"
    elif after == before:
        change = f"the same size ({after:,} bytes): there was no free space to give back"
    else:
        why = ("the -wal is not empty yet" if doc.get("wal_bytes_after") else
               "ANALYZE's statistics take a page or two")
        change = (f"{after - before:,} bytes larger ({before:,} -> {after:,} bytes): there was no free space "
                  f"to give back, and {why}")
    return f"vacuumed {doc['path']}: {change}{_files(doc)}"


@main.command()
@common_options()
def vacuum(as_json: bool) -> None:
    """Checkpoint the WAL, optimize the index, VACUUM and ANALYZE.

    VACUUM rewrites the whole file under the write lock: while another process (a running Hermes)
    has the database open, vacuum refuses with exit 75 and changes nothing, since that process's
    writes would wait for the whole rewrite. Run it while Hermes is stopped; the nightly
    `maintain` leaves the rewrite for such a time meanwhile (docs/scheduling.md). The report
    gives the database file's and the -wal's sizes before and after. A damaged file is refused
    (exit 65, nothing written); a full disk exits 74 with the file as it was.

    \b
    Examples:
      hermes-state vacuum
      hermes-state vacuum --json
    """
    with step_bar("vacuum") as progress:
        from hermes_state_tools.maintenance.vacuum import vacuum_file
        doc = vacuum_file(settings().db, progress).as_dict()
    emit(doc, _human_vacuum)


@main.command()
@click.argument("dest", type=click.Path(path_type=str), callback=existing_folder)
@click.option("--keep", type=click.IntRange(min=1), metavar="N",
              help="DEST is a folder: keep the N newest dated backups there, remove older ones.")
@common_options()
def backup(dest: str, keep: int | None, as_json: bool) -> None:
    """Copy the database online to DEST and verify the copy.

    The copy is written to a temporary file beside DEST, reopened (it must pass integrity_check
    with the same counts as the source snapshot), fsynced, and only then renamed to DEST: a
    killed or failed backup leaves no DEST. DEST must not exist; a folder (an existing one, or
    one named with a trailing slash, created then; or any DEST with --keep) gets a dated file
    `state.db.bak-<timestamp>` in it, and with --keep N the oldest beyond N are removed after
    the new one verified. A full disk exits 74, a damaged source 65.

    \b
    Examples:
      hermes-state backup ~/backups/state-2026-05-01.db
      hermes-state backup ~/backups/ --keep 7
      hermes-state --db ~/.hermes/state.db backup /mnt/usb/state.db --json
    """
    from hermes_state_tools.store.backup import backup_file
    doc = backup_file(settings().db, dest, keep).as_dict()
    emit(doc, lambda d: f"backed up {plural(d['sessions'], 'session')} and {plural(d['messages'], 'message')} "
                        f"to {d['path']} ({d['bytes']:,} bytes, verified)"
                        + "".join(f"\nremoved old backup {p}" for p in d["removed"]))


def _human_maintain(doc: dict[str, Any]) -> str:
    found = len(doc["check"]["problems"])
    if doc["ok"]:
        verdict = "healthy" if not found else f"healthy after repairing {plural(found, 'problem')}"
    else:
        verdict = "problems remain"
    lines = [f"{doc['path']}: {verdict}"]
    lines += _listed(f"check found {plural(found, 'problem')}:", doc["check"]["problems"])
    lines += [f"backup before changing the schema: {doc['backup']}"] if doc.get("backup") else []
    lines += _listed("repaired:", doc["repairs"])
    lines += _listed("left unfixed:", doc["unfixed"])
    lines += [f"note: {doc['note']}"] if doc.get("note") else []
    if doc["extra_rows_dropped"]:
        lines.append(f"extra data of deleted sessions dropped: {plural(doc['extra_rows_dropped'], 'row')}")
    lines.append(f"search index optimized: {'yes' if doc['optimized'] else 'no'}; "
                 f"vacuumed: {'yes' if doc['vacuumed'] else 'no'}; "
                 f"{doc['bytes_before']:,} -> {doc['bytes_after']:,} bytes on disk{_files(doc)}")
    lines += [f"not optimized nor vacuumed: {doc['deferred']}"] if doc.get("deferred") else []
    return "\n".join(lines)


@main.command()
@common_options()
def maintain(as_json: bool) -> None:
    """The scheduled job: check, repair, optimize, vacuum if worth it.

    Repairs what is safe, optimizes the search index, and runs VACUUM only when enough of the
    file is free pages. Safe beside a running Hermes: while another process has the database
    open, the two rewrites (optimizing the index, VACUUM) are left for a night it is stopped and
    the report says so (`deferred`); the rest runs in short transactions. A damaged file
    (integrity) is reported and left untouched: exit 65, so cron can alert (then see `check`,
    `repair`, `recover`). Otherwise exit 0 when the database is healthy afterwards, 1 when
    something remains.

    \b
    Examples:
      hermes-state maintain
      hermes-state maintain --json --no-progress   # from cron
    """
    with step_bar("maintain") as progress:
        from hermes_state_tools.maintenance.maintain import maintain_file
        doc = maintain_file(settings().db, progress).as_dict()
    refusal = f"{doc['path']}: {DAMAGED_REFUSAL}" if doc["damaged"] else None
    emit(doc if refusal is None else {**doc, "error": refusal}, _human_maintain)  # a failure's JSON names it
    if refusal is not None:
        fail(refusal, EXIT_DAMAGED, json_document=False)
    _exit_unless(doc["ok"])


def stdin_is_terminal() -> bool:
    """Whether a person can answer a confirmation prompt."""
    return sys.stdin.isatty()


def _confirm(plan: PrunePlan) -> None:
    """Asks on a terminal; without one, only --yes (which asks nothing) lets a prune delete."""
    if not stdin_is_terminal():
        raise ConfirmationRequired("prune deletes sessions: without a terminal to confirm on, pass --yes "
                                   "(or --dry-run to see what it would delete)")
    if not plan.session_ids:
        return
    shown = ", ".join(plan.session_ids[:_SHOWN_IDS]) + (", ..." if len(plan.session_ids) > _SHOWN_IDS else "")
    click.echo(f"would delete: {shown}", err=True)
    days = "1 day" if plan.older_than_days == 1 else f"{plan.older_than_days:g} days"
    question = (f"Delete {plural(len(plan.session_ids), 'ended session')} started more than {days} "
                f"ago and their {plural(plan.messages, 'message')}? Their children are kept.")
    if not click.confirm(question, default=False, err=True):
        fail("prune cancelled; nothing was deleted", EXIT_PROBLEMS)


def _human_prune(doc: dict[str, Any]) -> str:
    verb = "would delete" if doc["dry_run"] else "deleted"
    said = f"{verb} {plural(doc['sessions_deleted'], 'session')} and {plural(doc['messages_deleted'], 'message')}"
    kept = doc["kept_back"]
    held = [f"kept back {plural(len(kept), 'session')} the archive does not hold as they are here:"] if kept else []
    held += [f"  {k['session_id']}: {k['reason']}" for k in kept[:_SHOWN_IDS]]
    held += [f"  ... and {len(kept) - _SHOWN_IDS} more"] if len(kept) > _SHOWN_IDS else []
    return "\n".join([said, *held, *(f"note: {notice}" for notice in doc["notices"])])


@main.command()
@click.option("--older-than", "older_than", type=click.FloatRange(min=0), required=True, metavar="DAYS",
              help="Only sessions started more than DAYS days ago (and ended).")
@click.option("--source", metavar="NAME", help="Only sessions of this source.")
@click.option("--dry-run", is_flag=True, help="Report what would be deleted; delete nothing.")
@click.option("--yes", is_flag=True, help="Do not ask (needed when there is no terminal).")
@click.option("--archived", metavar="URL", help="Only sessions this archive holds identically (archive, then prune).")
@click.option("--host", metavar="NAME", help="With --archived: the host they were pushed as (default: hostname).")
@common_options()
def prune(older_than: float, source: str | None, dry_run: bool, yes: bool, archived: str | None,
          host: str | None, as_json: bool) -> None:
    """Delete old ended sessions with their messages.

    Sessions that started more than DAYS days ago and have ended go, with their messages; their
    children are kept (orphaned), except, from schema 16, a subagent's sessions marked as theirs,
    which go with them as Hermes deletes them. Open sessions are never deleted. Deletes in short transactions
    of whole sessions (about 0.2 s of write lock each), so a running Hermes' appends go on between
    them and a killed prune leaves each session whole or gone.

    With --archived URL, only sessions the archive holds identically (the row and every message,
    as `archive push` left them) are deleted; the others are kept back and listed with the reason.

    Asks for confirmation on a terminal; scripts pass --yes (without a terminal and without
    --yes it refuses with exit 2).

    \b
    Examples:
      hermes-state prune --older-than 90 --dry-run
      hermes-state prune --older-than 30 --source telegram --yes --json
      hermes-state prune --older-than 30 --archived postgresql://hermes@archive.lan/hermes --yes
    """
    from hermes_state_tools.maintenance.prune import prune_file
    doc = prune_file(settings().db, older_than, source, dry_run=dry_run, confirm=None if yes else _confirm,
                     archived=archived, host=host).as_dict()
    emit(doc, _human_prune)
