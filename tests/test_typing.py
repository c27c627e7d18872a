"""`mypy --strict` is clean on the library and the readers (the configuration is in pyproject.toml)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed (pip install '.[test]')")
def test_mypy_strict_is_clean(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # mypy's incremental cache, kept between runs in pytest's cache folder: it checks again only what
    # changed, with the same result as a run from nothing (which the first run is).
    store = getattr(request.config, "cache", None)  # None: run with -p no:cacheprovider
    cache = store.mkdir("mypy") if store is not None else tmp_path / "cache"
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
