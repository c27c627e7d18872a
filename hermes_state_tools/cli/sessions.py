"""`hermes-state sessions list|show|lineage|stats`: read-only browsing."""

from __future__ import annotations

from typing import Any

import click

from hermes_state_tools.cli import main
from hermes_state_tools.cli.base import common_options, emit, settings, when
from hermes_state_tools.core.jsonutil import content_text
from hermes_state_tools.views.sessions import list_sessions, session_lineage, show_session, usage_stats

_STAT_COLUMNS = (
    ("sessions", "sessions"), ("messages", "messages"), ("input", "input_tokens"), ("output", "output_tokens"),
    ("cache read", "cache_read_tokens"), ("cache write", "cache_write_tokens"), ("reasoning", "reasoning_tokens"),
    ("est. $", "estimated_cost_usd"), ("actual $", "actual_cost_usd"),
)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Left-aligned columns two spaces apart."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in (header, *rows)]


@main.group()
def sessions() -> None:
    """Browse sessions: list, show, lineage, token and cost totals.

    \b
    Examples:
      hermes-state sessions list --source telegram --limit 5
      hermes-state sessions show 20260310_1842
      hermes-state sessions lineage 20260310_1842 --json
      hermes-state sessions stats
    """


def _human_list(doc: dict[str, Any]) -> str:
    if not doc["sessions"]:
        return "no sessions"
    rows = [[s["id"], when(s["started_at"]), s["source"], s.get("title") or "-", str(s["message_count"] or 0),
             s["preview"]] for s in doc["sessions"]]
    return "\n".join(_table(["id", "started", "source", "title", "messages", "preview"], rows))


@sessions.command("list")
@click.option("--source", metavar="NAME", help="Only sessions of this source.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100_000))
@common_options()
def list_(source: str | None, limit: int, as_json: bool) -> None:
    """List conversations newest first, with a preview.

    Compressed conversations are shown as their live continuation.

    \b
    Examples:
      hermes-state sessions list
      hermes-state sessions list --source discord --limit 50 --json
    """
    emit({"ok": True, "sessions": list_sessions(settings().db, source, limit)}, _human_list)


def _human_message(message: dict[str, Any]) -> list[str]:
    text = content_text(message["content"]) if message["content"] is not None else ""
    lines = [f"[{when(message['timestamp'])}] {message['role']}"
             + (f" ({message['tool_name']})" if message.get("tool_name") else "") + ":"]
    lines += ["    " + line for line in text.splitlines()]
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        names = [str((c.get("function") or {}).get("name") or c.get("name") or "?") if isinstance(c, dict) else "?"
                 for c in calls]
        lines.append(f"    tool calls: {', '.join(names)}")
    return lines


def _human_show(doc: dict[str, Any]) -> str:
    s = doc["session"]
    lines = [f"session {s['id']}  source {s['source']}  model {s.get('model') or '-'}",
             f"started {when(s['started_at'])}  ended {when(s['ended_at'])}"
             + (f" ({s['end_reason']})" if s.get("end_reason") else ""),
             f"title: {s.get('title') or '-'}  parent: {s.get('parent_session_id') or '-'}",
             f"{len(doc['messages'])} messages:"]
    for message in doc["messages"]:
        lines += _human_message(message)
    return "\n".join(lines)


@sessions.command()
@click.argument("session_id", metavar="ID")
@common_options()
def show(session_id: str, as_json: bool) -> None:
    """Show one session (exact id or unique prefix) and its messages.

    \b
    Examples:
      hermes-state sessions show 20260310_184211_a1c4e9b2
      hermes-state sessions show 20260310_18 --json
    """
    emit({"ok": True, **show_session(settings().db, session_id)}, _human_show)


def _line(s: dict[str, Any]) -> str:
    if s.get("missing"):
        return f"{s['id']}  (does not exist)"
    return f"{s['id']}  {when(s['started_at'])}  {s['source']}  {s.get('title') or '-'}"


def _human_lineage(doc: dict[str, Any]) -> str:
    lines = ["ancestors (nearest first):"] + [f"  {_line(a)}" for a in doc["ancestors"]] if doc["ancestors"] else []
    lines += [f"* {_line(doc['session'])}"]
    lines += [f"{'  ' * d['depth']}{_line(d)}" for d in doc["descendants"]]
    if doc["cycle"]:
        lines.append("warning: the parent links form a cycle (hermes-state repair breaks it)")
    return "\n".join(lines)


@sessions.command()
@click.argument("session_id", metavar="ID")
@common_options()
def lineage(session_id: str, as_json: bool) -> None:
    """Show a session's ancestors and descendants.

    Follows parent links up and child links down (compression continuations, sub-agents),
    bounded and safe against cycles.

    \b
    Examples:
      hermes-state sessions lineage 20260310_184211_a1c4e9b2
      hermes-state sessions lineage 20260310_18 --json
    """
    emit({"ok": True, **session_lineage(settings().db, session_id)}, _human_lineage)


def _stat_cells(group: dict[str, Any]) -> list[str]:
    cells = []
    for _, key in _STAT_COLUMNS:
        value = group[key]
        cells.append("-" if value is None else f"{value:,.4f}" if key.endswith("_usd") else f"{value:,}")
    return cells


def _human_stats(doc: dict[str, Any]) -> str:
    header = [label for label, _ in _STAT_COLUMNS]
    lines = _table(["", *header], [["total", *_stat_cells(doc["totals"])]])
    for title, key in (("by model", "model"), ("by source", "source")):
        rows = [[str(group[key] or "-"), *_stat_cells(group)] for group in doc[f"by_{key}"]]
        lines += ["", title + ":", *_table([key, *header], rows)]
    return "\n".join(lines)


@sessions.command()
@common_options()
def stats(as_json: bool) -> None:
    """Token and cost totals by model and by source.

    \b
    Examples:
      hermes-state sessions stats
      hermes-state --db ~/.hermes/state.db sessions stats --json
    """
    emit({"ok": True, **usage_stats(settings().db)}, _human_stats)
