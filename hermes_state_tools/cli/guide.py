"""`hermes-state help COMMAND` and `hermes-state schedule`: reading about the tool, and running it on a timer."""

from __future__ import annotations

import getpass
import shlex
import sys
from pathlib import Path

import click

from hermes_state_tools.cli import helptext, main
from hermes_state_tools.cli.base import common_options, settings
from hermes_state_tools.core.paths import hermes_home
from hermes_state_tools.maintenance.schedule import KINDS, Installation, render


@main.command("help")
@click.argument("words", nargs=-1, metavar="[COMMAND]...")
@common_options(json_output=False)
@click.pass_context
def help_(ctx: click.Context, words: tuple[str, ...]) -> None:
    """Show the help of a command (the same text as COMMAND --help).

    \b
    Examples:
      hermes-state help
      hermes-state help search
      hermes-state help sessions show
    """
    root = ctx.find_root().command
    assert isinstance(root, click.Group)
    click.echo(helptext.command_help(root, ctx, words))


def _installed_command() -> str:
    """This program as cron and systemd must call it: an absolute path, never a bare name, and the
    installation that is running (not whichever `hermes-state` PATH finds first). The interpreter is
    never resolved through its links: a venv's `bin/python` is a link to the base Python, which
    does not have this package, and only the link's own path makes Python use the venv."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "hermes-state" and script.is_file():
        return shlex.quote(str(script.absolute()))
    beside = Path(sys.executable).absolute().parent / "hermes-state"  # the venv's own script
    if beside.is_file():
        return shlex.quote(str(beside))
    return f"{shlex.quote(str(Path(sys.executable).absolute()))} -m hermes_state_tools"


@main.command()
@click.option("--print", "kind", type=click.Choice(KINDS), required=True,
              help="Which text: systemd (service and timer), systemd-service, systemd-timer, cron, logrotate.")
@common_options(json_output=False)
def schedule(kind: str) -> None:
    """Print a systemd timer, a cron line or a logrotate rule that runs `maintain` daily.

    Filled in with this installation's command, HERMES_HOME and log folder; each text says
    how to install it and what each exit code means for alerting (1 problems, 65 damaged,
    74 disk, 75 busy). The same files for a user `alice` are under contrib/ in the repository.

    \b
    Examples:
      hermes-state schedule --print systemd-service > ~/.config/systemd/user/hermes-state-maintain.service
      hermes-state schedule --print systemd-timer > ~/.config/systemd/user/hermes-state-maintain.timer
      hermes-state schedule --print cron | crontab -      # replaces your crontab: check with crontab -l first
    """
    home, command = hermes_home().resolve(), _installed_command()
    db = settings().db.resolve()
    if db != (home / "state.db"):  # --db names another file: the job must maintain that one
        command += f" --db {shlex.quote(str(db))}"
    click.echo(render(kind, Installation(command, home, home / "logs", getpass.getuser())), nl=False)
