"""`hermes-state archive push|search|status|export`: the fleet archive on PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import click

from hermes_state_tools.cli import main
from hermes_state_tools.cli.base import common_options, emit, existing_folder, plural, settings
from hermes_state_tools.core.times import local_time

_URL_HELP = "URL: postgresql://USER@HOST:PORT/DB (or key=value; a service=NAME); default $HERMES_ARCHIVE_URL."
_DATE = click.DateTime(["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"])


@main.group()
@common_options(json_output=False)
def archive() -> None:
    """The fleet archive on PostgreSQL: hosts push their state.db, one archive searches them all.

    Needs psycopg: pip install 'hermes-state-tools[archive]'. The URL is the first argument or
    $HERMES_ARCHIVE_URL; credentials may also come from PG* variables, ~/.pgpass or a service file,
    and a password is never printed. Exit 69 when the server cannot be reached or refuses the login.

    \b
    Examples:
      hermes-state archive push postgresql://hermes@archive.lan/hermes
      HERMES_ARCHIVE_URL=postgresql://hermes@archive.lan/hermes hermes-state archive search "disk full"
      hermes-state archive status --json
    """


def _human_push(doc: dict[str, Any]) -> str:
    return (f"pushed to {doc['archive']} as host {doc['host']}: {plural(doc['sessions_pushed'], 'session')} "
            f"and {plural(doc['messages_pushed'], 'message')} written, "
            f"{plural(doc['messages_skipped_present'], 'message')} already there")


@archive.command()
@click.argument("url", required=False, metavar="[URL]")
@click.option("--host", metavar="NAME", help="The name this machine's sessions are filed under (default: hostname).")
@common_options()
def push(url: str | None, host: str | None, as_json: bool) -> None:
    """Push this database (only read) into the archive: new messages, changed sessions; a re-run adds nothing.

    Reads in one read transaction (never the write lock: safe while Hermes runs). Each batch is one
    transaction: a push killed at any moment and run again leaves what one clean push leaves.
    Local deletions never delete from the archive.

    \b
    Examples:
      hermes-state archive push postgresql://hermes@archive.lan/hermes
      hermes-state --db laptop.db archive push --host laptop --json
    """
    from hermes_state_tools.archive.push import push_file
    from hermes_state_tools.store.opening import on_newer_schema
    on_newer_schema(None)  # no "reading the version 6 columns only" warning: a push reads every column
    emit(push_file(settings().db, url, host).as_dict(), _human_push)


def _human_search(doc: dict[str, Any]) -> str:
    if not doc["results"]:
        return "no matches"
    return "\n".join(f"[{r['host']}] {r['session_id']} {r['role']} {local_time(r['timestamp'])}: "
                     + " ".join(str(r["snippet"]).split()) for r in doc["results"])


def _epoch(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


@archive.command()
@click.argument("words", nargs=-1, required=True, metavar="[URL] QUERY")
@click.option("--host", metavar="NAME", help="Only this host's messages.")
@click.option("--source", metavar="NAME", help="Only sessions of this source (cli, telegram, ...).")
@click.option("--role", metavar="ROLE", help="Only messages of this role (user, assistant, tool, ...).")
@click.option("--since", type=_DATE, help="Only messages from this local date/time on (YYYY-MM-DD[ HH:MM:SS]).")
@click.option("--until", type=_DATE, help="Only messages before this local date/time.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many.")
@click.option("--all", "everything", is_flag=True, help="Rewound messages too (hidden, as Hermes hides them).")
@common_options()
def search(words: tuple[str, ...], host: str | None, source: str | None, role: str | None,
           since: datetime | None, until: datetime | None, limit: int, everything: bool, as_json: bool) -> None:
    """Search every host's messages: words, "phrases", OR, NOT, prefix*, CJK substrings; newest first.

    \b
    Examples:
      hermes-state archive search postgresql://hermes@archive.lan/hermes "nginx OR caddy"
      hermes-state archive search 'deploy*' --host server --role assistant --since 2026-01-01
      hermes-state archive search 東京 --json
    """
    from hermes_state_tools.archive.search import SearchFilters, search_archive
    if len(words) > 2:
        raise click.UsageError("give [URL] QUERY: quote a query of several words, e.g. \"disk usage\"")
    url, query = (words[0], words[1]) if len(words) == 2 else (None, words[0])
    filters = SearchFilters(host, source, role, _epoch(since), _epoch(until), everything)
    emit(search_archive(url, query, filters, limit).as_dict(), _human_search)


def _human_status(doc: dict[str, Any]) -> str:
    if doc["schema_version"] is None:
        return f"{doc['archive']}: empty (nothing was pushed yet)"
    lines = [f"{doc['archive']}: archive schema {doc['schema_version']}"
             + (" (written by a newer toolkit: read only)" if doc["schema_newer"] else "")]
    lines += [f"  {h['host']}: {plural(h['sessions'], 'session')}, {plural(h['messages'], 'message')}, "
              f"last push {h['last_push'] or '-'}" for h in doc["hosts"]]
    return "\n".join(lines)


@archive.command()
@click.argument("url", required=False, metavar="[URL]")
@common_options()
def status(url: str | None, as_json: bool) -> None:
    """Per host: sessions, messages and the last push (read only).

    \b
    Examples:
      hermes-state archive status postgresql://hermes@archive.lan/hermes
      hermes-state archive status --json
    """
    from hermes_state_tools.archive.status import archive_status
    emit(archive_status(url).as_dict(), _human_status)


@archive.command("export")
@click.argument("url", required=False, metavar="[URL]")
@click.option("--host", required=True, metavar="NAME", help="The host whose sessions to export.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), callback=existing_folder,
              help="Write here instead of stdout (replaced whole; never over a database).")
@common_options()
def export(url: str | None, host: str, output: Path | None, as_json: bool) -> None:
    """Write one host's sessions as the JSONL `import-jsonl` reads: a lost machine's store, rebuilt.

    With --json (and -o), a report of what was written is printed.

    \b
    Examples:
      hermes-state archive export --host laptop -o laptop.jsonl
      hermes-state --db new.db import-jsonl laptop.jsonl
    """
    from hermes_state_tools.archive.export import ArchiveExportReport, export_host
    from hermes_state_tools.cli.importing import write_export
    if as_json and (output is None or str(output) == "-"):
        raise click.UsageError("--json needs -o FILE: stdout carries the export itself")
    written: list[int] = []
    write_export(output, lambda out: written.append(export_host(url, host, out)))
    if output is not None and str(output) != "-":
        emit(ArchiveExportReport(host, written[0], str(output)).as_dict(),
             lambda doc: f"exported {plural(doc['sessions_exported'], 'session')} of {host} to {output}")
