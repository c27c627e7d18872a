"""A small healthy database, and one way to plant each kind of damage `check` looks for."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from built_files import copy_built
from click.testing import Result
from helpers import file_digests, invoke, set_times

from hermes_state_tools import SessionDB
from hermes_state_tools.core.schema import TRIGGERS

DAY = 86_400
T0 = float(int(time.time()) - 200 * DAY)  # every session started about 200 days ago

# id: (source, parent, started offset, ended, title, message contents)
SESSIONS: dict[str, tuple[str, str | None, float, bool, str | None, tuple[str, ...]]] = {
    "alpha": ("cli", None, 0, True, "Alpha", ("deploy the staging box", "kernel upgrade done", "thanks")),
    "beta": ("telegram", "alpha", 100, True, "Beta", ("continue the deploy", "rollback plan ready")),
    "gamma": ("cli", "beta", 200, False, None, ("where were we",)),
    "delta": ("discord", None, 300, True, "Delta", ("disk usage report", "91 percent full")),
}


def build_healthy(path: Path) -> Path:
    """Four sessions (a three-deep lineage among them), titles, messages with tool calls; closed cleanly
    (built once per process, copied: built_files)."""
    return copy_built("healthy", _build_healthy, path)


def _build_healthy(path: Path) -> Path:
    with SessionDB(path) as db:
        for session_id, (source, parent, offset, ended, title, contents) in SESSIONS.items():
            db.create_session(session_id, source, model="model-" + source, parent_session_id=parent)
            for n, content in enumerate(contents):
                role = "user" if n % 2 == 0 else "assistant"
                calls = [{"id": "c1", "function": {"name": "terminal"}}] * 2 if role == "assistant" else None
                db.append_message(session_id, role, content, tool_calls=calls)
            db.update_token_counts(session_id, input_tokens=100, output_tokens=10, estimated_cost_usd=0.5)
            if title:
                db.set_session_title(session_id, title)
            set_times(db, session_id, started_at=T0 + offset, ended_at=T0 + offset + 50 if ended else None,
                      end_reason="done" if ended else None)
            db._conn.execute("UPDATE messages SET timestamp = ? + id WHERE session_id = ?", (T0 + offset, session_id))
    return path


def raw(path: Path, *statements: str) -> None:
    """Run SQL as a careless old tool would: foreign keys off, no triggers recreated, committed."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys=OFF")
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def _without_trigger(name: str, *statements: str) -> tuple[str, ...]:
    return (f"DROP TRIGGER {name}", *statements, TRIGGERS[name])


def _source_index_page(path: Path) -> tuple[int, int]:
    """(offset, size) of the idx_sessions_source root page, the file checkpointed first."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'idx_sessions_source'").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    return (root - 1) * page_size, page_size


def corrupt_index(path: Path) -> None:
    """Destroy the idx_sessions_source b-tree page (its header kept, its cells zeroed): the index is
    damaged, the table reads whole. (A single changed key is no index damage one can name: the row may as
    well have changed; see test_damage.)"""
    start, page_size = _source_index_page(path)  # (checkpointed: the file holds every page)
    data = bytearray(path.read_bytes())
    data[start + 8:start + page_size] = bytes(page_size - 8)
    path.write_bytes(bytes(data))


def change_index_key(path: Path) -> None:
    """Change one key inside the idx_sessions_source b-tree page: the table and the index disagree, and
    nothing says which one changed."""
    start, page_size = _source_index_page(path)  # (checkpointed: the file holds every page)
    data = bytearray(path.read_bytes())
    at = data.index(b"telegram", start, start + page_size)
    data[at:at + 8] = b"telegrax"
    path.write_bytes(bytes(data))


def _sql(*statements: str) -> Callable[[Path], None]:
    return lambda path: raw(path, *statements)


# The update trigger a Hermes of schema 23 or later writes over a v6 file's index (fixtures/hermes-late).
HERMES_INLINE_UPDATE = (
    "CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, tool_name, tool_calls ON messages BEGIN "
    "DELETE FROM messages_fts WHERE rowid = old.id; INSERT INTO messages_fts(rowid, content) VALUES "
    "(new.id, COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || "
    "COALESCE(new.tool_calls, '')); END")

# name: (plant, the findings it must give as {(kind, session_ids)})
PLANTS: dict[str, tuple[Callable[[Path], None], set[tuple[str, tuple[str, ...]]]]] = {
    "integrity": (corrupt_index, {("integrity", ())}),
    "foreign_key": (_sql("INSERT INTO messages (session_id, role, content, timestamp) "
                         f"VALUES ('ghost', 'user', 'orphaned words', {T0 + 5000})",
                         "INSERT INTO messages (session_id, role, content, timestamp) "
                         f"VALUES ('ghost', 'assistant', 'more orphaned words', {T0 + 4000})"),
                    {("foreign_key", ("ghost",))}),
    "fts_changed": (_sql(*_without_trigger("messages_fts_update",
                                           "UPDATE messages SET content = 'quietly edited' WHERE id = 4")),
                    {("fts_out_of_sync", ("beta",))}),
    "fts_unindexed": (_sql(*_without_trigger(
        "messages_fts_insert",
        f"INSERT INTO messages (session_id, role, content, timestamp) VALUES ('delta', 'user', 'late', {T0 + 900})",
        "UPDATE sessions SET message_count = message_count + 1 WHERE id = 'delta'")),
        {("fts_out_of_sync", ("delta",))}),
    "fts_stale": (_sql(*_without_trigger("messages_fts_delete", "DELETE FROM messages WHERE id = 1",
                                         "UPDATE sessions SET message_count = 2 WHERE id = 'alpha'")),
                  {("fts_out_of_sync", ())}),
    "missing_trigger": (_sql("DROP TRIGGER messages_fts_insert"), {("missing_trigger", ())}),
    "fts_trigger_hazard": (_sql("DROP TRIGGER messages_fts_update", HERMES_INLINE_UPDATE),
                           {("fts_trigger_hazard", ())}),
    "missing_index": (_sql("DROP INDEX idx_sessions_parent"), {("missing_index", ())}),
    "missing_fts_table": (_sql("DROP TABLE messages_fts"), {("missing_index", ())}),
    "lineage_cycle": (_sql("UPDATE sessions SET parent_session_id = 'gamma' WHERE id = 'alpha'"),
                      {("lineage_cycle", ("alpha", "gamma", "beta"))}),
    "missing_parent": (_sql("UPDATE sessions SET parent_session_id = 'vanished' WHERE id = 'delta'"),
                       {("missing_parent", ("delta",))}),
    "counter_mismatch": (_sql("UPDATE sessions SET message_count = 99 WHERE id = 'gamma'",
                              "UPDATE sessions SET tool_call_count = 0 WHERE id = 'delta'"),
                         {("counter_mismatch", ("gamma",)), ("counter_mismatch", ("delta",))}),
    # The unique index is what keeps titles apart: the damage is both a missing index and a duplicate.
    "duplicate_title": (_sql("DROP INDEX idx_sessions_title_unique",
                             "UPDATE sessions SET title = 'Alpha' WHERE id IN ('gamma', 'delta')"),
                        {("duplicate_title", ("alpha", "gamma", "delta")), ("missing_index", ())}),
    # The February 2026 gateway's session_meta lines, written into messages too.
    "foreign_role": (_sql("INSERT INTO messages (session_id, role, content, timestamp) VALUES ('gamma', "
                          f"'session_meta', '{{\"model\": \"meta/model\", \"platform\": \"telegram\"}}', {T0 + 1})",
                          "UPDATE sessions SET message_count = message_count + 1 WHERE id = 'gamma'"),
                     {("foreign_role", ("gamma",))}),
    "version_row_missing": (_sql("DELETE FROM schema_version"), {("schema_version", ())}),
    "version_table_missing": (_sql("DROP TABLE schema_version"), {("schema_version", ())}),
    "version_behind_columns": (_sql("UPDATE schema_version SET version = 5"), {("schema_version", ())}),
    "version_two_rows": (_sql("INSERT INTO schema_version VALUES (6)"), {("schema_version", ())}),
}


def planted(tmp_path: Path, name: str) -> Path:
    """A healthy database with the named damage planted in it (built once per process, copied)."""
    return copy_built(("planted", name), lambda path: PLANTS[name][0](_build_healthy(path)), tmp_path / "state.db")


def found(findings: list[Any]) -> set[tuple[str, tuple[str, ...]]]:
    """Findings (objects or report dicts) as comparable (kind, session_ids) pairs."""
    pairs = set()
    for f in findings:
        kind, ids = (f["kind"], f["session_ids"]) if isinstance(f, dict) else (f.kind, f.session_ids)
        pairs.add((kind, tuple(ids)))
    return pairs


def unchanged(path: Path, before: dict[str, str]) -> bool:
    """The file's digests are as `before` (file_digests leaves out an empty -wal a reader may create)."""
    return file_digests(path) == before


def counts(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(str(path))
    try:
        return (conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0],
                conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def cli(*args: Any, input: str | None = None) -> Result:
    """`hermes-state ARGS` in-process, stdout and stderr kept apart."""
    return invoke(*args, input=input)


def cli_json(*args: Any) -> tuple[int, dict[str, Any]]:
    """`hermes-state ARGS --json`: the exit code and the one JSON document on stdout."""
    result = cli(*args, "--json")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert len(result.stdout.splitlines()) == 1, result.stdout
    return result.exit_code, json.loads(result.stdout)
