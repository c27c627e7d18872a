"""docs/commands.md is what the CLI's own --help prints, for every command and subcommand."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import click

from hermes_state_tools.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_command_docs", ROOT / "scripts" / "make_command_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_regenerating_gives_the_committed_reference() -> None:
    committed = (ROOT / "docs" / "commands.md").read_text("utf-8")
    assert _generator().render() == committed, "run: python scripts/make_command_docs.py"


def test_every_command_has_its_section_and_its_help() -> None:
    generator = _generator()
    committed = (ROOT / "docs" / "commands.md").read_text("utf-8")
    paths = list(generator.command_paths(main))
    assert ("sessions", "list") in paths and ("import-jsonl",) in paths
    for path in paths:
        name = " ".join(path)
        assert f"\n## hermes-state {name}\n" in committed
        assert f"Usage: hermes-state {name} " in committed


def test_a_changed_help_text_is_noticed(monkeypatch) -> None:
    generator = _generator()
    command = main.get_command(click.Context(main), "vacuum")
    assert command is not None and command.help
    monkeypatch.setattr(command, "help", command.help + "\n\nOne more sentence.")
    assert generator.render() != (ROOT / "docs" / "commands.md").read_text("utf-8")
