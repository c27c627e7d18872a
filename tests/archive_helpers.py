"""Stores the archive tests push: three hosts' worth of sessions with CJK, tool calls, multimodal
content, lineage, extra data, a later layout's columns and values PostgreSQL's types cannot hold."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from import_helpers import cli

from hermes_state_tools import SessionDB


def build_store(path: Path, prefix: str = "s", *, sessions: int = 3, messages: int = 4) -> Path:
    """A store of `sessions` sessions (ids `{prefix}0`, ...) of `messages` messages each, the second a
    child of the first; CJK text, a tool call and a multimodal message in each."""
    with SessionDB(path) as db:
        for n in range(sessions):
            sid = f"{prefix}{n}"
            db.create_session(sid, "telegram" if n % 2 else "cli", model="gpt-x",
                              parent_session_id=f"{prefix}0" if n == 1 else None)
            for k in range(messages):
                if k % 4 == 0:
                    db.append_message(sid, "user", f"deploy nginx server {n}-{k} 東京の天気は晴れ")
                elif k % 4 == 1:
                    db.append_message(sid, "assistant", "calling a tool", tool_calls=[
                        {"id": f"c{k}", "type": "function", "function": {"name": "shell", "arguments": "{}"}}])
                elif k % 4 == 2:
                    db.append_message(sid, "tool", f"disk usage report {k}", tool_name="shell", tool_call_id=f"c{k}")
                else:
                    db.append_message(sid, "assistant", [{"type": "text", "text": f"picture {k}"},
                                                         {"type": "image_url", "image_url": {"url": "data:x"}}])
            db.set_session_title(sid, f"title {prefix}{n}")
            if n == 0:
                db.end_session(sid, "done")
    return path


def add_later_layout(path: Path) -> None:
    """Columns of a later Hermes layout, with values, and values no PostgreSQL column type holds."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0")
        conn.execute("ALTER TABLE sessions ADD COLUMN cwd TEXT")
        conn.execute("ALTER TABLE messages ADD COLUMN active INTEGER NOT NULL DEFAULT 1")
        conn.execute("ALTER TABLE messages ADD COLUMN reasoning_content TEXT")
        conn.execute("UPDATE sessions SET cwd = '/home/x', archived = 1 WHERE rowid = 1")
        conn.execute("UPDATE messages SET reasoning_content = 'thought', active = 0 WHERE id = 2")
        conn.execute("UPDATE messages SET token_count = 'many' WHERE id = 3")  # text in an INTEGER column
        conn.execute("UPDATE messages SET reasoning = ? WHERE id = 4", ("a\x00b",))  # a NUL PostgreSQL text refuses
        conn.execute("UPDATE messages SET tool_call_id = x'00ff' WHERE id = 1")  # a blob
    conn.close()


def add_extras(path: Path, session_id: str) -> None:
    """The toolkit's own extra data for a session and its first message (as an import leaves it)."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE IF NOT EXISTS hst_session_extra (session_id TEXT PRIMARY KEY, data TEXT NOT NULL)")
        conn.execute("CREATE TABLE IF NOT EXISTS hst_message_extra "
                     "(message_id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, data TEXT NOT NULL)")
        conn.execute("INSERT INTO hst_session_extra VALUES (?, ?)", (session_id, json.dumps({"mirror": True})))
        first = conn.execute("SELECT min(id) FROM messages WHERE session_id = ?", (session_id,)).fetchone()[0]
        conn.execute("INSERT INTO hst_message_extra VALUES (?, ?, ?)",
                     (first, session_id, json.dumps({"message_id": "tg-1", "odd": "nul \u0000 kept"})))
    conn.close()


def run(*args: Any) -> tuple[int, Any, str]:
    """`hermes-state ARGS` in-process: exit code, stdout (parsed when JSON), stderr."""
    result = cli(*args)
    assert "Traceback" not in result.stderr, result.stderr
    out: Any = result.stdout
    if "--json" in [str(a) for a in args] and out.strip():
        out = json.loads(out)
    return result.exit_code, out, result.stderr


def push(db: Path, url: str, host: str) -> dict[str, Any]:
    code, doc, err = run("--db", db, "archive", "push", url, "--host", host, "--json")
    assert code == 0, err
    assert isinstance(doc, dict)
    return doc


def archive_dump(url: str) -> dict[str, Any]:
    """Everything an archive holds but push times: hosts' marks and layouts, every row's hash and columns."""
    import psycopg

    with psycopg.connect(url) as conn:
        hosts = conn.execute("SELECT host, message_mark, session_columns, message_columns FROM hermes.hosts "
                             "ORDER BY host").fetchall()
        sessions = conn.execute("SELECT to_jsonb(s) FROM hermes.sessions s ORDER BY host, id").fetchall()
        messages = conn.execute("SELECT to_jsonb(m) - 'tsv' FROM hermes.messages m ORDER BY host, local_id").fetchall()
    return {"hosts": hosts, "sessions": sessions, "messages": messages}
