"""Browsing a database read-only: the session list, one session, its lineage, token and cost totals."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_state_tools.core.layouts import delegate_child, read_layout
from hermes_state_tools.core.reports import Report
from hermes_state_tools.core.schema import table_columns
from hermes_state_tools.errors import SessionIdError, UnknownSourceError
from hermes_state_tools.store.opening import reading
from hermes_state_tools.tables import extras, lineage, messages, session_list, sessions
from hermes_state_tools.tables.titles import escape_like

_SUMMARY = ("id", "parent_session_id", "source", "title", "model", "started_at", "ended_at", "end_reason",
            "message_count")
_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
_COSTS = ("estimated_cost_usd", "actual_cost_usd")
_WITH_MESSAGE_COUNTS = (
    "FROM sessions s LEFT JOIN (SELECT session_id, COUNT(*) AS n FROM messages GROUP BY session_id) mc "
    "ON mc.session_id = s.id"
)


_LISTED_MATCHES = 10


# The reports of `sessions list/show/lineage/stats`: each field a key of the command's --json, in order
# (`ok` first); the rows inside stay the dicts the session and message tables give.
@dataclass(frozen=True, kw_only=True)
class SessionListReport(Report):
    ok: bool = True
    sessions: tuple[dict[str, Any], ...]
    total: int


@dataclass(frozen=True, kw_only=True)
class SessionReport(Report):
    ok: bool = True
    session: dict[str, Any] | None
    messages: tuple[dict[str, Any], ...]


@dataclass(frozen=True, kw_only=True)
class LineageReport(Report):
    ok: bool = True
    session: dict[str, Any]
    root_id: str
    ancestors: tuple[dict[str, Any], ...]
    descendants: tuple[dict[str, Any], ...]
    cycle: bool


@dataclass(frozen=True, kw_only=True)
class UsageReport(Report):
    ok: bool = True
    totals: dict[str, Any]
    by_model: tuple[dict[str, Any], ...]
    by_source: tuple[dict[str, Any], ...]


def _ambiguous(what: str, matches: list[str]) -> SessionIdError:
    shown = ", ".join(matches[:_LISTED_MATCHES])
    more = f" and {len(matches) - _LISTED_MATCHES:,} more" if len(matches) > _LISTED_MATCHES else ""
    return SessionIdError(f"{what} matches {len(matches):,} sessions: {shown}{more}; give more of the id")


def _by_last_part(conn: sqlite3.Connection, text: str) -> list[str]:
    """Ids whose part after the last `_` starts with `text` (`c0ffee12` of `20260519_140233_c0ffee12`)."""
    rows = conn.execute("SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at, id",
                        ("%\\_" + escape_like(text) + "%",))
    return [row[0] for row in rows if row[0].rsplit("_", 1)[-1].startswith(text)]


def resolve(conn: sqlite3.Connection, id_or_prefix: str) -> str:
    """The session an exact id, a unique prefix, or the unique hex part of an id names;
    SessionIdError naming the candidates when several match, or when none does."""
    found = sessions.resolve_id(conn, id_or_prefix)
    if found is not None:
        return found
    if not id_or_prefix.strip():
        raise SessionIdError("no session id given")
    prefixed = [row[0] for row in conn.execute(
        "SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY started_at, id",
        (escape_like(id_or_prefix) + "%",))]
    if prefixed:
        raise _ambiguous(f"session id prefix {id_or_prefix!r}", prefixed)
    by_part = _by_last_part(conn, id_or_prefix) if "_" not in id_or_prefix else []
    if len(by_part) == 1:
        return by_part[0]
    if by_part:
        raise _ambiguous(f"id part {id_or_prefix!r}", by_part)
    raise SessionIdError(f"no session with id, unique id prefix or id part {id_or_prefix!r}")


def known_sources(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT DISTINCT source FROM sessions ORDER BY source")]


def missing_sources(conn: sqlite3.Connection, wanted: list[str] | None) -> list[str]:
    """For each of these sources no session has, the line that says so and names those there are."""
    known = known_sources(conn) if wanted else []
    listed = ", ".join(known) if known else "none: the database has no sessions"
    return [f"no session has source {source!r} (known sources: {listed})"
            for source in wanted or () if source not in known]


def require_sources(conn: sqlite3.Connection, wanted: list[str] | None) -> None:
    """A --source no session has is a mistake worth saying, not an empty result."""
    if missing := missing_sources(conn, wanted):
        raise UnknownSourceError(missing[0])


def _with_chain(conn: sqlite3.Connection, item: dict[str, Any]) -> dict[str, Any]:
    """A compression chain shown as its tip: also how many sessions and messages the chain holds
    and when it started, the same sessions `lineage` lists above the tip."""
    root_id = item.pop("_lineage_root_id", None)
    if root_id is None:
        return {**item, "chain_sessions": 1, "chain_started_at": item.get("started_at"),
                "chain_message_count": item.get("message_count") or 0}
    chain = [item["id"], *lineage.ancestors(conn, item["id"])]
    chain = chain[:chain.index(root_id) + 1] if root_id in chain else chain
    placeholders = ",".join("?" * len(chain))
    total = conn.execute(f"SELECT COUNT(*) FROM messages WHERE session_id IN ({placeholders})", chain).fetchone()[0]
    return {**item, "lineage_root_id": root_id, "chain_sessions": len(chain),
            "chain_started_at": item.get("started_at"), "chain_message_count": total}


def list_page(path: Path, source: str | None = None, limit: int = 20, show_all: bool = False) -> SessionListReport:
    """One page of the session list (top-level conversations newest first, with preview), and how many
    top-level conversations there are in all, with the children its Hermes lists as conversations of
    their own (a /branch session; after 17, a reset's); sessions the file's Hermes keeps out of its
    lists (archived and hidden ones, a subagent's) are left out unless `show_all`, which also lists
    the subagents' sessions that have a parent."""
    with reading(path, allow_newer=True) as conn:
        require_sources(conn, [source] if source else None)
        file = read_layout(conn)
        listed = "" if show_all else file.listed_sessions()
        children = " OR ".join(filter(None, (file.listed_children("s"), delegate_child("s") if show_all else "")))
        items = session_list.list_rich(conn, source=source, limit=limit, listed=listed, also_children=children)
        where, params = ("AND s.source = ?", [source]) if source else ("", [])
        where += f" AND {listed}" if listed else ""
        top = f"(s.parent_session_id IS NULL OR {children})" if children else "s.parent_session_id IS NULL"
        total = conn.execute(f"SELECT COUNT(*) FROM sessions s WHERE {top} {where}", params).fetchone()[0]
        return SessionListReport(sessions=tuple(_with_chain(conn, item) for item in items), total=total)


def show_session(path: Path, id_or_prefix: str, show_all: bool = False) -> SessionReport:
    """One session's row and its messages in order, each with the extra data an import kept
    (`mirror`: the message was copied from another platform's conversation); the messages the file's
    Hermes keeps out of the conversation (rewound, compacted away) are left out unless `show_all`."""
    with reading(path, allow_newer=True) as conn:
        session_id = resolve(conn, id_or_prefix)
        shown = "" if show_all else read_layout(conn).shown_messages("messages")
        found = messages.get_all(conn, session_id, shown)
        kept = extras.message_extras(conn, session_id) if extras.present(conn) else {}
        for message in found:
            extra = kept.get(message["id"], {})
            if extra.get("mirror"):
                message["mirror"] = True
                message["mirror_source"] = extra.get("mirror_source")
        return SessionReport(session=sessions.get(conn, session_id), messages=tuple(found))


def _summary(conn: sqlite3.Connection, session_id: str) -> dict[str, Any]:
    """The few fields a lineage shows; `missing` for a parent id that names no session."""
    row = sessions.get(conn, session_id)
    if row is None:
        return {"id": session_id, "missing": True}
    return {key: row.get(key) for key in _SUMMARY}


def session_lineage(path: Path, id_or_prefix: str) -> LineageReport:
    """Ancestors (nearest first; `root_id` the top) and descendants (with depth); bounded, cycle-safe."""
    with reading(path, allow_newer=True) as conn:
        session_id = resolve(conn, id_or_prefix)
        up = lineage.ancestors(conn, session_id)
        down = lineage.descendants(conn, session_id)
        top = sessions.get(conn, up[-1] if up else session_id)
        cycle = top is not None and top["parent_session_id"] in {session_id, *up}
        return LineageReport(
            session=_summary(conn, session_id),
            root_id=up[-1] if up else session_id,
            ancestors=tuple(_summary(conn, ancestor) for ancestor in up),
            descendants=tuple({**_summary(conn, d["id"]), "depth": d["depth"]} for d in down),
            cycle=cycle,
        )


def _sums(conn: sqlite3.Connection) -> str:
    """SELECT terms for the totals; columns an older schema lacks count as 0 (tokens) or unknown (cost)."""
    present = table_columns(conn, "sessions")
    terms = ["COUNT(*) AS sessions", "COALESCE(SUM(mc.n), 0) AS messages"]
    terms += [f"COALESCE(SUM(s.{c}), 0) AS {c}" if c in present else f"0 AS {c}" for c in _TOKENS]
    terms += [f"SUM(s.{c}) AS {c}" if c in present else f"NULL AS {c}" for c in _COSTS]
    return ", ".join(terms)


def _grouped(conn: sqlite3.Connection, column: str) -> tuple[dict[str, Any], ...]:
    """The totals for each value of `column` (model or source), most sessions first."""
    rows = conn.execute(
        f"SELECT s.{column} AS {column}, {_sums(conn)} {_WITH_MESSAGE_COUNTS} "
        f"GROUP BY s.{column} ORDER BY sessions DESC, s.{column}"
    )
    return tuple(dict(row) for row in rows)


def usage_stats(path: Path) -> UsageReport:
    """Sessions, messages, tokens and cost: in total, by model and by source."""
    with reading(path, allow_newer=True) as conn:
        conn.execute("BEGIN")  # the three totals from one snapshot
        try:
            totals = dict(conn.execute(f"SELECT {_sums(conn)} {_WITH_MESSAGE_COUNTS}").fetchone())
            return UsageReport(totals=totals, by_model=_grouped(conn, "model"), by_source=_grouped(conn, "source"))
        finally:
            conn.execute("ROLLBACK")
