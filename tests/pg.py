"""The real PostgreSQL the archive tests use: a fresh database per test on 127.0.0.1:5432, dropped after.

Where no server answers the tests skip with one line saying why, except under CI (CI=true), where a
missing server is a failure: CI must run them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

SERVER = os.environ.get("HST_TEST_PG", "postgresql://postgres@127.0.0.1:5432")


def _admin() -> object:
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed (pip install -e '.[test]')")
    try:
        return psycopg.connect(f"{SERVER}/postgres", autocommit=True, connect_timeout=5)
    except psycopg.Error as exc:
        _unavailable(f"no PostgreSQL at {SERVER} ({' '.join(str(exc).split())[:120]})")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"archive tests need PostgreSQL under CI: {reason}")
    pytest.skip(f"archive tests skipped: {reason}")


def new_database() -> Iterator[str]:
    """A URL to a new empty database, dropped afterwards."""
    admin = _admin()
    name = f"hst_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[attr-defined]
    try:
        yield f"{SERVER}/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[attr-defined]
        admin.close()  # type: ignore[attr-defined]
