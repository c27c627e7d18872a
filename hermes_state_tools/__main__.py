"""`python -m hermes_state_tools` runs the `hermes-state` command."""

from hermes_state_tools.cli import main

main(prog_name="hermes-state")
