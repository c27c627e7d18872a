"""Loading the databases made by Hermes' own code (fixtures/hermes/*.sql) into real files.

The dumps and their manifest are made by scripts/make_hermes_fixtures.py; fixtures/hermes/README.md
says what each holds. `manifest()[name]` gives a dump's layout, commit, schema version, counts,
the ids of its notable rows (`scenario`) and what Hermes itself showed of it (`hermes_view`).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from built_files import copy_built

from hermes_state_tools.store.sqldump import load_sql

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "hermes"


@cache
def manifest() -> dict[str, dict[str, Any]]:
    """Every dump's entry of fixtures/hermes/manifest.json, by dump name."""
    loaded: dict[str, dict[str, Any]] = json.loads((FIXTURE_DIR / "manifest.json").read_text("utf-8"))
    return loaded


def names(kind: str | None = None) -> list[str]:
    """The dump names, of one kind ('empty', 'populated', 'chain') or all, in a stable order."""
    return sorted(name for name, entry in manifest().items() if kind is None or entry["kind"] == kind)


def load(name: str, dest: Path) -> Path:
    """Load dump `name` into a new database file: `dest` itself, or `dest/<name>.db` when it is a folder
    (loaded once per process, copied: built_files)."""
    path = dest / f"{name}.db" if dest.is_dir() else dest
    return copy_built(("hermes", name), lambda built: load_sql((FIXTURE_DIR / f"{name}.sql").read_text("utf-8"), built),
                      path)
