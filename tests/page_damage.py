"""Real damage on real files: build a Hermes v6 state.db big enough that every b-tree has several
pages, find a b-tree's pages with `dbstat`, and destroy them (random bytes over whole pages)."""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
from pathlib import Path

from built_files import copy_built

from hermes_state_tools import SessionDB

# Each b-tree kind a Hermes file has, and whether its rows are canonical or derived.
PAGE_KINDS: dict[str, str] = {
    "messages": "canonical",
    "sessions": "canonical",
    "sqlite_autoindex_sessions_1": "derived",
    "idx_messages_session": "derived",
    "idx_sessions_started": "derived",
    "messages_fts_data": "derived",
    "messages_fts_idx": "derived",
    "messages_fts_docsize": "derived",
    "messages_fts_config": "derived",
}
KINDS = (*PAGE_KINDS, "dup_master")
CANONICAL_KINDS = tuple(k for k, v in PAGE_KINDS.items() if v == "canonical")
DERIVED_KINDS = (*(k for k, v in PAGE_KINDS.items() if v == "derived"), "dup_master")
_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma", "omega",
          "python", "sqlite", "hermes", "agent", "tool", "call", "result", "error", "retry", "commit", "rollback"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def build_db(path: Path, sessions: int = 120, per_session: int = 20, size: int = 300, seed: int = 1) -> Path:
    """A v6 file made by SessionDB (schema), rows bulk-inserted (the FTS triggers index them);
    checkpointed and closed: no -wal/-shm remain (built once per process and arguments, copied: built_files)."""
    return copy_built(("page_damage", sessions, per_session, size, seed),
                      lambda built: _build_db(built, sessions, per_session, size, seed), path)


def _build_db(path: Path, sessions: int, per_session: int, size: int, seed: int) -> Path:
    rnd = random.Random(seed)

    def text(n: int) -> str:
        return " ".join(rnd.choice(_WORDS) for _ in range(n // 6))

    SessionDB(path).close()
    conn = sqlite3.connect(path)
    with conn:
        t0 = 1_750_000_000.0
        for s in range(sessions):
            sid = f"sess-{s:05d}"
            title = f"title {s}" if s % 3 == 0 else None
            conn.execute("INSERT INTO sessions (id, source, system_prompt, started_at, message_count, title) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         (sid, rnd.choice(["cli", "telegram", "discord"]), text(150), t0 + s * 100, per_session, title))
            conn.executemany("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                             [(sid, "user" if m % 2 == 0 else "assistant", text(size), t0 + s * 100 + m)
                              for m in range(per_session)])
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return path


def btree_pages(path: Path) -> dict[str, list[tuple[int, str]]]:
    """b-tree name -> [(page number, 'internal'|'leaf'|'overflow')], read immutable."""
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        out: dict[str, list[tuple[int, str]]] = {}
        for name, page, kind in conn.execute("SELECT name, pageno, pagetype FROM dbstat ORDER BY name, pageno"):
            out.setdefault(name, []).append((page, kind))
        return out
    finally:
        conn.close()


def destroy_pages(path: Path, pages: list[int], seed: int = 7) -> None:
    """Random bytes over whole pages (never page 1)."""
    with open(path, "rb") as handle:
        header = handle.read(100)
    size = int.from_bytes(header[16:18], "big")
    size = 65536 if size == 1 else size
    rnd = random.Random(seed)
    with open(path, "r+b") as handle:
        for page in pages:
            assert page != 1
            handle.seek((page - 1) * size)
            handle.write(bytes(rnd.getrandbits(8) for _ in range(size)))
        handle.flush()
        os.fsync(handle.fileno())


def destroy_btree(path: Path, name: str, which: str = "leaf", count: int = 1) -> list[int]:
    """Destroy `count` pages of b-tree `name`: middle leaves, or its root/interior page."""
    pages = btree_pages(path)[name]
    if which == "interior":
        chosen = [p for p, kind in pages if kind == "internal"][:1]
    else:
        leaves = [p for p, kind in pages if kind == "leaf"] or [p for p, _ in pages]
        middle = max(0, len(leaves) // 2 - count // 2)
        chosen = leaves[middle:middle + count]
    assert chosen, f"{name} has no {which} page"
    destroy_pages(path, chosen)
    return chosen


def duplicate_master_entry(path: Path, name: str = "messages_fts") -> None:
    """A second sqlite_master row for the FTS table (the post-crash "no sessions" failure)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA writable_schema=ON")
        with conn:
            conn.execute("INSERT INTO sqlite_master SELECT * FROM sqlite_master WHERE name = ? LIMIT 1", (name,))
    finally:
        conn.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def damage(path: Path, kind: str) -> None:
    if kind == "dup_master":
        duplicate_master_entry(path)
    else:
        destroy_btree(path, kind)


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()
