"""`hermes-state`: a thin click layer over the library; each command parses, calls once, renders."""

from __future__ import annotations

from pathlib import Path

import click

from hermes_state_tools import __version__
from hermes_state_tools.cli.base import Settings, ToolGroup
from hermes_state_tools.core.paths import default_db_path
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.store.opening import on_newer_schema


@click.group(cls=ToolGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "db", type=click.Path(path_type=Path, dir_okay=False),
              help="Database file (default: $HERMES_HOME/state.db, i.e. ~/.hermes/state.db).")
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
      hermes-state --db ./state.db import-jsonl ~/.hermes/sessions
      hermes-state upgrade --json
    """
    ctx.obj = Settings(db.expanduser() if db is not None else default_db_path(), debug)
    on_newer_schema(ctx.obj.newer_schema_read)


def _register() -> None:
    # Each module adds its commands to `main`.
    from hermes_state_tools.cli import importing, maintenance, recovery, search, sessions, status, upgrade  # noqa: F401


_register()
