"""How help reads: no option name broken at its hyphen, no command summary cut with an ellipsis."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

import click

# click wraps help with textwrap, which breaks words at hyphens: `--no-backup` became `--no-` and
# `backup` on two lines. A non-breaking hyphen (same width) is not a break point; it goes back to
# a plain hyphen when the help text is complete.
_NB_HYPHEN = "\u2011"


def _keep(text: str) -> str:
    return text.replace("-", _NB_HYPHEN)


class HelpFormatter(click.HelpFormatter):
    """click's formatter, wrapping only at spaces."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(prog, _keep(args), prefix)

    def write_text(self, text: str) -> None:
        super().write_text(_keep(text))

    def write_dl(self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
        super().write_dl([(first, _keep(second)) for first, second in rows], col_max, col_spacing)

    def getvalue(self) -> str:
        return super().getvalue().replace(_NB_HYPHEN, "-")


class Context(click.Context):
    formatter_class = HelpFormatter


class Command(click.Command):
    context_class = Context


def command_rows(group: click.Group, ctx: click.Context) -> Iterable[tuple[str, str]]:
    """(name, summary) of each visible subcommand; the summary is the docstring's whole first
    sentence (click cuts it to the terminal width with '...'; here the help wraps it instead)."""
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        yield name, command.get_short_help_str(limit=10_000)


def format_commands(group: click.Group, ctx: click.Context, formatter: click.HelpFormatter) -> None:
    rows = list(command_rows(group, ctx))
    if rows:
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def command_help(root: click.Group, ctx: click.Context, words: Sequence[str]) -> str:
    """The --help text of `hermes-state WORDS...` (`hermes-state help sessions show`)."""
    command: Any = root
    parent = ctx.find_root()
    path = [parent.info_name or "hermes-state"]
    current = parent
    for word in words:
        if not isinstance(command, click.Group):
            raise click.UsageError(f"{' '.join(path[1:])} has no subcommands")
        sub = command.get_command(current, word)
        if sub is None:
            names = command.list_commands(current)
            close = difflib.get_close_matches(word, names)
            hint = f"did you mean {' or '.join(map(repr, close))}?" if close else f"commands: {', '.join(names)}"
            raise click.UsageError(f"no command {' '.join([*path[1:], word])!r} ({hint})")
        path.append(word)
        current = sub.make_context(word, [], parent=current, resilient_parsing=True)
        command = sub
    text: str = command.get_help(current)
    return text
