"""Hermes Agent's own `SessionDB` at any commit of its git history, run in a subprocess.

Shared by scripts/make_hermes_fixtures.py (which builds databases with it) and
tests/hermes_oracle.py (which reads them back with it). Nothing of Hermes is kept in this
repository: each use extracts `hermes_state.py` and the few modules it imports from the
git directory into a temporary folder. The modules `agent/memory_manager.py` imports at
load time (memory providers, skill commands, the tool registry) would drag in most of
Hermes; they get small stand-ins here, which only define the names imported. The
`SessionDB` itself never calls them (`sanitize_context`, the one function it uses, is
Hermes' own).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# name -> commit: the first commit of each schema version in the fork's history, plus the
# states worth having that landed without a version bump (their name says what they add).
LAYOUTS: dict[str, str] = {
    "v6": "42fec1915",
    "v7": "a7d78d3bf",
    "v8": "5fb143169",
    "v9": "81e01f6ee",
    "v10": "1fa76607c",
    "v11": "8d76d69d4",
    "v12": "31a010010",
    "v13": "4a91e3649",
    "v14": "a30480bd2",
    "v14-active": "3e59be0c4",
    "v15": "ed81cfe3d",
    "v16": "d62979a6f",
    "v16-head": "5e01a5dbf",
    "v16-archive-compact": "466345699",
    "v16-compacted": "854d75723",
    "v17": "86e64900b",
    "v17-tip": "82b496604",
}

# Short-lived builds whose columns stay in a file for good (reconcile never drops a column).
STRAYS: dict[str, str] = {
    "handoff-pending": "878611a79",  # sessions.handoff_pending
    "icon": "b94b3622b",  # sessions.icon
    "anthropic-blocks": "aaccaada2",  # messages.anthropic_content_blocks
}
# The migrated file that passes through them: v6, then each build in the order users met them.
STRAY_CHAIN = ("v6", "handoff-pending", "v14-active", "icon", "anthropic-blocks", "v17-tip")
COMMITS = {**LAYOUTS, **STRAYS}

_REAL_FILES = ("hermes_state.py", "hermes_constants.py", "agent/memory_manager.py")
_STAND_INS = {
    "agent/__init__.py": "",
    "tools/__init__.py": "",
    "agent/memory_provider.py": "class MemoryProvider:\n    pass\n",
    "agent/skill_commands.py": "def extract_user_instruction_from_skill_message(text):\n    return None\n",
    "tools/registry.py": (
        "import json\n\n\ndef tool_error(message, **extra):\n"
        "    return json.dumps({'error': str(message), **extra})\n"
    ),
}


class HermesSourceError(RuntimeError):
    """The git directory lacks a commit, or Hermes' code failed in the subprocess."""


@dataclass(frozen=True)
class Commit:
    """One commit of Hermes: its full hash, commit date (ISO) and subject line."""

    sha: str
    date: str
    subject: str


def git_dir_from(path: str | Path) -> Path:
    """The git directory itself, whether `path` is it, a work tree, or holds it as `.git`."""
    root = Path(path)
    for candidate in (root, root / ".git", root / "repo"):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    raise HermesSourceError(f"{path} is not a Hermes git directory")


def _git(git_dir: Path, *args: str) -> bytes:
    done = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=False)
    if done.returncode != 0:
        raise HermesSourceError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def describe(git_dir: Path, commit: str) -> Commit:
    """The full hash, date and subject of `commit`."""
    sha, date, subject = _git(git_dir, "log", "-1", "--format=%H%n%cI%n%s", commit).decode().split("\n", 2)
    return Commit(sha, date, subject.strip())


def extract(git_dir: Path, commit: str, dest: Path) -> Path:
    """Write Hermes' `hermes_state.py` at `commit` and what it imports into `dest`; returns `dest`."""
    present = set(_git(git_dir, "ls-tree", "-r", "--name-only", commit, "--", *_REAL_FILES).decode().split())
    if "hermes_state.py" not in present:
        raise HermesSourceError(f"commit {commit} has no hermes_state.py")
    files = {**_STAND_INS, **{name: _git(git_dir, "show", f"{commit}:{name}").decode() for name in present}}
    for name, text in files.items():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return dest


def run_worker(git_dir: Path, commit: str, worker: Path, args: list[str], payload: Any = None) -> Any:
    """Run `worker` with Hermes at `commit` importable; `payload` goes in as JSON on stdin, JSON comes out."""
    with tempfile.TemporaryDirectory(prefix="hermes-src-") as tmp:
        tree = extract(git_dir, commit, Path(tmp) / "src")
        home = Path(tmp) / "home"
        home.mkdir()
        env = {**os.environ, "PYTHONPATH": str(tree), "HERMES_HOME": str(home), "PYTHONHASHSEED": "0"}
        done = subprocess.run(
            [sys.executable, str(worker.resolve()), *args], input=json.dumps(payload), capture_output=True,
            text=True, env=env, cwd=tmp, check=False,
        )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise HermesSourceError(f"Hermes {commit} failed in {worker.name} {' '.join(args)}:\n{tail}")
    return json.loads(done.stdout)


VIEW_WORKER = Path(__file__).resolve().parent / "hermes_view.py"


def copy_database(db_path: Path, dest: Path) -> Path:
    """A consistent copy of a live SQLite file (the backup API), so Hermes can open it freely."""
    source, target = sqlite3.connect(str(db_path)), sqlite3.connect(str(dest))
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return dest


def read_with_hermes(git_dir: Path, commit: str, db_path: Path, queries: list[str], on_copy: bool = True) -> Any:
    """What Hermes at `commit` shows of `db_path` (scripts/hermes_view.py), opening a copy unless told not to."""
    if not on_copy:
        return run_worker(git_dir, commit, VIEW_WORKER, [str(db_path)], {"queries": queries})
    with tempfile.TemporaryDirectory(prefix="hermes-view-") as tmp:
        copy = copy_database(db_path, Path(tmp) / db_path.name)
        return run_worker(git_dir, commit, VIEW_WORKER, [str(copy)], {"queries": queries})
