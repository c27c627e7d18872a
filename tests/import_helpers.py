"""Shared pieces of the import and export tests: fixture paths, CLI runs, database rows, a generated corpus."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from click.testing import Result
from helpers import invoke

from hermes_state_tools.core import jsonutil
from hermes_state_tools.store.sqldump import table_rows

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "fixtures" / "legacy"
LEGACY_HOME = ROOT / "fixtures" / "legacy-home"
HOME_SESSIONS = LEGACY_HOME / "sessions"
EXTRA_TABLES = ("hst_session_extra", "hst_message_extra")


def interruptible() -> None:
    """preexec_fn of a child a test sends SIGINT: Ctrl-C as a terminal delivers it, even when the test run
    itself was started in the background (a shell without job control starts `&` jobs with SIGINT ignored,
    and children inherit that; Python then never raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*args: Any) -> Result:
    """Run `hermes-state ARGS` in-process (click's runner), stdout and stderr kept apart."""
    return invoke(*args)


def import_json(db: Path, *paths: Any, options: Iterable[str] = ()) -> tuple[int, dict[str, Any]]:
    """`hermes-state --db DB import-jsonl PATHS --json`: the exit code and the report."""
    result = cli("--db", db, "import-jsonl", *paths, *options, "--json", "--no-progress")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.stderr
    return result.exit_code, json.loads(result.stdout)


def export_bytes(db: Path, *options: Any) -> bytes:
    """`hermes-state --db DB export OPTIONS` stdout, asserting it succeeded."""
    result = cli("--db", db, "export", *options, "--no-progress")
    assert result.exit_code == 0, result.stderr
    return result.stdout_bytes


def connect(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(db))
    conn.row_factory = sqlite3.Row
    return conn


def query(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    conn = connect(db)
    try:
        return [dict(row) for row in conn.execute(sql, params)]
    finally:
        conn.close()


def sessions(db: Path) -> dict[str, dict[str, Any]]:
    """Every sessions row by id."""
    return {row["id"]: row for row in query(db, "SELECT * FROM sessions")}


def messages(db: Path, session_id: str) -> list[dict[str, Any]]:
    """One session's message rows in the store's order (timestamp, id), content decoded."""
    rows = query(db, "SELECT * FROM messages WHERE session_id = ? ORDER BY timestamp, id", (session_id,))
    for row in rows:
        row["content"] = jsonutil.decode_content(row["content"])
    return rows


def message_extras(db: Path, session_id: str) -> dict[int, dict[str, Any]]:
    """message id -> the extra data the importer kept for it (empty when the table does not exist)."""
    if not table_exists(db, "hst_message_extra"):
        return {}
    rows = query(db, "SELECT message_id, data FROM hst_message_extra WHERE session_id = ?", (session_id,))
    return {row["message_id"]: json.loads(row["data"]) for row in rows}


def table_exists(db: Path, name: str) -> bool:
    return bool(query(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)))


def content(db: Path) -> dict[str, list[Any]]:
    """sessions and messages rows in rowid order (ids included) and the extra tables' rows as sorted lists."""
    conn = connect(db)
    try:
        found = {table: table_rows(conn, table) for table in ("sessions", "messages")}
        for table in EXTRA_TABLES:
            exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            found[table] = sorted(tuple(row) for row in conn.execute(f"SELECT * FROM {table}")) if exists else []
        return found
    finally:
        conn.close()


def fts_in_sync(db: Path) -> bool:
    """FTS5's own check of the external-content index against `messages` (raises when they differ)."""
    conn = sqlite3.connect(str(db))
    try:
        conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('integrity-check', 1)")
        return True
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def write_jsonl(path: Path, records: Iterable[Any]) -> Path:
    """Write records as Hermes did: one `json.dumps(ensure_ascii=False)` line each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


_WORDS = ("alpha", "beta", "gamma", "deploy", "kernel", "backup", "mountain", "lake", "café", "Ωmega", "你好", "🙂",
          "tool", "output", "disk")


def corpus_session(number: int, size: int, rng: random.Random, big: bool) -> tuple[str, list[dict[str, Any]]]:
    """One realistic gateway transcript: session_meta, turns sharing a time, tool rows without a name, a
    message id; with `big`, tool outputs of 5-20 KB like real ones."""
    start = datetime(2026, 3, 1, 8, 0, 0) + timedelta(minutes=17 * number)
    session_id = start.strftime("%Y%m%d_%H%M%S_") + f"{number:08x}"
    records: list[dict[str, Any]] = [
        {"role": "session_meta", "model": "model-a", "platform": "telegram", "timestamp": start.isoformat()}
    ]
    for i in range(size):
        when = (start + timedelta(seconds=3 * (i // 2))).isoformat()  # one turn shares one timestamp
        text = f"corpus s{number} m{i} " + " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 50)))
        record: dict[str, Any] = {"role": "user" if i % 2 == 0 else "assistant", "content": text, "timestamp": when}
        if i % 9 == 4:
            call = f"call_{number}_{i}"
            record["tool_calls"] = [{"id": call, "type": "function",
                                     "function": {"name": "terminal", "arguments": json.dumps({"command": "ls"})}}]
            output = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(700, 2800) if big else 3))
            records += [record, {"role": "tool", "content": f"result {number}/{i} {output}", "tool_call_id": call,
                                 "timestamp": when}]
            continue
        if i % 13 == 7:
            record["message_id"] = str(10**12 + number * 1000 + i)
        records.append(record)
    return session_id, records


def write_corpus(folder: Path, count: int, size: int, big: bool = False, seed: int = 7) -> dict[str, list[dict]]:
    """Write `count` `{id}.jsonl` transcripts of about `size` messages; returns each session's records."""
    rng = random.Random(seed)
    written = {}
    for number in range(count):
        session_id, records = corpus_session(number, size, rng, big)
        write_jsonl(folder / f"{session_id}.jsonl", records)
        written[session_id] = records
    return written
