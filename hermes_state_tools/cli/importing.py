"""`hermes-state import-jsonl` and `hermes-state export`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import click

from hermes_state_tools.cli import main
from hermes_state_tools.cli.base import (
    EXIT_PROBLEMS,
    common_options,
    emit,
    existing_folder,
    plural,
    settings,
    show_progress,
)
from hermes_state_tools.cli.progress import ExportBar, ImportBars
from hermes_state_tools.core.connection import is_io_error
from hermes_state_tools.core.layouts import known_versions
from hermes_state_tools.core.problems import group_problems
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.errors import StorageIOError
from hermes_state_tools.ingest.reader.launch import finding_reader, stop_early, stop_reader
from hermes_state_tools.store.files import remove_stale_temps, require_replaceable, temp_beside
from hermes_state_tools.views.export import FORMATS, export_file

if TYPE_CHECKING:
    from hermes_state_tools.ingest.stats import ImportStats


def _zone(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise click.BadParameter(f"unknown time zone {value!r}") from exc


# A new file in schema 6's layout (the default) is damaged by the first start of a Hermes of schema 23 or
# later (docs/layouts.md, scripts/check_late_hermes_hazard.py): said where the file is made.
_V6_FOR_LATER_HERMES = ("  in schema 6's layout: a Hermes of schema 23 or later damages its search index on first "
                        "open; for one, make the file with --schema 17")


def _human_import(doc: dict[str, Any], made_at_v6: bool = False) -> str:
    verb = "would import" if doc["dry_run"] else "imported"
    lines = [
        f"{verb} {plural(doc['messages_imported'], 'message')}: {plural(doc['sessions_created'], 'session')} "
        f"created, {doc['sessions_updated']:,} updated; {doc['messages_skipped_duplicate']:,} already present "
        f"(in the database or in another copy of the same session); {plural(doc['files_read'], 'file')} read",
    ]
    if doc.get("messages_enriched"):
        lines.append(f"{plural(doc['messages_enriched'], 'stored message')} gained fields the files know "
                     "(NULL columns filled, extra data added; nothing overwritten)")
    if doc.get("database_created"):
        lines.append(f"{'would create' if doc['dry_run'] else 'created'} a new database: {doc['database_created']}")
        if made_at_v6:
            lines.append(_V6_FOR_LATER_HERMES)
    lines += _dry_run_lines(doc)
    if doc.get("backup"):
        lines.append(f"the database was upgraded first; backup: {doc['backup']}")
    lines += _problem_lines(doc)
    return "\n".join(lines)


_NAMES_SHOWN = 20


def _dry_run_lines(doc: dict[str, Any]) -> list[str]:
    """A dry run names the sessions it would create and update, and what the real run would do first."""
    if not doc["dry_run"]:
        return []
    lines = []
    for key, verb in (("would_create", "create"), ("would_update", "update")):
        ids = doc.get(key) or []
        if ids:
            shown = ", ".join(ids[:_NAMES_SHOWN]) + (f", ... ({len(ids):,} in all; --json lists every one)"
                                                      if len(ids) > _NAMES_SHOWN else "")
            lines.append(f"would {verb}: {shown}")
    upgrade = doc.get("would_upgrade")
    if upgrade:
        old = upgrade["from"] if upgrade["from"] is not None else "unknown"
        lines.append(f"the real run would take a backup first ({upgrade['backup_first']}), then upgrade the "
                     f"schema from version {old} to {upgrade['to']}")
    return lines


def _problem_lines(doc: dict[str, Any]) -> list[str]:
    """Problems by kind, failures first: a count, what the kind means and a few examples each."""
    if not doc["problems"]:
        return []
    failures = doc["records_not_stored"]
    notices = len(doc["problems"]) - failures
    lines = [(f"{plural(failures, 'record')} could not be stored (exit code 1)" if failures
              else "no record was lost") + f"; {plural(notices, 'notice')}:"]
    for group in group_problems(doc["problems"]):
        label = "FAILED" if group["failure"] else "notice"
        lines.append(f"  {label} {group['kind']} x{group['count']:,}: {group['meaning']}")
        lines += [f"      {p['file']}:{p['line'] or '-'}: {p['detail']}" for p in group["examples"]]
        if group["count"] > len(group["examples"]):
            lines.append(f"      ... and {group['count'] - len(group['examples']):,} more")
    lines.append("the full list, every entry with its file and line: run again with --json")
    return lines


@main.command("import-jsonl")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Read everything and report what would be written; write nothing.")
@click.option("--tz", "tz", metavar="ZONE", callback=_zone,
              help="Time zone of naive timestamps in the files (default: this machine's local time).")
@click.option("--source", metavar="NAME", help="Source for sessions whose files name none (default: unknown/cli).")
@click.option("--schema", "schema", type=click.Choice([str(v) for v in known_versions()]), metavar="N",
              help="Create a new database in the layout of Hermes schema N (6-17), exactly as that Hermes "
                   "creates it (default 6); an existing database keeps its own.")
@common_options()
def import_jsonl(paths: tuple[Path, ...], dry_run: bool, tz: Any, source: str | None, schema: str | None,
                 as_json: bool) -> None:
    """Import legacy Hermes transcripts (sessions/*.jsonl, snapshots, /save files, logs) into state.db.

    PATH may be a HERMES_HOME (its sessions/ and logs/ are read, and copies kept beside them such
    as sessions.bak/), a sessions folder, or single files. Re-running imports nothing twice;
    a session already in the database gains only the messages it lacks. Exit 1 when some record
    could not be stored (all listed in the report).

    \b
    Examples:
      hermes-state import-jsonl ~/.hermes
      hermes-state --db ./state.db import-jsonl ~/.hermes --dry-run
      hermes-state import-jsonl old/session_20260301_101010_abcdef.json --tz Europe/Lisbon --json
      hermes-state --db new.db import-jsonl ~/.hermes --schema 17
    """
    # A folder may hold thousands of files, read in a reader process: started with the command
    # (launch.start_early) or now, and asked to find them, while the import's own modules load.
    reader = None
    if not dry_run and any(path.is_dir() for path in paths):
        reader = finding_reader(settings().db, paths, tz, source)
    else:
        stop_early()
    try:
        from hermes_state_tools.ingest import import_paths
    except BaseException:  # (Ctrl-C while the modules load) import_paths stops the reader once it has it
        if reader is not None:
            stop_reader(reader.process, given_work=True)
        raise

    _report_import(lambda bars: import_paths(settings().db, list(paths), tz=tz, source=source, dry_run=dry_run,
                                             progress=bars, reader=reader,
                                             schema=int(schema) if schema else None),
                   made_at_v6=schema is None or int(schema) == SCHEMA_VERSION)


def _report_import(run: Callable[[ImportBars | None], ImportStats], made_at_v6: bool = False) -> None:
    """Run an import (or merge) with its progress bars, print its report, exit 1 when records were lost.
    `made_at_v6`: a database this run makes is in schema 6's layout."""
    bars = ImportBars() if show_progress() else None
    try:
        stats = run(bars)
    finally:
        if bars:
            bars.close()
    emit(stats.as_dict(), lambda doc: _human_import(doc, made_at_v6))
    if stats.failed:
        sys.exit(EXIT_PROBLEMS)


@main.command("merge")
@click.argument("other", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Read everything and report what would be written; write nothing.")
@common_options()
def merge(other: Path, dry_run: bool, as_json: bool) -> None:
    """Bring every session and message of another state.db (another machine, a backup) into this one.

    Messages are aligned as import-jsonl aligns copies: nothing doubles and a second run adds
    nothing. OTHER is only read (schema 1-6, or a newer one through its v6 columns). The database
    (--db) must exist: only import-jsonl creates one. The report is import-jsonl's. Exit 1 when some
    record could not be stored.

    \b
    Examples:
      hermes-state merge ~/laptop-state.db --dry-run
      hermes-state --db ./state.db merge backups/state.db.bak-20260301 --json
    """
    # Imported here: `export`, in this module too, should not load the import pipeline.
    from hermes_state_tools.ingest.merge_db import merge_database

    _report_import(lambda bars: merge_database(settings().db, other, dry_run=dry_run, progress=bars, create=False))


@main.command("export")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), callback=existing_folder,
              help="Write here instead of stdout (its folder must exist; - is stdout). Never over a database.")
@click.option("--session", "session", metavar="ID", help="Only this session (exact id or unique prefix).")
@click.option("--source", metavar="NAME", help="Only sessions of this source.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="jsonl", show_default=True,
              help="jsonl: one session a line, re-importable; json: one array; md: a transcript to read.")
@common_options(json_output=False)
def export(output: Path | None, session: str | None, source: str | None, fmt: str) -> None:
    """Stream sessions with their messages: JSONL (one session a line, re-importable), JSON, or Markdown.

    Writes data, not a report: there is no --json (use --format json). A reader that stops early
    (`| head`) ends it quietly.

    \b
    Examples:
      hermes-state export -o all.jsonl
      hermes-state export --session 20260310_1842 --format md
      hermes-state export --source telegram --format json -o telegram.json
    """
    bar = ExportBar() if show_progress() else None
    hooks = {"on_start": bar.start, "on_session": bar.advance} if bar else {}
    try:
        write_export(output, lambda out: export_file(settings().db, out, session, source, fmt, **hooks))
    finally:
        if bar:
            bar.close()


def write_export(output: Path | None, write: Any) -> None:
    """To stdout, into a pipe or device named by -o (written as it is: it cannot be replaced), or
    to a regular file replaced whole. Never over a database (the one exported included)."""
    if output is None or str(output) == "-":
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    require_replaceable(output)
    try:
        if output.exists() and not output.is_file():
            with output.open("wb") as out:
                write(out)
            return
        _write_atomically(output, write)
    except OSError as exc:  # the export's file, not the database, is what failed (a full disk)
        if not is_io_error(exc):
            raise
        raise StorageIOError(f"{output}: {exc.strerror or exc}") from exc


def _write_atomically(output: Path, write: Any) -> None:
    """Write to a temporary file beside `output`, then rename: a crash never leaves half an export
    (a killed one leaves its temporary file, which the next export into that folder removes)."""
    remove_stale_temps(output.parent)
    temporary = temp_beside(output, "export")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.replace(temporary, output)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
