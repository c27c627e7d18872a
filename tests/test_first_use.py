"""What a new user trips over on a first run: each case as they met it, through the CLI in-process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from damage import build_healthy, cli
from import_helpers import LEGACY_HOME

from hermes_state_tools import SessionDB
from hermes_state_tools.cli import main
from hermes_state_tools.ingest import run


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return build_healthy(tmp_path / "state.db")


@pytest.mark.parametrize(("typed", "meant"), [("stauts", "status"), ("import-json", "import-jsonl"),
                                              ("sessions lst", "list")])
def test_a_mistyped_command_gets_a_did_you_mean(store: Path, typed: str, meant: str) -> None:
    result = cli("--db", store, *typed.split())
    assert result.exit_code == 2 and f"Did you mean '{meant}'?" in result.stderr
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(("typed", "meant"), [("stauts", "status"), ("sessions lst", "list")])
def test_help_of_a_mistyped_command_gets_a_did_you_mean_too(store: Path, typed: str, meant: str) -> None:
    result = cli("help", *typed.split())
    assert result.exit_code == 2 and f"did you mean '{meant}'?" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    unknown = cli("help", "frobnicate")
    assert unknown.exit_code == 2 and "commands: archive, backup" in unknown.stderr


def test_a_command_like_nothing_known_gets_no_guess(store: Path) -> None:
    result = cli("--db", store, "frobnicate")
    assert result.exit_code == 2 and result.stderr == "hermes-state: No such command 'frobnicate'.\n"


def test_backup_to_a_name_with_a_trailing_slash_makes_that_folder(store: Path, tmp_path: Path) -> None:
    first = cli("--db", store, "backup", f"{tmp_path / 'backups'}/")
    second = cli("--db", store, "backup", f"{tmp_path / 'backups'}/")
    assert first.exit_code == second.exit_code == 0, first.stderr + second.stderr
    assert (tmp_path / "backups").is_dir() and len(list((tmp_path / "backups").iterdir())) == 2
    assert first.stdout.startswith("backed up 4 sessions and 8 messages to ")


def test_backup_to_a_file_named_with_a_trailing_slash_is_refused(store: Path, tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("mine")
    result = cli("--db", store, "backup", f"{tmp_path / 'notes'}/")
    assert result.exit_code == 2 and "ends in a slash" in result.stderr
    assert (tmp_path / "notes").read_text() == "mine"


def test_backup_into_a_missing_folder_of_a_missing_folder_is_refused(store: Path, tmp_path: Path) -> None:
    result = cli("--db", store, "backup", f"{tmp_path / 'no' / 'backups'}/")
    assert result.exit_code == 2 and "does not exist" in result.stderr and not (tmp_path / "no").exists()


@pytest.mark.parametrize("as_json", [False, True])
def test_a_search_that_finds_nothing_exits_1_as_grep_does(store: Path, as_json: bool) -> None:
    flags = ["--json"] if as_json else []
    found, missed = cli("--db", store, "search", "disk", *flags), cli("--db", store, "search", "zebra", *flags)
    assert (found.exit_code, missed.exit_code) == (0, 1) and missed.stderr == ""
    if as_json:
        assert json.loads(missed.stdout)["results"] == [] and json.loads(missed.stdout)["ok"] is True
    else:
        assert missed.stdout == "no matches\n"


@pytest.mark.parametrize("query", ["", "   ", '"', '""', "*"])
def test_a_search_for_nothing_is_a_usage_error_not_no_matches(store: Path, query: str) -> None:
    result = cli("--db", store, "search", query, "--json")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert "holds nothing to search for" in result.stderr and json.loads(result.stdout)["ok"] is False


@pytest.mark.parametrize("query", ["-", "NOT", "C++"])
def test_punctuation_or_an_operator_alone_is_still_searched_as_text(store: Path, query: str) -> None:
    assert cli("--db", store, "search", query).exit_code in (0, 1)


def test_ctrl_c_in_a_first_import_says_that_the_re_run_starts_over(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "write_batch", interrupted)
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "state.db"), "import-jsonl", str(LEGACY_HOME)])
    assert result.exit_code == 1 and "re-run to finish" not in result.stderr
    assert "nothing of it was kept" in result.stderr and "a re-run starts over" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_list_at_80_columns_keeps_the_start_beside_a_long_source_name(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        for n, source in enumerate(["homeassistant", "telegram", "cli"]):
            db.create_session(f"20260521_10000{n}_0badcafe", source)
            db.append_message(f"20260521_10000{n}_0badcafe", "user", "the porch light stays on all night " * 3)
        db.set_session_title("20260521_100001_0badcafe", "porch light")
    result = CliRunner().invoke(main, ["--db", str(path), "sessions", "list"], env={"COLUMNS": "80"})
    header, *rows = result.stdout.splitlines()[:-1]
    assert header.split()[:2] == ["id", "started"] and all(len(line) <= 80 for line in rows)
    assert "porch light ·" in rows[1] and header.count("title") == 1


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A Hermes home with its sessions/, its logs/ and a copy kept beside them."""
    home = tmp_path / ".hermes"
    shutil.copytree(LEGACY_HOME, home)
    shutil.copytree(home / "sessions", home / "sessions.bak")
    return home


def _more_in_home(db: Path, *paths: Path) -> list[dict[str, object]]:
    result = cli("--db", db, "import-jsonl", *paths, "--json")
    return [p for p in json.loads(result.stdout)["problems"] if p["kind"] == "more_in_home"]


def test_importing_a_homes_sessions_folder_says_what_else_the_home_holds(home: Path, tmp_path: Path) -> None:
    [said] = _more_in_home(tmp_path / "state.db", home / "sessions")
    assert said["file"] == str(home) and not said["failure"]
    assert "logs/, sessions.bak/" in str(said["detail"]) and f"hermes-state import-jsonl {home}" in str(said["detail"])
    human = cli("--db", tmp_path / "other.db", "import-jsonl", home / "sessions").stdout
    assert "notice more_in_home x1" in human and f"hermes-state import-jsonl {home}" in human


def test_nothing_more_is_said_when_the_home_or_all_its_folders_are_named(home: Path, tmp_path: Path) -> None:
    assert _more_in_home(tmp_path / "a.db", home) == []
    assert _more_in_home(tmp_path / "b.db", home / "sessions", home / "logs", home / "sessions.bak") == []
    [said] = _more_in_home(tmp_path / "c.db", home / "sessions", home / "logs")
    assert "holds sessions.bak/, which" in str(said["detail"])


def test_the_import_examples_name_the_home_not_its_sessions_folder() -> None:
    for args in (["--help"], ["import-jsonl", "--help"]):
        text = cli(*args).stdout
        assert "import-jsonl ~/.hermes" in text and "~/.hermes/sessions" not in text


def test_a_backup_of_one_session_says_session(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as db:
        db.create_session("s1", "cli")
        db.append_message("s1", "user", "hello")
    result = cli("--db", tmp_path / "state.db", "backup", tmp_path / "copy.db")
    assert result.exit_code == 0 and result.stdout.startswith("backed up 1 session and 1 message to ")
