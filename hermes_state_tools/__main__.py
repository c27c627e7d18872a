"""`python -m hermes_state_tools`, and the `hermes-state` command (`run`)."""

import sys


def run() -> None:
    """The command line. A command line that names `import-jsonl` starts the import's reader process
    first (ingest/reader/launch.py:start_early), so that its interpreter starts while this one loads click
    and the commands. Ctrl-C while they load (the first half second) ends it with one line, as later."""
    try:
        from hermes_state_tools.ingest.reader.launch import start_early

        start_early(sys.argv[1:])
        from hermes_state_tools.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("\nhermes-state: interrupted before the command started; nothing was done\n")  # past the ^C
        sys.exit(1)
    main(prog_name="hermes-state")


if __name__ == "__main__":
    run()
