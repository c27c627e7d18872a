"""The layers hold: every import inside the package points down (see ARCHITECTURE.md), never up or sideways."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "hermes_state_tools"

# What each part may import from the package, besides itself. Lower parts never import higher ones.
BASE = {"errors", "core"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "layouts": set(),  # data: the SQL of each Hermes layout (core/layouts.py reads it)
    "core": {"errors"},
    "importers": BASE,
    "tables": BASE,
    "search": BASE | {"tables"},
    "upgrade": BASE | {"tables"},
    "store": BASE | {"tables", "search", "upgrade"},
    "views": BASE | {"tables", "search", "upgrade", "store"},
    "archive": BASE | {"tables", "search", "store"},
    "maintenance": BASE | {"tables", "search", "upgrade", "store", "views", "archive"},
    "ingest": BASE | {"tables", "search", "upgrade", "store", "importers"},
    "cli": {"*"},
    "__init__": {"*"},
    "__main__": {"*"},
}
# Modules held to a stricter rule than their part.
NEVER: dict[str, set[str]] = {
    # The writer writes what it is given: it never reads or parses a file.
    f"{PACKAGE}.ingest.writing.writer": {f"{PACKAGE}.importers", f"{PACKAGE}.ingest.planning.units",
                                         f"{PACKAGE}.ingest.run"},
    # The reader process loads only what planning needs, never the facade or the CLI.
    f"{PACKAGE}.ingest.reader_child": {f"{PACKAGE}.store", f"{PACKAGE}.cli"},
}


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name; the readers live in the top-level importers/ folder."""
    found: dict[str, Path] = {}
    for folder, prefix in ((ROOT / PACKAGE, PACKAGE), (ROOT / "importers", f"{PACKAGE}.importers")):
        for path in folder.rglob("*.py"):
            if folder.name == PACKAGE and "importers" in path.relative_to(folder).parts:
                continue  # the link to importers/, read above under its real path
            parts = list(path.relative_to(folder).with_suffix("").parts)
            name = ".".join([prefix, *parts])
            found[name.removesuffix(".__init__")] = path
    return found


def _imports(name: str, path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of the package in the file, relative ones resolved."""
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and _dynamic_import(node):
            out.append((node.lineno, node.args[0].value))  # importlib.import_module("...") / __import__("...")
        elif isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                module = ".".join(base[: len(base) - node.level + 1] + ([module] if module else []))
            out.append((node.lineno, module))
            out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    # The readers' repository folder is importable as `importers` from a checkout: that name is wrong
    # everywhere (it is hermes_state_tools.importers), so it is reported as a layer of its own.
    ours = (PACKAGE, PACKAGE + ".", "importers")
    return [(line, _facade_home(module)) for line, module in out
            if module == PACKAGE or module.startswith(ours[1]) or module.split(".")[0] == ours[2]]


def _dynamic_import(node: ast.Call) -> bool:
    func = node.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("__import__", "import_module"))
    return named and bool(node.args) and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)


def _facade() -> dict[str, str]:
    """What the package root re-exports, and from which module (SessionDB is the store's)."""
    tree = ast.parse((ROOT / PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    return {f"{PACKAGE}.{alias.asname or alias.name}": node.module
            for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
            and node.module.startswith(PACKAGE + ".") for alias in node.names}


def _facade_home(module: str) -> str:
    """`from hermes_state_tools import SessionDB` is an import of the module SessionDB comes from."""
    return _FACADE.get(module, module)


def _part(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "importers":
        return "importers (as a top-level name)"
    return parts[1] if len(parts) > 1 else "__init__"


_FACADE = _facade()


MODULES = _modules()


def test_every_part_of_the_package_has_a_rule():
    assert {_part(name) for name in MODULES} <= set(ALLOWED)


def violations(name: str, path: Path) -> list[str]:
    """Every import in `path` (module `name`) against the direction of the layers."""
    part = _part(name)
    allowed = ALLOWED[part] | {part}
    wrong = []
    for line, module in _imports(name, path):
        if module == PACKAGE or (module not in MODULES and module.rsplit(".", 1)[0] in MODULES):
            continue  # a name imported from a module, or the package's own facade names: judged by the module
        if "*" not in allowed and _part(module) not in allowed:
            wrong.append(f"line {line}: {part} may not import {module}")
        if any(module == bad or module.startswith(bad + ".") for bad in NEVER.get(name, ())):
            wrong.append(f"line {line}: {name} may not import {module}")
    return wrong


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down(name):
    wrong = violations(name, MODULES[name])
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(("name", "line"), [
    (f"{PACKAGE}.importers.jsonl", "from hermes_state_tools.ingest.run import import_paths"),
    (f"{PACKAGE}.tables.messages", "from hermes_state_tools.store import opening"),
    (f"{PACKAGE}.core.schema", "from ..tables import fts"),
    (f"{PACKAGE}.ingest.writing.writer", "from hermes_state_tools.importers.jsonl import read_jsonl"),
    (f"{PACKAGE}.tables.messages", "from hermes_state_tools import SessionDB"),
    (f"{PACKAGE}.ingest.run", "import importers.jsonl"),
    (f"{PACKAGE}.importers.jsonl", "import importlib\nimportlib.import_module('hermes_state_tools.ingest.run')"),
    (f"{PACKAGE}.ingest.writing.writer", "run = __import__('hermes_state_tools.ingest.planning.units')"),
])
def test_the_rule_catches_an_import_against_the_direction(tmp_path, name, line):
    bad = tmp_path / "module.py"
    bad.write_text(line + "\n")
    assert violations(name, bad)


# Private helpers: the one module each belongs to is the only one that imports it.
PRIVATE = {f"{PACKAGE}.store.read_open": f"{PACKAGE}.store.opening"}


def test_a_private_helper_is_imported_only_by_its_owner():
    wrong = [f"{name} line {line}: imports {module}"
             for name, path in MODULES.items() for line, module in _imports(name, path)
             for helper, owner in PRIVATE.items()
             if (module == helper or module.startswith(helper + ".")) and name not in (helper, owner)]
    assert not wrong, "\n".join(wrong)
