"""What every command shares: options, output, progress bars, and the one error-to-exit-code map."""

from __future__ import annotations

import datetime as dt
import errno
import os
import sqlite3
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click
import orjson

from hermes_state_tools.core.connection import is_lock_error
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.errors import (
    ConfirmationRequired,
    DamagedDatabaseError,
    DatabaseInUseError,
    DatabaseLockedError,
    DestinationExistsError,
    HermesStateError,
    NotAHermesDatabaseError,
    SchemaTooNewError,
    SessionIdError,
    StorageIOError,
)

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_TOO_NEW, EXIT_LOCKED = 0, 1, 2, 3, 75
EXIT_DAMAGED, EXIT_BUG, EXIT_IO = 65, 70, 74  # sysexits.h: EX_DATAERR, EX_SOFTWARE, EX_IOERR

_EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (SchemaTooNewError, EXIT_TOO_NEW),
    (DatabaseLockedError, EXIT_LOCKED),
    (DatabaseInUseError, EXIT_LOCKED),
    (DamagedDatabaseError, EXIT_DAMAGED),
    (StorageIOError, EXIT_IO),
    (NotAHermesDatabaseError, EXIT_USAGE),
    (SessionIdError, EXIT_USAGE),
    (ConfirmationRequired, EXIT_USAGE),
    (DestinationExistsError, EXIT_USAGE),
    (HermesStateError, EXIT_PROBLEMS),
]

# SQLite's primary result codes, as the file or the disk under it fails.
_SQLITE_DAMAGED = {sqlite3.SQLITE_CORRUPT}
_SQLITE_NOT_A_DATABASE = {sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY,
                          sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH}
_SQLITE_IO = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR}
_OS_IO = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG}


def exit_code_for(exc: BaseException) -> int:
    """The contract's exit code for an exception: the expected ones by kind, anything else is a bug (70)."""
    for kind, code in _EXIT_CODES:
        if isinstance(exc, kind):
            return code
    if isinstance(exc, sqlite3.Error):
        primary = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if primary in _SQLITE_DAMAGED:
            return EXIT_DAMAGED
        if primary in _SQLITE_IO:
            return EXIT_IO
        if primary in _SQLITE_NOT_A_DATABASE:
            return EXIT_USAGE
        if is_lock_error(exc):
            return EXIT_LOCKED
        return EXIT_BUG
    if isinstance(exc, OSError):
        return EXIT_IO if exc.errno in _OS_IO else EXIT_USAGE
    return EXIT_BUG


def debug_enabled() -> bool:
    """--debug, or HERMES_STATE_DEBUG=1: show the traceback of an unexpected error."""
    ctx = click.get_current_context(silent=True)
    state = ctx.find_object(Settings) if ctx else None
    return bool(state and state.debug) or os.environ.get("HERMES_STATE_DEBUG", "") not in ("", "0")


def error_line(exc: BaseException, db_path: Path | None) -> str:
    """One line naming the file and the cause."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if db_path is not None and str(db_path) not in text:
        text = f"{db_path}: {text}"
    return text


class Settings:
    """Per-invocation state the group options set and the commands read."""

    def __init__(self, db: Path, debug: bool = False) -> None:
        self.db = db
        self.debug = debug
        self.as_json = False
        self.progress = True
        self.schema_newer = False

    def newer_schema_read(self, path: Path, version: int) -> None:
        """A read command reads a file of a newer schema: one warning line, and the JSON says so."""
        if not self.schema_newer:
            click.echo(f"hermes-state: warning: {path}: schema version {version} is newer than this tool "
                       f"knows ({SCHEMA_VERSION}); reading the columns of version {SCHEMA_VERSION} only, "
                       "nothing is written", err=True)
        self.schema_newer = True


def settings() -> Settings:
    return click.get_current_context().find_object(Settings)


def fail(message: str, code: int = EXIT_USAGE, json_document: bool = True) -> NoReturn:
    """Stop with one line on stderr (and the JSON failure document unless a report was printed)."""
    emit_failure(message, json_document)
    sys.exit(code)


def emit_failure(message: str, json_document: bool = True) -> None:
    """The error line on stderr; with --json also `{"ok": false, "error": ...}` on stdout."""
    ctx = click.get_current_context(silent=True)
    state = ctx.find_object(Settings) if ctx else None
    click.echo(f"hermes-state: {message}", err=True)
    if json_document and state is not None and state.as_json:
        click.echo(orjson.dumps({"ok": False, "error": message}).decode())


_OPTION_HINTS = {
    "--json": "options such as --json go after the command: hermes-state --db FILE status --json",
    "--no-progress": "options such as --no-progress go after the command",
    "extra argument": "quote an argument that contains spaces, e.g. hermes-state search \"disk usage\"",
}


def usage_line(exc: click.UsageError) -> str:
    """A click usage error as one line, with a hint for the mistakes newcomers make."""
    message = " ".join(exc.format_message().split())
    if exc.ctx is not None and exc.ctx.parent is not None:  # name the subcommand, not the program again
        message = f"{exc.ctx.command_path.split(' ', 1)[-1]}: {message}"
    hints = [hint for needle, hint in _OPTION_HINTS.items() if needle in message]
    return message + (f" ({hints[0]})" if hints else "")


INTERRUPTED = "interrupted; what was already written is kept whole, re-run to finish"


class ToolGroup(click.Group):
    """A click group that turns library errors into one-line messages and the contract's exit codes."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        """Like click's, but a usage error is one line on stderr (and the JSON failure with --json)."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        try:
            code = super().main(argv, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            message = usage_line(exc)
            click.echo(f"hermes-state: {message}", err=True)
            if "--json" in argv:
                click.echo(orjson.dumps({"ok": False, "error": message}).decode())
            sys.exit(EXIT_USAGE)
        except click.Abort as exc:
            # Ctrl-C, or "no" at a confirmation prompt. Every write is one transaction: what was
            # committed before the interrupt stays whole, and nothing half-written does.
            interrupted = isinstance(exc.__context__, KeyboardInterrupt)
            message = INTERRUPTED if interrupted else "aborted"
            click.echo(f"hermes-state: {message}", err=True)
            if "--json" in argv:
                click.echo(orjson.dumps({"ok": False, "error": message}).decode())
            sys.exit(EXIT_PROBLEMS)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        sys.exit(code if isinstance(code, int) else EXIT_OK)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            code = exit_code_for(exc)
            state = ctx.find_object(Settings)
            line = error_line(exc, state.db if state else None)
            if code == EXIT_BUG:
                line = (f"internal error, a bug in hermes-state ({type(exc).__name__}: {line}); "
                        "nothing was half-written; re-run with --debug to see the traceback")
            if debug_enabled():
                traceback.print_exception(exc, file=sys.stderr)
            emit_failure(line)
            ctx.exit(code)


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    state = ctx.find_object(Settings)
    if state is not None:
        state.as_json = value
    return value


def _set_progress(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    state = ctx.find_object(Settings)
    if state is not None:
        state.progress = not value
    return value


def common_options(*, json_output: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--no-progress` on every command, `--json` on every command that reports."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn = click.option("--no-progress", is_flag=True, expose_value=False, is_eager=True,
                          callback=_set_progress, help="Never show progress bars.")(fn)
        if json_output:
            fn = click.option("--json", "as_json", is_flag=True, is_eager=True, callback=_set_json,
                              help="Print one JSON document on stdout and nothing else.")(fn)
        return fn

    return decorate


def emit(document: dict[str, Any], human: Callable[[dict[str, Any]], str]) -> None:
    """Print the report: JSON when asked, else the human rendering."""
    if settings().schema_newer:
        document = {**document, "schema_newer": True}
    if settings().as_json:
        click.echo(orjson.dumps(document, option=orjson.OPT_NON_STR_KEYS).decode())
    else:
        click.echo(human(document))


def show_progress() -> bool:
    """Bars only on a terminal, and never with --no-progress or --json... on stdout they would not go anyway."""
    return settings().progress and sys.stderr.isatty()


def when(epoch: float | None) -> str:
    """A Unix time as local 'YYYY-MM-DD HH:MM:SS', '-' for none."""
    return dt.datetime.fromtimestamp(epoch).isoformat(sep=" ", timespec="seconds") if epoch else "-"


def plural(count: int, noun: str) -> str:
    """'1 problem', '2 problems'."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")
