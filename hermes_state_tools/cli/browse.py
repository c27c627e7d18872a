"""`hermes-state browse`: Datasette on the database, read-only, on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from hermes_state_tools.cli import main
from hermes_state_tools.cli.base import EXIT_USAGE, common_options, fail, settings
from hermes_state_tools.core.surrogates import printable
from hermes_state_tools.views.browse import (
    DEFAULT_PORT,
    datasette_command,
    datasette_installed,
    file_metadata,
)


@main.command()
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(1, 65535),
              help="Port on 127.0.0.1 to serve on.")
@click.option("--open", "open_browser", is_flag=True, help="Open a web browser on the page.")
@click.option("--immutable", "force_immutable", is_flag=True,
              help="Open the file immutable even in WAL mode: only for a copy nothing writes to.")
@click.option("--print-metadata", is_flag=True, help="Print the Datasette metadata (JSON) and exit.")
@common_options(json_output=False)
def browse(port: int, open_browser: bool, force_immutable: bool, print_metadata: bool) -> None:
    """Browse the database in Datasette (read-only, 127.0.0.1): search box, facets, canned queries.

    Needs the optional extra: pip install 'hermes-state-tools[browse]'. The file is opened
    read-only (immutable for a copy not in WAL mode, such as a backup; Hermes's live
    WAL file is read as it changes); the `messages` table gets its search box
    (the v6 FTS table is named in the metadata), facets by role, source and model, and canned
    queries: sessions with preview, lineage of a session, tokens by model, and a substring search
    that finds CJK text anywhere. Ctrl-C stops the server.

    \b
    Examples:
      hermes-state browse
      hermes-state --db backup.db browse --port 8002 --open
      hermes-state browse --print-metadata > metadata.json   # for: datasette state.db -m metadata.json
    """
    path = settings().db
    if print_metadata:
        click.echo(json.dumps(printable(file_metadata(path)), indent=2, ensure_ascii=False))
        return
    if not datasette_installed():
        fail("browse needs Datasette: pip install 'hermes-state-tools[browse]' (or pip install "
             "'datasette>=0.65,<1.0' into the same environment)", EXIT_USAGE)
    with tempfile.TemporaryDirectory(prefix="hermes-state-browse-") as folder:
        meta_file = Path(folder) / "metadata.json"
        meta_file.write_text(json.dumps(file_metadata(path)), "utf-8")
        command = datasette_command(path, meta_file, port, ["-o"] if open_browser else [], force_immutable)
        click.echo(f"serving {path} read-only on http://127.0.0.1:{port}/ (Ctrl-C stops)", err=True)
        # A stop by SIGTERM/SIGHUP (systemctl stop, a closed terminal) ends like Ctrl-C: the server is
        # stopped and this folder removed (killed outright, the `with` never cleaned it up).
        stop = signal.signal(signal.SIGTERM, _stop), signal.signal(signal.SIGHUP, _stop)
        try:
            code = subprocess.call(command)
        except KeyboardInterrupt:
            code = 0
        finally:
            signal.signal(signal.SIGTERM, stop[0])
            signal.signal(signal.SIGHUP, stop[1])
    sys.exit(code)


def _stop(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
