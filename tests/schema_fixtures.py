"""Loading the committed schema fixtures (fixtures/schema/*.sql) into real database files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from built_files import copy_built

from hermes_state_tools.store.sqldump import load_sql, table_rows

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "schema"
MANIFEST = json.loads((FIXTURE_DIR / "manifest.json").read_text("utf-8"))
UPGRADABLE = sorted(name for name in MANIFEST if name != "trap_version_31")


def load_fixture(name: str, dest_dir: Path) -> Path:
    """Dump `name` loaded into `dest_dir/<name>.db` (loaded once per process, copied: built_files)."""
    return copy_built(("schema", name), lambda built: load_sql((FIXTURE_DIR / f"{name}.sql").read_text("utf-8"), built),
                      dest_dir / f"{name}.db")


def rows_by_key(path: Path, table: str) -> dict[object, dict[str, object]]:
    conn = sqlite3.connect(str(path))
    try:
        return {row["id"]: row for row in table_rows(conn, table)}
    finally:
        conn.close()
