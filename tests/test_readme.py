"""The README's quick start is what CI runs, and it names what a newcomer needs."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import hermes_state

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text("utf-8")


def _quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section, re.DOTALL)


def test_quick_start_is_exactly_two_commands() -> None:
    commands = _quick_start_commands()
    assert len(commands) == 2
    assert all("\n" not in command for command in commands)
    assert "import-jsonl fixtures/legacy-home" in commands[0]
    assert (ROOT / "fixtures" / "legacy-home" / "sessions").is_dir()


def test_ci_runs_the_readme_test_command() -> None:
    ci_script = (ROOT / ".ci" / "run").read_text("utf-8")
    assert _quick_start_commands()[1] in ci_script.splitlines()


def test_quick_start_works_where_the_system_python_refuses_pip() -> None:
    # PEP 668: `python3 -m pip install` outside a virtual environment is refused on current
    # Debian/Ubuntu/Fedora ("externally-managed-environment"); both commands install into ./.venv.
    for command in _quick_start_commands():
        assert command.startswith("python3 -m venv .venv && .venv/bin/python -m pip install ")
        assert not re.search(r"(?<!\.venv/bin/)\bpython3 -m pip\b", command)
    ci_script = (ROOT / ".ci" / "run").read_text("utf-8")
    assert ".venv/bin/python -m pip install '.[test]'" in ci_script  # from this checkout's files


def test_the_test_extra_brings_datasette_for_the_browse_test() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    test_extra = pyproject.split("test = [", 1)[1].split("]", 1)[0]
    browse_extra = pyproject.split("browse = [", 1)[1].split("]", 1)[0]
    assert '"datasette>=0.65,<1.0"' in test_extra and '"datasette>=0.65,<1.0"' in browse_extra
    assert "[project.urls]" in pyproject and "classifiers = [" in pyproject


def _quick_start_output() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"\n```\n(imported .+?)\n```", section, re.DOTALL)[0].splitlines()


def test_the_quick_start_prints_what_the_readme_shows(tmp_path: Path) -> None:
    # The README's output block is what its first command prints, run as there (from the checkout,
    # into demo/state.db): its lines in that order, "  ..." standing for the rest of the notices.
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    imported = hermes_state("--db", "demo/state.db", "import-jsonl", "fixtures/legacy-home", "--no-progress",
                            cwd=tmp_path)
    found = hermes_state("--db", "demo/state.db", "search", "disk usage", cwd=tmp_path)
    assert (imported.returncode, found.returncode) == (1, 0)
    printed = iter((imported.stdout + imported.stderr + found.stdout).splitlines())
    shown = [line for line in _quick_start_output() if line != "  ..."]
    assert all(line in printed for line in shown)  # each one, after the one before it
    notices = next(filter(None, (re.search(r"; (\d+) notices:$", line) for line in shown)), None)
    assert notices and imported.stdout.count("\n  notice ") == int(notices.group(1))


def test_no_example_runs_the_real_command_only_if_the_dry_run_exited_0() -> None:
    # A dry run exits 1 when a record cannot be stored (the sample's cut-off line): `... --dry-run && ...`
    # would then never run the import it previewed.
    for text in (README, *(path.read_text("utf-8") for path in (ROOT / "docs").glob("*.md"))):
        assert "--dry-run &&" not in text
