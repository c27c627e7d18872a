"""`hermes-state`: a thin click layer over the library; each command parses, calls once, renders."""

from __future__ import annotations

from pathlib import Path

import click

from hermes_state_tools import __version__
from hermes_state_tools.cli.base import DB_HELP, Settings, ToolGroup, announce_lock_wait
from hermes_state_tools.core.connection import on_lock_wait
from hermes_state_tools.core.paths import default_db_path
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.store.opening import on_newer_schema

_EPILOG = """\b
Database: --db FILE (before or after the command), else $HERMES_HOME/state.db,
else ~/.hermes/state.db.

\b
Exit codes:
  0   success; for check/repair/maintain: healthy
  1   problems found or left (listed in the report), or records not imported;
      for search: nothing matched (as grep)
  2   usage error, a missing file, or a file that is not a Hermes database
  3   the database has a newer schema than this tool (nothing was changed)
  65  the database file is damaged (check says whether repair or recover fixes it)
  69  the archive's PostgreSQL server cannot be reached or refused the login
  70  internal error, a bug (--debug shows the traceback)
  74  I/O error: disk full, quota, read/write failure
  75  the database stayed locked by another writer (try again later)

\b
More: hermes-state help COMMAND, hermes-state COMMAND --help.
Shell completion (bash; zsh_source, fish_source for those shells):
  eval "$(_HERMES_STATE_COMPLETE=bash_source hermes-state)"
"""


@click.group(cls=ToolGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EPILOG)
@click.option("--db", "db", type=click.Path(path_type=Path, dir_okay=False), help=DB_HELP)
@click.option("--debug", is_flag=True, envvar="HERMES_STATE_DEBUG",
              help="On an internal error (exit 70), print the traceback (also HERMES_STATE_DEBUG=1).")
@click.version_option(__version__, "--version", prog_name="hermes-state",
                      message=f"%(prog)s %(version)s (schema version {SCHEMA_VERSION})")
@click.pass_context
def main(ctx: click.Context, db: Path | None, debug: bool) -> None:
    """Maintain a Hermes Agent state.db: import legacy transcripts, upgrade, check, repair, export.

    \b
    Examples:
      hermes-state status
      hermes-state --db ./state.db import-jsonl ~/.hermes
      hermes-state upgrade --json
    """
    ctx.obj = Settings(db.expanduser() if db is not None else default_db_path(), debug)
    said: list[bool] = []

    def waiting() -> None:
        if not said:  # once per command, however many writes wait
            said.append(True)
            announce_lock_wait(ctx.obj.db)

    on_lock_wait(waiting)
    on_newer_schema(ctx.obj.newer_schema_read)


# Each module adds its commands to `main` when imported; a command's module is imported when it runs.
COMMAND_MODULES = {
    "import-jsonl": "importing", "merge": "importing", "export": "importing",
    "check": "maintenance", "repair": "maintenance", "rebuild-fts": "maintenance", "vacuum": "maintenance",
    "backup": "maintenance", "maintain": "maintenance", "prune": "maintenance",
    "search": "search", "sessions": "sessions", "status": "status", "upgrade": "upgrade",
    "browse": "browse", "help": "guide", "schedule": "guide", "recover": "recovery", "restore": "recovery",
    "archive": "archive",
}
main.lazy = {name: f"hermes_state_tools.cli.{module}" for name, module in COMMAND_MODULES.items()}
