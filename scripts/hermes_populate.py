"""Run inside a subprocess with one Hermes version's `hermes_state` importable: write a database
through that version's own public `SessionDB` API only, and print what it wrote as JSON.

    python hermes_populate.py empty DB          # the layout exactly as that Hermes creates it
    python hermes_populate.py populated DB      # the scenario below, with what this version supports
    python hermes_populate.py chain DB STEP     # open a file an older version made, write a little

Standalone on purpose (no project imports): it runs next to Hermes' code, not the toolkit's.
Hermes' clock is replaced by a deterministic one, so the same Hermes commit writes the same rows.
"""

from __future__ import annotations

import inspect
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hermes_state

BASE_TIME = 1_767_600_000.0  # 2026-01-05T08:00:00Z
MODEL = "anthropic/claude-opus-4.6"


class _Clock:
    """`time` for hermes_state, whose `time()` advances one second per call."""

    def __init__(self, start: float) -> None:
        self.now = start

    def time(self) -> float:
        self.now += 1.0
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def call(method: Callable[..., Any], *args: Any, signature_of: Callable[..., Any] | None = None,
         **kwargs: Any) -> Any:
    """Call a Hermes method with the keyword arguments this version accepts (those of `signature_of`,
    the function its `**kwargs` go to, when it has one)."""
    accepted = inspect.signature(signature_of or method).parameters
    return method(*args, **{k: v for k, v in kwargs.items() if k in accepted})


class Writer:
    """One Hermes `SessionDB` and a record of the notable rows written through it."""

    def __init__(self, db_path: Path) -> None:
        self.db = hermes_state.SessionDB(db_path=db_path)
        source = inspect.getsource(hermes_state)
        self.multimodal = "\\x00json:" in source
        self.delegate_marker = "_delegate_from" in source
        self.branch_marker = "_branched_from" in source
        self.notes: dict[str, list[Any]] = {}

    def note(self, kind: str, value: Any) -> None:
        self.notes.setdefault(kind, []).append(value)

    def session(self, sid: str, source: str, **kwargs: Any) -> str:
        if source == "cli":  # the CLI records the launch folder where the version has the column
            kwargs.setdefault("cwd", "/home/hermes/projects/app")
        call(self.db.create_session, session_id=sid, source=source, model=MODEL,
             system_prompt=f"You are Hermes Agent. Session on {source}.",
             signature_of=getattr(self.db, "_insert_session_row", self.db.create_session), **kwargs)
        self.note("sessions", sid)
        return sid

    def message(self, sid: str, role: str, content: Any, **kwargs: Any) -> int:
        if not isinstance(content, (str, type(None))) and not self.multimodal:
            return -1
        return int(call(self.db.append_message, session_id=sid, role=role, content=content, **kwargs))

    def tool_turn(self, sid: str, ask: str, command: str, output: str, answer: str) -> int:
        """A user turn answered through one terminal tool call; returns the user message id."""
        first = self.message(sid, "user", ask)
        call_id = f"call_{sid[-6:]}_{first}"
        calls = [{"id": call_id, "type": "function",
                  "function": {"name": "terminal", "arguments": json.dumps({"command": command})}}]
        self.message(sid, "assistant", "", tool_calls=calls, finish_reason="tool_calls",
                     reasoning="The user wants a command run; use the terminal.",
                     reasoning_content="Run it in the terminal, then report.",
                     reasoning_details=[{"type": "reasoning.text", "text": "use terminal"}],
                     codex_reasoning_items=[{"id": f"rs_{first}", "type": "reasoning", "encrypted_content": "gAAA"}])
        self.message(sid, "tool", json.dumps({"output": output, "exit_code": 0}),
                     tool_name="terminal", tool_call_id=call_id)
        self.message(sid, "assistant", answer, finish_reason="stop",
                     codex_message_items=[{"type": "message", "role": "assistant",
                                           "content": [{"type": "output_text", "text": answer}]}])
        return first

    def chat(self, sid: str, pairs: list[tuple[str, str]]) -> list[int]:
        """Plain user/assistant turns; returns the user message ids."""
        ids = []
        for ask, answer in pairs:
            ids.append(self.message(sid, "user", ask))
            self.message(sid, "assistant", answer, finish_reason="stop")
        return ids

    def title(self, sid: str, title: str) -> None:
        self.db.set_session_title(sid, title)
        self.note("titled", sid)

    def end(self, sid: str, reason: str) -> None:
        self.db.end_session(sid, reason)
        self.note("ended", sid)

    def tokens(self, sid: str, scale: int) -> None:
        call(self.db.update_token_counts, sid, input_tokens=1200 * scale, output_tokens=340 * scale,
             model=MODEL, cache_read_tokens=800 * scale, reasoning_tokens=55 * scale, api_call_count=2 * scale,
             estimated_cost_usd=0.0125 * scale, cost_status="estimated", cost_source="pricing_table",
             billing_provider="openrouter", billing_mode="metered")


def tools_session(w: Writer) -> None:
    sid = w.session("20260105_091500_a1b2c3", "cli", user_id="local")
    w.tool_turn(sid, "Can you check disk usage on the box?", "df -h /",
                "Filesystem Size Used Avail Use%\n/dev/nvme0n1p2 457G 391G 43G 91% /",
                "Root is at 91% (43G free). Most of the rest is snap loop devices.")
    w.tool_turn(sid, "And which directories are the largest?", "du -sh /var/* | sort -h | tail -3",
                "2.1G /var/cache\n9.8G /var/lib\n14G /var/log", "/var/log holds 14G; rotate the journal.")
    w.title(sid, "Fix Docker Build")
    w.tokens(sid, 3)
    w.end(sid, "user_exit")


def cjk_session(w: Writer) -> None:
    """A Telegram group chat in Chinese and Japanese, left open, with observed group context."""
    sid = w.session("20260106_184211_a1c4e9b2", "telegram", user_id="tg:5512")
    w.message(sid, "user", "昨天和其他Agent的聊天记录，记忆断裂问题复现了", platform_message_id="tg-1001")
    w.message(sid, "assistant", "我查看了日志：中文检索现在可以用三元组索引。", finish_reason="stop")
    observed = call(w.db.append_message, session_id=sid, role="user", content="(山田) 日本語のログを確認してください",
                    platform_message_id="tg-1002", observed=True)
    if "observed" in inspect.signature(w.db.append_message).parameters:
        w.note("observed_messages", int(observed))
    w.chat(sid, [("こんにちは世界 — 今日のデプロイは？", "デプロイは完了しました。中文和日本語都能搜索。")])
    w.title(sid, "周末计划 🏔️")
    w.tokens(sid, 1)


def multimodal_session(w: Writer) -> None:
    sid = w.session("20260107_081530_5be07d11", "discord", user_id="dc:77")
    parts = [{"type": "text", "text": "What is in this screenshot?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]
    mid = w.message(sid, "user", parts)
    if mid > 0:
        w.note("multimodal_messages", mid)
    w.chat(sid, [("Describe the chart in one line.", "A bar chart: deploys per week, rising to 12.")])
    w.end(sid, "user_exit")


def rewind_session(w: Writer) -> None:
    """Three turns, the second taken back with Hermes' own rewind."""
    sid = w.session("20260108_101500_0a0b0c", "cli")
    asks = w.chat(sid, [("Plan the Lisbon café crawl for Sunday ☕️", "Start at Alfama, end in Príncipe Real."),
                        ("Make it five stops, not four", "Five stops: add Time Out Market."),
                        ("Actually keep it at four", "Four stops it is.")])
    w.title(sid, "Lisbon café crawl")
    if hasattr(w.db, "rewind_to_message"):
        before = {m["id"] for m in w.db.get_messages(sid)}
        w.db.rewind_to_message(sid, asks[1])
        after = {m["id"] for m in w.db.get_messages(sid)}
        w.notes["rewound_messages"] = sorted(before - after)
        w.chat(sid, [("Skip the fifth stop and add a pastel de nata break",
                      "Done: four stops and a pastel de nata break at Manteigaria.")])
    w.end(sid, "user_exit")


def compacted_session(w: Writer) -> None:
    """A long session compacted in place (active=0, compacted=1) where the version can."""
    sid = w.session("20260109_111500_1d2e3f", "cli")
    w.tool_turn(sid, "Run chat-send after editing my-app.config.ts", "npm run chat-send",
                "sent 3 messages", "Sent; the config change is live.")
    w.chat(sid, [("deploy to staging with --force?", "Deployed to staging with --force.")])
    if hasattr(w.db, "archive_and_compact"):
        before = {m["id"] for m in w.db.get_messages(sid)}
        w.db.archive_and_compact(sid, [
            {"role": "user", "content": "[Summary of earlier turns] chat-send ran; staging deployed with --force."},
            {"role": "assistant", "content": "Understood, continuing from the summary."}])
        w.notes["compacted_messages"] = sorted(before)
        w.chat(sid, [("Now promote staging to production", "Promoted; production runs the new build.")])
    w.title(sid, "Deploy pipeline")
    w.end(sid, "user_exit")


def archived_session(w: Writer) -> None:
    sid = w.session("20260110_120000_deadbe", "cli")
    w.chat(sid, [("Remind me what the backup window is", "Backups run at 02:00 UTC nightly.")])
    w.end(sid, "user_exit")
    if hasattr(w.db, "set_session_archived"):
        w.db.set_session_archived(sid, True)
        w.note("archived", sid)


def delegate_session(w: Writer) -> None:
    """A parent that delegates to a subagent child, created as tools/delegate_tool.py does."""
    parent = w.session("20260111_140233_c0ffee", "cli")
    w.tool_turn(parent, "Research the three cheapest GPU clouds", "echo delegating",
                "delegated", "The subagent found three providers; summary below.")
    config: dict[str, Any] = {"max_iterations": 50, "reasoning_config": None}
    if w.delegate_marker:
        config["_delegate_from"] = parent
    child = w.session("20260111_140301_5ub4g3", "subagent", model_config=config, parent_session_id=parent)
    w.tool_turn(child, "Find the three cheapest GPU clouds", "curl -s https://example.com/gpu-prices",
                '{"a": 1.1, "b": 1.4, "c": 1.9}', "Cheapest: a (1.10/h), b (1.40/h), c (1.90/h).")
    w.end(child, "delegate_done")
    w.end(parent, "user_exit")
    w.note("delegate_children", child)


def continuation(w: Writer, ids: tuple[str, str], reason: str, title: str, turns: list[tuple[str, str]],
                 config: dict[str, Any] | None = None) -> str:
    """A titled parent ended with `reason` and its child, titled next in the lineage; returns the child."""
    parent = w.session(ids[0], "cli")
    w.chat(parent, turns[:1])
    w.title(parent, title)
    w.end(parent, reason)
    child = w.session(ids[1], "cli", parent_session_id=parent, **({"model_config": config} if config else {}))
    for message in w.db.get_messages(parent) if reason == "branched" else ():
        w.message(child, message["role"], message["content"])
    w.chat(child, turns[1:])
    w.title(child, w.db.get_next_title_in_lineage(title))
    return child


def branch_session(w: Writer) -> None:
    """A /branch child as the CLI makes it: parent ended 'branched', history copied, numbered title."""
    config: dict[str, Any] = {"max_iterations": 90, "reasoning_config": None}
    if w.branch_marker:
        config["_branched_from"] = "20260112_090000_b4a7c1"
    child = continuation(w, ("20260112_090000_b4a7c1", "20260112_091500_b4a7c2"), "branched", "Release notes",
                         [("Draft the release notes for 2.3", "Draft: faster search, CJK support, fewer locks."),
                          ("Make it shorter", "2.3: faster search, CJK, fewer locks.")], config)
    w.note("branch_children", child)


def compression_chain(w: Writer) -> None:
    """Context compression as every version does it: the parent ends 'compression', a child goes on."""
    child = continuation(w, ("20260113_080000_c0c0a1", "20260113_083000_c0c0a2"), "compression",
                         "Importer refactor",
                         [("Refactor the importer into readers and a writer", "Split into readers/ and writer.py."),
                          ("[Summary] importer split; continue with tests", "Tests added for both readers.")])
    w.note("compression_children", child)


def cron_session(w: Writer) -> None:
    sid = w.session("cron_backup_20260114_020000", "cron")
    w.tool_turn(sid, "Run the nightly backup", "hermes backup --quick", "snapshot written", "Backup done.")
    w.end(sid, "cron_complete")


SCENARIO = (tools_session, cjk_session, multimodal_session, rewind_session, compacted_session,
            archived_session, delegate_session, branch_session, compression_chain, cron_session)


def chain_step(w: Writer, step: int) -> None:
    """The little a later version writes into an inherited file: one session with a tool turn."""
    sid = w.session(f"chain_step_{step:02d}", "cli")
    w.tool_turn(sid, f"Step {step}: is the database still healthy? 中文检索", "hermes sessions stats",
                f"{step} sessions", f"Healthy at step {step}.")
    w.end(sid, "user_exit")


def main(argv: list[str]) -> int:
    mode, db_path = argv[0], Path(argv[1])
    step = int(argv[2]) if len(argv) > 2 else 0
    hermes_state.time = _Clock(BASE_TIME + step * 86_400)  # type: ignore[attr-defined]
    stdout, sys.stdout = sys.stdout, sys.stderr  # Hermes' own prints must not mix with the JSON
    writer = Writer(db_path)
    if mode == "populated":
        for build in SCENARIO:
            build(writer)
    elif mode == "chain":
        for build in SCENARIO if step == 0 else ():
            build(writer)
        if step:
            chain_step(writer, step)
    writer.db.close()
    stdout.write(json.dumps(writer.notes, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
