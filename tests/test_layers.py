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
# Inside ingest/: what each folder may import of the others (besides itself). The runs at the top
# (run, merge_db, other_db, stats) use the folders; no folder imports them.
INGEST: dict[str, set[str]] = {
    "copies": set(),  # aligning and merging one session's copies
    "planning": {"copies"},  # units, plans, batches
    "writing": {"copies", "planning"},  # the writer: writes what it is given, reads no file and no pipe
    "reader": {"planning", "writing"},  # the reader process: plans and stages (writing/staging.py) batches
}
# Modules held to a stricter rule than their part.
NEVER: dict[str, set[str]] = {
    # The writer writes what it is given: it never reads or parses a file.
    f"{PACKAGE}.ingest.writing.writer": {f"{PACKAGE}.importers", f"{PACKAGE}.ingest.planning.units"},
    # The reader process loads only what planning needs, never the facade or the CLI.
    f"{PACKAGE}.ingest.reader.process": {f"{PACKAGE}.store", f"{PACKAGE}.cli"},
    # Started before the command line loads: it loads nothing but the messages it sends.
    f"{PACKAGE}.ingest.reader.launch": {f"{PACKAGE}.core", f"{PACKAGE}.store", f"{PACKAGE}.cli",
                                        f"{PACKAGE}.ingest.planning", f"{PACKAGE}.ingest.writing"},
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
        if (folder := _ingest_folder(name)) is not None and _ingest_folder(module, own=False) not in (
                None, folder, *INGEST[folder]):
            wrong.append(f"line {line}: ingest/{folder}/ may not import {module}")
    return wrong


def _ingest_folder(module: str, own: bool = True) -> str | None:
    """The folder of ingest/ that holds `module`; "the top" for run, merge_db, ... (None: outside ingest/,
    or, with `own`, not in a folder, which the INGEST rule does not bind)."""
    parts = module.split(".")
    if parts[:2] != [PACKAGE, "ingest"] or len(parts) < 3:
        return None if own or parts[:2] != [PACKAGE, "ingest"] else "the top"
    if parts[2] in INGEST:
        return parts[2]
    return None if own else "the top"


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
    (f"{PACKAGE}.ingest.writing.writer", "from hermes_state_tools.ingest.reader.launch import ask"),
    (f"{PACKAGE}.ingest.planning.prepared", "from hermes_state_tools.ingest.writing import rows"),
    (f"{PACKAGE}.ingest.copies.merge", "from hermes_state_tools.ingest.planning.units import Unit"),
    (f"{PACKAGE}.ingest.reader.remote", "from hermes_state_tools.ingest.run import ImportStats"),
    (f"{PACKAGE}.ingest.planning.batches", "from hermes_state_tools.ingest import stats"),
    (f"{PACKAGE}.ingest.reader.launch", "from hermes_state_tools.core import paths"),
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


def _dependencies(name: str, path: Path) -> set[str]:
    """The modules of the package that `name` imports, at its top, in a function or for type checking
    alike. `from package import module` is an import of the module: the package's __init__ runs, but
    what it holds is not asked for."""
    by_line: dict[int, set[str]] = {}
    for line, module in _imports(name, path):
        by_line.setdefault(line, set()).add(module)
    found = set()
    for modules in by_line.values():
        for module in modules:
            if module in MODULES:
                if not any(other.startswith(module + ".") and other in MODULES for other in modules):
                    found.add(module)
            elif module.rsplit(".", 1)[0] in MODULES:
                found.add(module.rsplit(".", 1)[0])
    return found - {name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of two or more modules that import each other in a loop (Tarjan's strongly connected
    components, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif target not in index:
                index[target] = low[target] = len(index)
                stack.append(target)
                on_stack.add(target)
                work.append((target, iter(sorted(graph.get(target, ())))))
            elif target in on_stack:
                low[node] = min(low[node], index[target])
    return found


def test_no_modules_import_each_other_in_a_loop():
    graph = {name: _dependencies(name, path) & set(MODULES) for name, path in MODULES.items()}
    assert not cycles(graph), "\n".join(" -> ".join(loop) for loop in cycles(graph))


def test_a_function_level_import_that_closes_a_loop_is_found(tmp_path):
    align = f"{PACKAGE}.ingest.copies.align"
    late = tmp_path / "align.py"  # align as it would be if it asked merge for something inside a function
    late.write_text("def f():\n    from hermes_state_tools.ingest.copies.merge import plan_session\n")
    graph = {name: _dependencies(name, path) & set(MODULES) for name, path in MODULES.items()}
    graph[align] = _dependencies(align, late)
    assert any({align, f"{PACKAGE}.ingest.copies.merge"} <= set(loop) for loop in cycles(graph))
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
