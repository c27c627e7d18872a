"""`hermes-state sessions list|show|lineage|stats`: read-only browsing."""

from __future__ import annotations

from typing import Any

import click

from hermes_state_tools.cli import main, render
from hermes_state_tools.cli.base import common_options, emit, plural, settings, when
from hermes_state_tools.core.jsonutil import content_text
from hermes_state_tools.views.sessions import list_page, session_lineage, show_session, usage_stats
from hermes_state_tools.views.transcript import tool_text

_STAT_COLUMNS = (
    ("sessions", "sessions"), ("messages", "messages"), ("input", "input_tokens"), ("output", "output_tokens"),
    ("cache read", "cache_read_tokens"), ("cache write", "cache_write_tokens"), ("reasoning", "reasoning_tokens"),
    ("est. $", "estimated_cost_usd"), ("actual $", "actual_cost_usd"),
)


def _table(header: list[str], rows: list[list[str]], shrink: tuple[int, ...] = (),
           drop: tuple[int, ...] = ()) -> list[str]:
    """Columns in display width (CJK, emoji), fitted to the terminal by shrinking `shrink`."""
    return render.table(header, rows, render.terminal_width(), shrink, colour=render.use_colour(), drop=drop)


def _minute(epoch: float | None) -> str:
    return when(epoch)[:16]


@main.group()
@common_options(json_output=False)  # `sessions --db x.db list` too: --db goes before or after a command
def sessions() -> None:
    """Browse sessions: list, show, lineage, token and cost totals.

    \b
    Examples:
      hermes-state sessions list --source telegram --limit 5
      hermes-state sessions show 20260310_1842
      hermes-state sessions lineage 20260310_1842 --json
      hermes-state sessions stats
    """


def _about(s: dict[str, Any]) -> str:
    """The title (most sessions have none) and the preview in one column: "title · preview"."""
    chain = s.get("chain_sessions", 1)
    # a title another tool stored as a BLOB reads as bytes: spelled as `sessions show` spells it
    named = f"{s['title']}" if s.get("title") else None
    title = " ".join(filter(None, [named, f"({chain} sessions)" if chain > 1 else None]))
    return " · ".join(filter(None, [title, s["preview"]])) or "-"


def _human_list(doc: dict[str, Any]) -> str:
    if not doc["sessions"]:
        return "no sessions"
    # A compression chain is one row: its live tip's id, the chain's start and last activity, and
    # the messages of all its sessions (`sessions lineage` lists them from the root down).
    rows = [[s["id"], _minute(s.get("chain_started_at", s["started_at"])), _minute(s.get("last_active")),
             s["source"], f"{s.get('chain_message_count', s['message_count']) or 0:,}", _about(s)]
            for s in doc["sessions"]]
    # Narrow terminals lose last activity first, then the start, then the source: never the id. One
    # column for title and preview leaves 80 columns room for the start beside a long source name.
    lines = _table(["id", "started", "last active", "source", "msgs", "title · preview"], rows, (5,), (2, 1, 3))
    footer = f"{len(doc['sessions']):,} of {plural(doc['total'], 'session')}"
    return "\n".join([*lines, render.dim(footer, render.use_colour())])


@sessions.command("list")
@click.option("--source", metavar="NAME", help="Only sessions of this source.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100_000),
              help="Show at most this many sessions (the footer says how many there are).")
@click.option("--all", "show_all", is_flag=True,
              help="Also the sessions Hermes keeps out of its lists: archived and hidden ones, and "
                   "a subagent's (delegated) sessions.")
@common_options()
def list_(source: str | None, limit: int, show_all: bool, as_json: bool) -> None:
    """List conversations newest first, with a preview.

    Compressed conversations are one row: the live continuation's id, the chain's start, last
    activity and message count. --json adds "total", the number of conversations in all.

    \b
    Examples:
      hermes-state sessions list
      hermes-state sessions list --source discord --limit 50 --json
    """
    emit(list_page(settings().db, source, limit, show_all).as_dict(), _human_list)


def _human_message(message: dict[str, Any], full: bool, colour: bool) -> list[str]:
    text = content_text(message["content"]) if message["content"] is not None else ""
    header = f"[{when(message['timestamp'])}] {render.role(message['role'], colour)}"
    header += f" ({message['tool_name']})" if message.get("tool_name") else ""
    if message.get("mirror"):
        header += render.dim(f" (mirrored from {message.get('mirror_source') or 'elsewhere'})", colour)
    if message.get("observed"):
        header += render.dim(" (observed group context, not addressed to the bot)", colour)
    if message.get("active") == 0:
        header += render.dim(" (compacted away)" if message.get("compacted") else " (rewound)", colour)
    body = render.fold(tool_text(text), full) if message["role"] == "tool" else text.splitlines()
    lines = [header + ":", *("    " + line for line in body)]
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        names = [str((c.get("function") or {}).get("name") or c.get("name") or "?") if isinstance(c, dict) else "?"
                 for c in calls]
        lines.append(f"    tool calls: {', '.join(names)}")
    return lines


def _human_show(doc: dict[str, Any], full: bool = False, colour: bool = False) -> str:
    s = doc["session"]
    first, model = f"session {s['id']}  source {s['source']}", f"model {s.get('model') or '-'}"
    width = render.terminal_width()  # the model on a line of its own where the one line would wrap
    fits = width is None or render.display_width(first) + 2 + render.display_width(model) <= width
    lines = [f"{first}  {model}"] if fits else [first, model]
    lines += [f"started {when(s['started_at'])}  ended {when(s['ended_at'])}"
             + (f" ({s['end_reason']})" if s.get("end_reason") else ""),
             f"title: {s.get('title') or '-'}  parent: {s.get('parent_session_id') or '-'}",
             f"{plural(len(doc['messages']), 'message')}:"]
    for message in doc["messages"]:
        lines += _human_message(message, full, colour)
    return "\n".join(lines)


@sessions.command()
@click.argument("session_id", metavar="ID")
@click.option("--full", is_flag=True, help="Show long tool output whole (else its first and last lines).")
@click.option("--no-pager", is_flag=True, help="Never page through $PAGER (it is used only on a terminal).")
@click.option("--all", "show_all", is_flag=True,
              help="Also the messages Hermes keeps out of the conversation: rewound and compacted-away ones.")
@common_options()
def show(session_id: str, full: bool, no_pager: bool, show_all: bool, as_json: bool) -> None:
    """Show one session and its messages (exact id, unique prefix, or the id's hex part).

    On a terminal the text goes through $PAGER (default `less`, with LESS=FRX) as git does;
    PAGER=cat or --no-pager prints it. Long tool output is folded to its first and last lines
    unless --full. On a later Hermes' file, messages that Hermes keeps out of the conversation
    (rewound, or compacted away into a summary) are left out as Hermes leaves them out, and --all
    shows them, marked; observed group context is marked.

    \b
    Examples:
      hermes-state sessions show 20260310_184211_a1c4e9b2
      hermes-state sessions show a1c4e9b2 --full
      hermes-state sessions show 20260310_18 --json
    """
    doc = show_session(settings().db, session_id, show_all).as_dict()
    if as_json:
        emit(doc, _human_show)
        return
    render.page(_human_show(doc, full, render.use_colour()), no_pager)


def _line(s: dict[str, Any]) -> str:
    if s.get("missing"):
        return f"{s['id']}  (does not exist)"
    return f"{s['id']}  {when(s['started_at'])}  {s['source']}  {s.get('title') or '-'}"


def _human_lineage(doc: dict[str, Any]) -> str:
    # From the root down to the session (marked *), then its descendants indented below it.
    chain = list(reversed(doc["ancestors"]))
    lines = [f"{'  ' * depth}{_line(a)}" for depth, a in enumerate(chain)]
    lines += [f"{'  ' * len(chain)}* {_line(doc['session'])}"]
    lines += [f"{'  ' * (len(chain) + d['depth'])}{_line(d)}" for d in doc["descendants"]]
    if doc["cycle"]:
        lines.append("warning: the parent links form a cycle (hermes-state repair breaks it)")
    return "\n".join(lines)


@sessions.command()
@click.argument("session_id", metavar="ID")
@common_options()
def lineage(session_id: str, as_json: bool) -> None:
    """Show a session's ancestors (from the root down) and descendants.

    Follows parent links up and child links down (compression continuations, sub-agents),
    bounded and safe against cycles.

    \b
    Examples:
      hermes-state sessions lineage 20260310_184211_a1c4e9b2
      hermes-state sessions lineage 20260310_18 --json
    """
    emit(session_lineage(settings().db, session_id).as_dict(), _human_lineage)


def _stat_cells(group: dict[str, Any]) -> list[str]:
    cells = []
    for _, key in _STAT_COLUMNS:
        value = group[key]
        cells.append("-" if value is None else f"{value:,.4f}" if key.endswith("_usd") else f"{value:,}")
    return cells


def _human_stats(doc: dict[str, Any]) -> str:
    lines = _stat_table("", [["total", *_stat_cells(doc["totals"])]])
    for title, key in (("by model", "model"), ("by source", "source")):
        rows = [[str(group[key] or "-"), *_stat_cells(group)] for group in doc[f"by_{key}"]]
        lines += ["", title + ":", *_stat_table(key, rows)]
    return "\n".join(lines)


# Where the whole table is wider than the terminal: the tokens in and out, then the cache and the cost.
_STAT_PARTS = ((0, 1, 2, 3, 6), (4, 5, 7, 8))


def _stat_table(key: str, rows: list[list[str]]) -> list[str]:
    """One table of every column, or, where its lines would wrap, two tables of part of them each."""
    header = [key, *(label for label, _ in _STAT_COLUMNS)]
    width = render.terminal_width()
    if width is None or max(render.display_width(line) for line in render.table(header, rows)) <= width:
        return _table(header, rows, shrink=(0,))
    parts = [[0, *(1 + i for i in part)] for part in _STAT_PARTS]
    return [*_table([header[i] for i in parts[0]], [[row[i] for i in parts[0]] for row in rows], shrink=(0,)), "",
            *_table([header[i] for i in parts[1]], [[row[i] for i in parts[1]] for row in rows], shrink=(0,))]


@sessions.command()
@common_options()
def stats(as_json: bool) -> None:
    """Token and cost totals by model and by source.

    \b
    Examples:
      hermes-state sessions stats
      hermes-state --db ~/.hermes/state.db sessions stats --json
    """
    emit(usage_stats(settings().db).as_dict(), _human_stats)
