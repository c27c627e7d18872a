"""The oracle: what Hermes Agent's own `SessionDB`, at the version that made a layout, shows of a file.

Needs Hermes' git history: the environment variable HERMES_GIT names its git directory (or a
clone holding it). Tests that use the oracle call `require_hermes()`, which skips them with one
line when it is unset or missing. Hermes' open may itself change a file (it migrates, reconciles
columns, rewrites triggers), so the oracle opens a copy unless told not to. What a view holds is
described in scripts/hermes_view.py; `summarize` condenses it as the fixtures' manifest records it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from scripts.hermes_source import LAYOUTS, HermesSourceError, git_dir_from, read_with_hermes
from scripts.hermes_view import SEARCH_QUERIES, summarize

__all__ = ["SEARCH_QUERIES", "hermes_git", "hermes_view", "require_hermes", "summarize"]


def hermes_git() -> Path | None:
    """Hermes' git directory from HERMES_GIT, or None when it is unset or not a git directory."""
    named = os.environ.get("HERMES_GIT")
    if not named:
        return None
    try:
        return git_dir_from(named)
    except HermesSourceError:
        return None


def require_hermes() -> Path:
    """Hermes' git directory, or skip the calling test."""
    git_dir = hermes_git()
    if git_dir is None:
        pytest.skip("HERMES_GIT does not name Hermes' git directory: the oracle needs Hermes' own code")
    return git_dir


def hermes_view(layout: str, db_path: Path, queries: tuple[str, ...] = SEARCH_QUERIES,
                on_copy: bool = True) -> dict[str, Any]:
    """What Hermes at `layout` (a name of LAYOUTS, or a commit) shows of `db_path`."""
    view: dict[str, Any] = read_with_hermes(require_hermes(), LAYOUTS.get(layout, layout), db_path,
                                            list(queries), on_copy=on_copy)
    return view
