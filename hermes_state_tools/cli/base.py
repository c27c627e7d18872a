"""What every command shares: options, output, progress bars, and the one error-to-exit-code map."""

from __future__ import annotations

import difflib
import importlib
import os
import signal
import sqlite3
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn, TypeVar

import click
import orjson

from hermes_state_tools.cli import helptext
from hermes_state_tools.core import jsonutil
from hermes_state_tools.core.connection import (
    SQLITE_AUTH,
    SQLITE_CANTOPEN,
    SQLITE_NOTADB,
    SQLITE_PERM,
    SQLITE_READONLY,
    is_corrupt,
    is_io_error,
    is_lock_error,
    is_undecodable,
    result_code,
)
from hermes_state_tools.core.progress import Steps
from hermes_state_tools.core.schema import NEWEST_KNOWN
from hermes_state_tools.core.surrogates import printable
from hermes_state_tools.core.times import local_time
from hermes_state_tools.core.words import plural as plural  # re-exported: the commands use it from here
from hermes_state_tools.errors import (
    DAMAGED_REFUSAL,
    ArchiveDriverMissingError,
    ArchiveError,
    ArchiveHostMismatchError,
    ArchiveTooNewError,
    ArchiveUnreachableError,
    ArchiveURLError,
    ConfirmationRequired,
    DamagedDatabaseError,
    DatabaseInUseError,
    DatabaseLockedError,
    DestinationExistsError,
    DestinationFullError,
    DestinationUnwritableError,
    HermesStateError,
    LayoutMismatchError,
    NewStoreInterrupted,
    NotAHermesDatabaseError,
    SameDatabaseError,
    SchemaTooNewError,
    SessionIdError,
    StorageIOError,
    UnknownHostError,
    UnknownSourceError,
    UnsafeDestinationError,
)

PathOrText = TypeVar("PathOrText", str, Path)

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_TOO_NEW, EXIT_LOCKED = 0, 1, 2, 3, 75
EXIT_DAMAGED, EXIT_BUG, EXIT_IO = 65, 70, 74  # sysexits.h: EX_DATAERR, EX_SOFTWARE, EX_IOERR
EXIT_UNAVAILABLE = 69  # sysexits.h EX_UNAVAILABLE: the archive's server cannot be reached

_EXIT_CODES: list[tuple[type[BaseException], int]] = [
    (SchemaTooNewError, EXIT_TOO_NEW),
    (ArchiveTooNewError, EXIT_TOO_NEW),
    (ArchiveUnreachableError, EXIT_UNAVAILABLE),
    (ArchiveURLError, EXIT_USAGE),
    (ArchiveDriverMissingError, EXIT_USAGE),
    (UnknownHostError, EXIT_USAGE),
    (ArchiveHostMismatchError, EXIT_USAGE),
    (DatabaseLockedError, EXIT_LOCKED),
    (DatabaseInUseError, EXIT_LOCKED),
    (DamagedDatabaseError, EXIT_DAMAGED),
    (StorageIOError, EXIT_IO),
    (NotAHermesDatabaseError, EXIT_USAGE),
    (SessionIdError, EXIT_USAGE),
    (ConfirmationRequired, EXIT_USAGE),
    (DestinationExistsError, EXIT_USAGE),
    (DestinationUnwritableError, EXIT_USAGE),
    (UnsafeDestinationError, EXIT_USAGE),
    (SameDatabaseError, EXIT_USAGE),
    (UnknownSourceError, EXIT_USAGE),
    (LayoutMismatchError, EXIT_USAGE),
    (HermesStateError, EXIT_PROBLEMS),
]

# SQLite's primary result codes of a file that cannot be opened as a database (a usage error).
_SQLITE_NOT_A_DATABASE = {SQLITE_NOTADB, SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH}


def exit_code_for(exc: BaseException) -> int:
    """The contract's exit code for an exception: the expected ones by kind, anything else is a bug (70)."""
    for kind, code in _EXIT_CODES:
        if isinstance(exc, kind):
            return code
    if is_io_error(exc):
        return EXIT_IO
    if isinstance(exc, sqlite3.Error):
        if is_corrupt(exc) or is_undecodable(exc):
            return EXIT_DAMAGED
        if is_lock_error(exc):
            return EXIT_LOCKED
        return EXIT_USAGE if result_code(exc) in _SQLITE_NOT_A_DATABASE else EXIT_BUG
    return EXIT_USAGE if isinstance(exc, OSError) else EXIT_BUG


def debug_enabled() -> bool:
    """--debug, or HERMES_STATE_DEBUG=1: show the traceback of an unexpected error."""
    ctx = click.get_current_context(silent=True)
    state = ctx.find_object(Settings) if ctx else None
    return bool(state and state.debug) or os.environ.get("HERMES_STATE_DEBUG", "") not in ("", "0")


def error_line(exc: BaseException, db_path: Path | None) -> str:
    """One line naming the file and the cause."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, sqlite3.Error) and not isinstance(exc, HermesStateError) and exit_code_for(exc) == EXIT_DAMAGED:
        text = f"{DAMAGED_REFUSAL} ({text})"  # SQLite's own words ("vtable constructor failed") say less
    own_file = (DestinationExistsError, DestinationUnwritableError, UnsafeDestinationError, DestinationFullError,
                ArchiveError)
    names_its_file = isinstance(exc, own_file)  # not the database's (an archive error names its server)
    if db_path is not None and str(db_path) not in text and not names_its_file:
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
        """A read command reads a file of a layout this tool does not know: one warning line, and the JSON
        says so."""
        if not self.schema_newer:
            say(f"warning: {path}: schema version {version} is a layout this tool does not know (it knows "
                f"6 to {NEWEST_KNOWN}); reading the columns those layouts have only, nothing is written")
        self.schema_newer = True


def settings() -> Settings:
    state = click.get_current_context().find_object(Settings)
    assert state is not None, "a command runs under the main group, which sets Settings"
    return state


def fail(message: str, code: int = EXIT_USAGE, json_document: bool = True) -> NoReturn:
    """Stop with one line on stderr (and the JSON failure document unless a report was printed)."""
    emit_failure(message, json_document)
    sys.exit(code)


def emit_failure(message: str, json_document: bool = True) -> None:
    """The error line on stderr; with --json also `{"ok": false, "error": ...}` on stdout."""
    ctx = click.get_current_context(silent=True)
    state = ctx.find_object(Settings) if ctx else None
    say(message)
    if json_document and state is not None and state.as_json:
        _failure_document(message)


def say(message: str) -> None:
    """One line on stderr; a name's undecodable bytes are spelled \\xNN there, as in reports."""
    click.echo(f"hermes-state: {printable(message)}", err=True)


def _failure_document(message: str) -> None:
    click.echo(orjson.dumps({"ok": False, "error": printable(message)}).decode())


_OPTION_HINTS = {
    "--json": "options such as --json go after the command: hermes-state --db FILE status --json",
    "--no-progress": "options such as --no-progress go after the command",
    "extra argument": "quote an argument that contains spaces, e.g. hermes-state search \"disk usage\"",
}


def _missing_json(exc: click.UsageError) -> str | None:
    """`export --json`: the option is after the command already; the command simply has none."""
    if not (isinstance(exc, click.NoSuchOption) and exc.option_name == "--json" and exc.ctx is not None
            and exc.ctx.parent is not None and not isinstance(exc.ctx.command, click.Group)):
        return None
    name = exc.ctx.command_path.split(" ", 1)[-1]
    if name == "export":
        return "export has no --json: it writes data, not a report (use --format json for a JSON export)"
    return f"{name} has no --json option"


def usage_line(exc: click.UsageError) -> str:
    """A click usage error as one line, with a hint for the mistakes newcomers make."""
    special = _missing_json(exc)
    if special is not None:
        return special
    message = " ".join(exc.format_message().split())
    subcommand = exc.ctx is not None and exc.ctx.parent is not None
    if subcommand:  # name the subcommand, not the program again
        message = f"{exc.ctx.command_path.split(' ', 1)[-1]}: {message}"  # type: ignore[union-attr]
    # The "goes after the command" hints are only true when the option was given before it.
    after = subcommand and not isinstance(exc.ctx.command, click.Group)  # type: ignore[union-attr]
    hints = [hint for needle, hint in _OPTION_HINTS.items()
             if needle in message and not (after and needle.startswith("--"))]
    return message + (f" ({hints[0]})" if hints else "")


def quiet_broken_pipe() -> NoReturn:
    """stdout's reader went away (`| head`): not the database's fault, so stop quietly with exit 0."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush must not fail again
    except (OSError, ValueError):
        pass
    sys.exit(EXIT_OK)


# True of a write into an existing file: what was committed stays whole. A first import built aside
# says instead that nothing of it was kept (errors.NewStoreInterrupted).
INTERRUPTED = "interrupted; nothing was left half-written, re-run to finish"


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def stops_as_interrupts() -> Iterator[None]:
    """SIGTERM (`timeout`, `systemctl stop`, `kill`) and SIGHUP (a closed terminal) end a command as
    Ctrl-C does: what was committed stays whole, and the cleanups that remove a private copy of the
    database or an import's staging files run, which Python's default for these signals skips. A
    signal already ignored (`nohup`) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in _STOP_SIGNALS}
    for sig, handler in before.items():
        if handler is signal.SIG_DFL:
            signal.signal(sig, _interrupt)
    try:
        yield
    finally:
        for sig, handler in before.items():
            if handler is signal.SIG_DFL:
                signal.signal(sig, handler)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


class ToolGroup(click.Group):
    """A click group that turns library errors into one-line messages and the contract's exit codes.

    Commands load lazily: `lazy` maps a command name to the module that defines it, imported only
    when that command runs (or --help lists them all), so `check --quick` does not pay for the
    import pipeline's modules at start-up."""

    lazy: Mapping[str, str] = MappingProxyType({})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            importlib.import_module(self.lazy[cmd_name])
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[Any, ...]:
        """Like click's, but "did you mean" looks among the lazy commands too, not only loaded ones."""
        name = args[0]
        if not (ctx.resilient_parsing or name.startswith("-") or self.get_command(ctx, name)):
            close = difflib.get_close_matches(name, self.list_commands(ctx))
            if close:
                ctx.fail(f"No such command {name!r}. Did you mean {' or '.join(map(repr, close))}?")
        return super().resolve_command(ctx, args)

    context_class = helptext.Context
    command_class = helptext.Command
    group_class = type  # subgroups (`sessions`) are ToolGroups too

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        helptext.format_commands(self, ctx, formatter)

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        """Like click's, but a usage error is one line on stderr (and the JSON failure with --json)."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        with stops_as_interrupts():
            self._run_standalone(argv, prog_name, complete_var, **extra)

    def _run_standalone(self, argv: list[str], prog_name: str | None, complete_var: str | None,
                        **extra: Any) -> NoReturn:
        try:
            code = super().main(argv, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # a group without its command: click's own multi-line help on stderr, exit 2
            sys.exit(EXIT_USAGE)
        except BrokenPipeError:
            quiet_broken_pipe()
        except click.UsageError as exc:
            message = usage_line(exc)
            say(message)
            if "--json" in argv and _missing_json(exc) is None:  # stdout of `export` is data
                _failure_document(message)
            sys.exit(EXIT_USAGE)
        except click.Abort as exc:
            # Ctrl-C, or "no" at a confirmation prompt. Every write is one transaction: what was
            # committed before the interrupt stays whole, and nothing half-written does.
            interrupted = isinstance(exc.__context__, KeyboardInterrupt)
            message = INTERRUPTED if interrupted else "aborted"
            if isinstance(exc.__context__, NewStoreInterrupted):  # a first import: nothing was kept
                message = str(exc.__context__)
            say(message)
            if "--json" in argv:
                _failure_document(message)
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
        except BrokenPipeError:
            quiet_broken_pipe()
        except Exception as exc:
            code = exit_code_for(exc)
            state = ctx.find_object(Settings)
            line = error_line(exc, state.db if state else None)
            if is_undecodable(exc):
                line += ("; no Hermes writes text that is not UTF-8 (a damaged page, or another program wrote it): "
                         "`hermes-state recover DEST` copies every row, such text with U+FFFD")
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


def _set_db(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    """`hermes-state status --db x.db`: where sqlite-utils and Datasette users put it."""
    state = ctx.find_object(Settings)
    if state is not None and value is not None:
        state.db = value.expanduser()


DB_HELP = "Database file (default: $HERMES_HOME/state.db, i.e. ~/.hermes/state.db)."


def _set_progress(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    state = ctx.find_object(Settings)
    if state is not None:
        state.progress = not value
    return value


def common_options(*, json_output: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--db` and `--no-progress` on every command, `--json` on every command that reports."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn = click.option("--db", type=click.Path(path_type=Path, dir_okay=False), expose_value=False,
                          is_eager=True, callback=_set_db, help=DB_HELP)(fn)
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
        try:
            text = _json_text(document)
        except TypeError:  # a file name's undecodable bytes (lone surrogates): spelled \xNN
            text = _json_text(printable(document))
        click.echo(text)
    else:
        click.echo(printable(human(document)))


def _json_text(document: Any) -> str:
    return orjson.dumps(document, option=orjson.OPT_NON_STR_KEYS, default=jsonutil.blob_value).decode()


def show_progress() -> bool:
    """Bars only on a terminal, and never with --no-progress or --json... on stdout they would not go anyway."""
    return settings().progress and sys.stderr.isatty()


@contextmanager
def step_bar(desc: str) -> Iterator[Steps | None]:
    """A StepBar for a long single-call command on a terminal; None (no bar) otherwise."""
    if not show_progress():
        yield None
        return
    from hermes_state_tools.cli.progress import StepBar

    bar = StepBar(desc)
    try:
        yield bar
    finally:
        bar.close()


def announce_lock_wait(path: Path) -> None:
    """Said once on stderr when a write finds the database locked and starts retrying."""
    say(f"waiting for the database: another process is writing to {path} (retrying for up to about 20 seconds)")


def when(epoch: float | None) -> str:
    """A Unix time as local 'YYYY-MM-DD HH:MM:SS', '-' for none (core/times.py)."""
    return local_time(epoch) if epoch else "-"


def existing_folder(_ctx: click.Context, param: click.Parameter, value: PathOrText | None) -> PathOrText | None:
    """An output path's folder must exist: a typo in it should not create folders on a guess."""
    if value is None:
        return None
    if not Path(value).expanduser().parent.is_dir():
        raise click.BadParameter(f"folder {Path(value).expanduser().parent} does not exist (create it first)",
                                 param=param)
    return type(value)(os.path.expanduser(value))  # as text, a trailing slash (a folder) stays


