"""`python -m hermes_state_tools`, and the `hermes-state` command (`run`)."""

import sys

from hermes_state_tools.ingest.reader.launch import start_early


def run() -> None:
    """The command line. A command line that names `import-jsonl` starts the import's reader process
    first (ingest/reader/launch.py:start_early), so that its interpreter starts while this one loads click
    and the commands."""
    start_early(sys.argv[1:])
    from hermes_state_tools.cli import main

    main(prog_name="hermes-state")


if __name__ == "__main__":
    run()
