"""Shared fixtures: every test gets its own HERMES_HOME and a real state.db in tmp_path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import built_files
import pytest
from hypothesis import settings

from hermes_state_tools import SessionDB

# No wall-clock bound on an example (Hypothesis' default deadline is 200 ms): a busy machine, or the
# suite's own workers on the other cores, exceed it with nothing wrong. The default suite runs half
# Hypothesis' default examples (50); HYPOTHESIS_PROFILE=soak runs ten times as many (500) for a long hunt.
# A test that sets its own count passes it through helpers.examples, which scales it alike.
settings.register_profile("suite", deadline=None, max_examples=50)
settings.register_profile("soak", deadline=None, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))


@pytest.fixture(scope="session", autouse=True)
def _built_files_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Where built_files builds a file once for this process's tests to copy."""
    built_files.use_folder(tmp_path_factory.mktemp("built"))


@pytest.fixture(autouse=True)
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HERMES_HOME into tmp_path so no test can touch the real ~/.hermes."""
    home = tmp_path / "hermes_home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def _tables_as_on_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """No width to fit tables to unless a test sets one: pytest-xdist starts its workers with COLUMNS=80
    and LINES=24, which a plain run (and a command on a pipe) does not have."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[SessionDB]:
    store = SessionDB(db_path)
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def s1(db: SessionDB) -> str:
    """A plain cli session called "s1" in the `db` store."""
    return db.create_session("s1", "cli")


@pytest.fixture
def archive_url() -> Iterator[str]:
    """A new empty PostgreSQL database for one archive test (tests/pg.py: skipped without a server, except under CI)."""
    from pg import new_database

    yield from new_database()


@pytest.fixture
def second_archive_url() -> Iterator[str]:
    """Another new empty database, for comparing two archives."""
    from pg import new_database

    yield from new_database()
