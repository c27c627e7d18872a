"""`hermes-state help COMMAND` and `hermes-state schedule`: reading about the tool, and running it on a timer."""

from __future__ import annotations

import getpass
import shlex
import shutil
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
    """This program as cron and systemd must call it: an absolute path, never a bare name."""
    found = shutil.which("hermes-state")
    if found:
        return str(Path(found).resolve())
    return f"{Path(sys.executable).resolve()} -m hermes_state_tools"


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
