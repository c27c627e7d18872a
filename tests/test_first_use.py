"""What a new user trips over on a first run: each case as they met it, through the CLI in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_state_tools import SessionDB
from hermes_state_tools.cli import main


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("s1", "cli")
        db.append_message("s1", "user", "disk usage is high")
    return path


@pytest.mark.parametrize(("typed", "meant"), [("stauts", "status"), ("import-json", "import-jsonl"),
                                              ("sessions lst", "list")])
def test_a_mistyped_command_gets_a_did_you_mean(store: Path, typed: str, meant: str) -> None:
    result = cli("--db", store, *typed.split())
    assert result.exit_code == 2 and f"Did you mean '{meant}'?" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_a_command_like_nothing_known_gets_no_guess(store: Path) -> None:
    result = cli("--db", store, "frobnicate")
    assert result.exit_code == 2 and result.stderr == "hermes-state: No such command 'frobnicate'.\n"
