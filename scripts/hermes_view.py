"""Run inside a subprocess with one Hermes version's `hermes_state` importable: open a database
with that version's `SessionDB` and print, as JSON, what Hermes shows of it.

    python hermes_view.py DB < '{"queries": ["disk", "中文"]}'

The output (see `read_view`): every session as `get_session`, `get_messages` and
`get_messages_as_conversation` return it; `search_messages` for each query; the session list
the version's picker shows (`list_sessions_rich` with its defaults); the counters; integrity
and FTS5 integrity-check of every FTS table; and the FTS and trigger SQL after Hermes opened
the file (opening may rewrite them). `summarize` condenses a view to what a fixture's manifest
keeps. Standalone on purpose: it runs next to Hermes' code, not the toolkit's.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

SEARCH_QUERIES = ("disk", "terminal", "Lisbon", "pastel", "summary", "backup", "中文", "日本語", "デプロイ")


def integrity(conn: sqlite3.Connection) -> dict[str, str]:
    """integrity_check and the FTS5 integrity-check of every FTS table: "ok" or what went wrong."""
    found = {"integrity_check": "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check"))}
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'"):
        if "fts5" not in sql.lower():
            continue
        try:
            conn.execute(f'INSERT INTO "{name}"("{name}", rank) VALUES(\'integrity-check\', 1)')
            found[name] = "ok"
        except sqlite3.DatabaseError as exc:
            found[name] = str(exc)
    return found


def _schema(conn: sqlite3.Connection) -> dict[str, str]:
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' OR sql LIKE 'CREATE VIRTUAL%'")
    return dict(sorted(rows))


def read_view(db: Any, queries: list[str]) -> dict[str, Any]:
    """What this Hermes `SessionDB` shows of its file."""
    conn = sqlite3.connect(str(db.db_path))
    try:
        ids = [sid for sid, in conn.execute("SELECT id FROM sessions ORDER BY started_at, id")]
        found, schema = integrity(conn), _schema(conn)
    finally:
        conn.close()
    picker = db.list_sessions_rich(limit=10_000)
    return {
        "sessions": {sid: {"session": db.get_session(sid), "messages": db.get_messages(sid),
                           "conversation": db.get_messages_as_conversation(sid)} for sid in ids},
        "search": {q: db.search_messages(q, limit=1000) for q in queries},
        "picker": [row["id"] for row in picker],
        "session_count": db.session_count(),
        "message_count": db.message_count(),
        "integrity": found,
        "schema": schema,
    }


def summarize(view: dict[str, Any]) -> dict[str, Any]:
    """The counts and ids of a view: what a fixture's manifest records of Hermes' own reading."""
    return {
        "session_count": view["session_count"],
        "message_count": view["message_count"],
        "picker": view["picker"],
        "messages": {sid: [m["id"] for m in s["messages"]] for sid, s in view["sessions"].items()},
        "conversation_lengths": {sid: len(s["conversation"]) for sid, s in view["sessions"].items()},
        "search": {q: sorted(hit["id"] for hit in hits) for q, hits in view["search"].items()},
        "integrity": view["integrity"],
        "schema_sha256": hashlib.sha256(json.dumps(view["schema"], sort_keys=True).encode()).hexdigest()[:16],
    }


def main(argv: list[str]) -> int:
    payload = json.loads(sys.stdin.read() or "null") or {}
    stdout, sys.stdout = sys.stdout, sys.stderr  # Hermes' own prints must not mix with the JSON
    import hermes_state

    db = hermes_state.SessionDB(db_path=Path(argv[0]))
    try:
        view = read_view(db, list(payload.get("queries", SEARCH_QUERIES)))
    finally:
        db.close()
    stdout.write(json.dumps(view, default=repr, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
