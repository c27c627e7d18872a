"""`browse`: Datasette on a state.db, read-only, with the metadata it needs to find the search index.

Datasette does not recognise the v6 FTS table (declared with an unquoted `content=messages`), so
the `messages` table had no search box and `?_search=` returned every row; `fts_table` and
`fts_pk` in the metadata fix that. Datasette is the optional `[browse]` extra.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from hermes_state_tools.store.opening import require_supported

HOST = "127.0.0.1"
DEFAULT_PORT = 8001
_WAL_FORMAT = 2  # the file format write version in byte 18 of the header: 2 = WAL
_HIDDEN = ("messages_fts", "schema_version", "hst_messages_trigram", "hst_messages_trigram_state")
_QUERIES: dict[str, dict[str, str]] = {
    'sessions_with_preview': {
        'title': "Sessions with preview",
        'description': "Newest sessions first, with the first user message.",
        'sql': (
            "select s.id, datetime(s.started_at, 'unixepoch', 'localtime') as started, s.source, s.model, "
            "s.title, s.message_count, s.parent_session_id, (select substr(replace(m.content, char(10), ' '),"
            " 1, 80) from messages m where m.session_id = s.id and m.role = 'user' and m.content is not null "
            "order by m.timestamp, m.id limit 1) as preview from sessions s where (:source = '' or s.source ="
            " :source) order by s.started_at desc limit 200"
        ),
    },
    'lineage': {
        'title': "Lineage of a session",
        'description': "Ancestors (root first, negative depth), the session (depth 0) and descendants.",
        'sql': (
            "with recursive up(id, parent_session_id, depth) as (select id, parent_session_id, 0 from "
            "sessions where id = :session_id union all select s.id, s.parent_session_id, up.depth - 1 from "
            "sessions s join up on s.id = up.parent_session_id where up.depth > -10000), down(id, "
            "parent_session_id, depth) as (select id, parent_session_id, 0 from sessions where id = "
            ":session_id union all select s.id, s.parent_session_id, down.depth + 1 from sessions s join down"
            " on s.parent_session_id = down.id where down.depth < 10000) select x.depth, s.id, "
            "datetime(s.started_at, 'unixepoch', 'localtime') as started, s.source, s.title, s.end_reason "
            "from (select id, depth from up union select id, depth from down) x join sessions s on s.id = "
            "x.id order by x.depth, s.started_at"
        ),
    },
    'tokens_by_model': {
        'title': "Tokens and cost by model",
        'sql': (
            "select coalesce(model, '-') as model, count(*) as sessions, sum(input_tokens) as input_tokens, "
            "sum(output_tokens) as output_tokens, sum(cache_read_tokens) as cache_read_tokens, "
            "sum(cache_write_tokens) as cache_write_tokens, sum(reasoning_tokens) as reasoning_tokens, "
            "round(sum(estimated_cost_usd), 4) as estimated_cost_usd, round(sum(actual_cost_usd), 4) as "
            "actual_cost_usd from sessions group by model order by sessions desc"
        ),
    },
    'search_text': {
        'title': "Search any text (CJK included, substring)",
        'description': (
            "Messages containing the text literally, newest first. The search box above matches whole words "
            "only."
        ),
        'sql': (
            "select m.id, m.session_id, m.role, datetime(m.timestamp, 'unixepoch', 'localtime') as at, "
            "substr(m.content, max(1, instr(m.content, :text) - 60), 200) as excerpt from messages m where "
            ":text != '' and instr(m.content, :text) > 0 order by m.id desc limit 100"
        ),
    },
}


def datasette_installed() -> bool:
    return importlib.util.find_spec("datasette") is not None


def metadata(db_path: Path, version: int | None = None) -> dict[str, Any]:
    """Datasette metadata for this file: its database key is the file's stem (`state` for state.db);
    `version`, the file's schema version, is named in the description."""
    tables: dict[str, Any] = {
        "messages": {"fts_table": "messages_fts", "fts_pk": "id", "facets": ["role", "tool_name"],
                     "sort_desc": "timestamp", "label_column": "content"},
        "sessions": {"facets": ["source", "model", "end_reason"], "sort_desc": "started_at",
                     "label_column": "title"},
        **{name: {"hidden": True} for name in _HIDDEN},
    }
    return {"title": "Hermes Agent state.db",
            "description": "Read-only view of a Hermes Agent conversation store"
                           f"{'' if version is None else f' (schema {version})'}, served by hermes-state browse.",
            "databases": {db_path.stem: {"tables": tables, "queries": _QUERIES}}}


def file_metadata(db_path: Path) -> dict[str, Any]:
    """`metadata` of an existing Hermes file: a missing or foreign one is refused (exit 2), as every
    command but import refuses it."""
    return metadata(db_path, require_supported(db_path, allow_newer=True))


def immutable(db_path: Path) -> bool:
    """Whether Datasette may open the file `immutable` (no locking, faster): only a file that is
    not in WAL mode, such as a `hermes-state backup` copy. Hermes keeps its live store in WAL
    mode and may write while the server runs; an immutable reader would miss those commits or
    misread pages that change under it. (Whether some process has the file open cannot be told
    from its -wal/-shm files: any reader leaves them behind.)"""
    with db_path.open("rb") as handle:
        header = handle.read(20)
    return len(header) == 20 and header[18] != _WAL_FORMAT


def datasette_command(db_path: Path, metadata_file: Path, port: int, extra: list[str] | None = None,
                      force_immutable: bool = False) -> list[str]:
    """`python -m datasette serve` on 127.0.0.1, read-only (a plain file is opened mode=ro)."""
    require_supported(db_path, allow_newer=True)  # a missing or foreign file is refused before a server starts
    target = ["-i", str(db_path)] if force_immutable or immutable(db_path) else [str(db_path)]
    return [sys.executable, "-m", "datasette", "serve", *target, "-m", str(metadata_file),
            "--host", HOST, "--port", str(port), "--setting", "sql_time_limit_ms", "3000",
            "--setting", "facet_time_limit_ms", "500", *(extra or [])]
