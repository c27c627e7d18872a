"""The README's quick start is what CI runs, and it names what a newcomer needs."""

from __future__ import annotations

import re
from pathlib import Path

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
