"""`SessionDB`: the facade over the store's modules, holding the connection, lock and write runner."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hermes_state_tools.core.connection import (
    _CHECKPOINT_EVERY_N_WRITES,
    _WRITE_MAX_RETRIES,
    _WRITE_RETRY_MAX_S,
    _WRITE_RETRY_MIN_S,
    WriteRunner,
)
from hermes_state_tools.core.layouts import known_versions
from hermes_state_tools.core.paths import default_db_path
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.store.opening import open_store
from hermes_state_tools.tables import (
    deleting,
    lineage,
    messages,
    session_export,
    session_list,
    sessions,
    titles,
)

T = TypeVar("T")


@dataclass(frozen=True)
class WriteHandle:
    """A store's connection and its write runner (SessionDB.handle)."""

    conn: sqlite3.Connection
    runner: WriteRunner


class SessionDB:
    """The Hermes session store (state.db, schema v6): sessions, messages, titles, search."""

    _WRITE_MAX_RETRIES = _WRITE_MAX_RETRIES
    _WRITE_RETRY_MIN_S = _WRITE_RETRY_MIN_S
    _WRITE_RETRY_MAX_S = _WRITE_RETRY_MAX_S
    _CHECKPOINT_EVERY_N_WRITES = _CHECKPOINT_EVERY_N_WRITES
    MAX_TITLE_LENGTH = titles.MAX_TITLE_LENGTH

    def __init__(self, db_path: Path | str | None = None, *, schema: int = SCHEMA_VERSION,
                 _proven: bool = False) -> None:
        # schema (this library's, not Hermes' contract): the layout a new file is created in, 6 or a later
        # Hermes' (core/layouts.py); an existing file keeps its own.
        if schema not in known_versions():
            raise ValueError(f"no known layout for schema {schema} (known: {', '.join(map(str, known_versions()))})")
        # _proven (this library's own import, not Hermes' contract): the file passed require_sound
        # a moment ago, so opening it skips a second quick_check (about 0.1 s per 50 MB).
        self.db_path = Path(db_path).expanduser() if db_path is not None else default_db_path()
        # Contention policy: instead of SQLite's usual 30 s busy wait, a 1 s busy timeout plus
        # jittered application-level retries (see connection.py), so writers never convoy.
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        conn, self._writer, self.upgrade_report = open_store(self.db_path, self._lock, _proven, schema)
        self._conn = conn

    # -- plumbing -----------------------------------------------------------------
    @property
    def handle(self) -> WriteHandle:
        """The open connection and its write runner, for this library's own pipelines (import, merge,
        the first build): reads on `conn`, every write through `runner.run`, one transaction each."""
        if self._conn is None:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        return WriteHandle(self._conn, self._writer)

    def _write(self, fn: Callable[..., T], *args: Any) -> T:
        return self._writer.run(fn, *args)

    def _read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._lock:
            if self._conn is None:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            return fn(self._conn, *args, **kwargs)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    pass  # housekeeping only; closing must not fail because a reader is busy
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SessionDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions -----------------------------------------------------------------
    def create_session(self, session_id: str, source: str, model: str | None = None,
                       model_config: dict[str, Any] | None = None, system_prompt: str | None = None,
                       user_id: str | None = None, parent_session_id: str | None = None) -> str:
        return self._write(sessions.create, session_id, source, model, model_config, system_prompt,
                           user_id, parent_session_id)

    def ensure_session(self, session_id: str, source: str = "unknown", model: str | None = None) -> str:
        return self._write(sessions.create, session_id, source, model)

    def end_session(self, session_id: str, end_reason: str) -> None:
        self._write(sessions.end, session_id, end_reason)

    def reopen_session(self, session_id: str) -> None:
        self._write(sessions.reopen, session_id)

    def update_system_prompt(self, session_id: str, system_prompt: str | None) -> None:
        self._write(sessions.update_system_prompt, session_id, system_prompt)

    def update_token_counts(self, session_id: str, input_tokens: int = 0, output_tokens: int = 0,
                            model: str | None = None, cache_read_tokens: int = 0,
                            cache_write_tokens: int = 0, reasoning_tokens: int = 0,
                            estimated_cost_usd: float | None = None, actual_cost_usd: float | None = None,
                            cost_status: str | None = None, cost_source: str | None = None,
                            pricing_version: str | None = None, billing_provider: str | None = None,
                            billing_base_url: str | None = None, billing_mode: str | None = None,
                            absolute: bool = False) -> None:
        values = {k: v for k, v in locals().items() if k not in ("self", "session_id", "absolute")}
        self._write(sessions.update_token_counts, session_id, values, absolute)

    def get_session(self, session_id: str) -> dict[str, Any] | None:
        return self._read(sessions.get, session_id)

    def resolve_session_id(self, id_or_prefix: str) -> str | None:
        return self._read(sessions.resolve_id, id_or_prefix)

    def search_sessions(self, source: str | None = None, limit: int = 20, offset: int = 0) -> list[dict[str, Any]]:
        return self._read(sessions.search, source, limit, offset)

    def session_count(self, source: str | None = None) -> int:
        return self._read(sessions.count, source)

    def message_count(self, session_id: str | None = None) -> int:
        return self._read(messages.count, session_id)

    def list_sessions_rich(self, source: str | None = None, exclude_sources: list[str] | None = None,
                           limit: int = 20, offset: int = 0, include_children: bool = False,
                           project_compression_tips: bool = True) -> list[dict[str, Any]]:
        return self._read(session_list.list_rich, source, exclude_sources, limit, offset, include_children,
                          project_compression_tips)

    def get_compression_tip(self, session_id: str) -> str:
        return self._read(lineage.compression_tip, session_id)

    # -- messages -----------------------------------------------------------------
    def append_message(self, session_id: str, role: str, content: Any = None, tool_name: str | None = None,
                       tool_calls: Any = None, tool_call_id: str | None = None, token_count: int | None = None,
                       finish_reason: str | None = None, reasoning: str | None = None,
                       reasoning_details: Any = None, codex_reasoning_items: Any = None) -> int:
        return self._write(messages.append, session_id, role, content, tool_name, tool_calls, tool_call_id,
                           token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items)

    def get_messages(self, session_id: str) -> list[dict[str, Any]]:
        return self._read(messages.get_all, session_id)

    def get_messages_as_conversation(self, session_id: str) -> list[dict[str, Any]]:
        return self._read(messages.as_conversation, session_id)

    def clear_messages(self, session_id: str) -> None:
        self._write(messages.clear, session_id)

    # -- titles -------------------------------------------------------------------
    @staticmethod
    def sanitize_title(title: str | None) -> str | None:
        return titles.clean_title(title)

    def set_session_title(self, session_id: str, title: str | None) -> bool:
        return self._write(titles.set_title, session_id, title)

    def get_session_title(self, session_id: str) -> str | None:
        row = self.get_session(session_id)
        return row["title"] if row else None

    def get_session_by_title(self, title: str) -> dict[str, Any] | None:
        return self._read(lambda c: dict(r) if (r := c.execute(
            "SELECT * FROM sessions WHERE title = ?", (title,)).fetchone()) else None)

    def resolve_session_by_title(self, title: str) -> str | None:
        return self._read(titles.resolve_by_title, title)

    def get_next_title_in_lineage(self, title: str) -> str:
        return self._read(titles.next_title_in_lineage, title)

    # -- search -------------------------------------------------------------------
    # The search modules load on first use: compiling the sanitizer's patterns (its CJK ranges) costs
    # about 16 ms, which a process that only writes (the importer's writer, Hermes' gateway) never needs.
    @staticmethod
    def _sanitize_fts5_query(query: str) -> str:
        from hermes_state_tools.search import sanitize

        return sanitize.sanitize_fts5_query(query)

    @staticmethod
    def _contains_cjk(text: str) -> bool:
        from hermes_state_tools.search import sanitize

        return sanitize.contains_cjk(text)

    def search_messages(self, query: str, source_filter: list[str] | None = None,
                        exclude_sources: list[str] | None = None, role_filter: list[str] | None = None,
                        limit: int = 20, offset: int = 0) -> list[dict[str, Any]]:
        from hermes_state_tools.search import query as search_query

        return self._read(search_query.search_messages, query, source_filter, exclude_sources, role_filter,
                          limit, offset)

    # -- export and clean-up ------------------------------------------------------
    def export_session(self, session_id: str) -> dict[str, Any] | None:
        return self._read(session_export.export_session, session_id)

    def export_all(self, source: str | None = None) -> list[dict[str, Any]]:
        return self._read(lambda c: list(session_export.iter_export(c, source)))

    def prune_sessions(self, older_than_days: float = 90, source: str | None = None) -> int:
        return self._write(deleting.prune, older_than_days, source)[0]

    def delete_session(self, session_id: str) -> bool:
        return self._write(deleting.delete, session_id)
