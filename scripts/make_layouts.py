"""Write the schema of every Hermes layout the toolkit knows, as Hermes' own code creates it.

Each layout is the empty database that `SessionDB()` of one Hermes commit creates: the commit where
that schema version first appeared (hermes-versions.md, section 1). The script runs that commit's
`hermes_state.py` from a Hermes git directory (the full-history fork, `alt-glitch/hermes-agent`),
then writes the file's schema objects, in the order SQLite recorded them, to
`hermes_state_tools/layouts/v<N>.sql`: the statements `core/layouts.py` reads, and that `--schema N`
replays to create a file exactly as that Hermes would. Nothing of Hermes' code is kept.

    python scripts/make_layouts.py --hermes-git ~/src/hermes-agent/.git           # (re)write the files
    python scripts/make_layouts.py --hermes-git ~/src/hermes-agent/.git --check   # exit 1 if they differ
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "hermes_state_tools" / "layouts"

# schema version -> the Hermes commit where it first appeared
COMMITS = {
    7: "a7d78d3bf", 8: "5fb143169", 9: "81e01f6ee", 10: "1fa76607c", 11: "8d76d69d4", 12: "31a010010",
    13: "4a91e3649", 14: "a30480bd2", 15: "ed81cfe3d", 16: "d62979a6f", 17: "86e64900b",
}

# hermes_state.py imports two helpers that play no part in creating the schema
_STUBS = {
    "agent/__init__.py": "",
    "agent/memory_manager.py": "def sanitize_context(text):\n    return text\n",
}

_SHADOW_SUFFIXES = ("_data", "_idx", "_content", "_docsize", "_config")  # what CREATE VIRTUAL TABLE makes

_CREATE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import hermes_state
hermes_state.SessionDB(db_path=Path(sys.argv[2])).close()
"""


def checkout(git_dir: Path, commit: str, folder: Path) -> None:
    """`hermes_state.py` and `hermes_constants.py` of `commit` in `folder`, with the stubs."""
    for name in ("hermes_state.py", "hermes_constants.py"):
        text = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{name}"],
                              check=True, capture_output=True).stdout
        (folder / name).write_bytes(text)
    for name, text in _STUBS.items():
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text(text)


def schema_script(db: Path, version: int, commit: str) -> str:
    """The schema objects of `db` in creation order (what SQLite makes by itself left out)."""
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid").fetchall()
    stored = conn.execute("SELECT version FROM schema_version").fetchall()
    conn.close()
    assert stored == [(version,)], (commit, stored)
    virtual = [name for kind, name, sql in rows if kind == "table" and (sql or "").startswith("CREATE VIRTUAL")]
    lines = [f"-- Hermes schema {version}: the empty database SessionDB() of commit {commit} creates."]
    for kind, name, sql in rows:
        shadow = kind == "table" and any(name == v + s for v in virtual for s in _SHADOW_SUFFIXES)
        if sql is None or name.startswith("sqlite_") or shadow:
            continue
        lines.append(f"{sql};")
    lines.append(f"INSERT INTO schema_version (version) VALUES ({version});")
    return "\n".join(lines) + "\n"


def build(git_dir: Path, version: int, commit: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        checkout(git_dir, commit, folder)
        db = folder / "state.db"
        env = {**os.environ, "HERMES_HOME": str(folder / "home")}
        subprocess.run([sys.executable, "-c", _CREATE, str(folder), str(db)], check=True, env=env)
        return schema_script(db, version, commit)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hermes-git", type=Path, required=True, help="a Hermes git directory (the fork's history)")
    parser.add_argument("--check", action="store_true", help="compare with the committed files instead of writing")
    args = parser.parse_args()
    differ = []
    for version, commit in COMMITS.items():
        text, path = build(args.hermes_git, version, commit), OUT / f"v{version}.sql"
        if args.check:
            if not path.exists() or path.read_text() != text:
                differ.append(path.name)
        else:
            path.write_text(text)
    for name in differ:
        print(f"{name} differs from what Hermes' code creates", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
