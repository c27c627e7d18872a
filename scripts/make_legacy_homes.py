# ruff: noqa: E501  (a harness script: one scripted conversation reads best top to bottom)
"""Write HERMES_HOMEs with Hermes' own writer code at many legacy-era commits, import each, and compare.

    python scripts/make_legacy_homes.py --hermes-git /path/to/hermes-agent.git OUT [--commit SHA ...]

For each commit, the writer modules of that commit (gateway/, hermes_state.py, run_agent.py, cli.py
and what they import) are extracted into a temporary folder (never into this repository) and run in
a child process with HERMES_HOME=OUT/<commit>/home:
- the gateway's real SessionStore (sessions.json, {id}.jsonl, state.db from Feb 19): three turns
  (tool call and result, CJK with a scratchpad, a 270 KB tool output), a cron delivery through the
  real gateway/mirror.py, /retry through rewrite_transcript, /reset into a second session; its
  agent's snapshot of each turn, with the history as gateway/run.py handed it over;
- a CLI session through the agent's real _save_session_log, _log_msg_to_db and
  _flush_messages_to_session_db (AIAgent loaded method by method from run_agent.py with the
  module's own imports), the real SessionDB: two turns, /save (HermesCLI's real handler), --resume
  for a third, then a compression child (the id switch as that commit's _compress_context did it).
What the writers were given is recorded in OUT/<commit>/expected.json. Then `hermes-state
import-jsonl HOME --tz UTC` imports the home into HOME/state.db (twice: the re-run must add nothing)
and every expected message must be stored once, in order, with its role, text, tool call ids,
reasoning and tool name where a file copy holds them, and the sessions' source, user id, model and
parent. Counted apart, not failures: rows state.db already held twice (Hermes' double writes of
February-March), a /retry's dropped exchange that a snapshot still holds (imported once), messages
no copy holds any more (a writer lost them). One line per commit is printed; OUT/summary.json holds
the details. Hermes' code is only read from the git directory; nothing of it enters this repository.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

# Commits of the legacy era (JSONL/snapshot writers, 2026-02-01 .. 2026-05-19), each where a writer
# changed: ShareGPT logs, first gateway JSONL, state.db beside it, the messages snapshot, mirrors,
# scratchpad cleaning, /retry rewrites, the 3x duplication fix, atomic writes, reasoning persisted,
# the truncation guard, lazy sessions, the run_agent split, the last commit before JSONL stopped.
COMMITS = [
    "bbeed5b5d", "619c72e56", "061fa7090", "440c244ca", "3555c6173", "08e4dc256", "224c90053",
    "d18c753b3", "f64a87209", "47289ba6f", "698b35933", "b0b19fdeb", "c1171fe66", "f68574148",
    "cbbba8709", "42fec1915", "1519c4d47", "d6b783621", "dbed40f39", "ecc909de3", "c5b4c4816",
    "9f408989c", "b8a9cbd18",
]
PATHS = ["gateway", "hermes_state.py", "hermes_constants.py", "hermes_cli", "utils.py", "agent",
         "run_agent.py", "cli.py", "hermes_time.py", "toolsets.py", "tools", "model_tools.py"]
TOOLS = [{"type": "function", "function": {"name": "terminal", "description": "Run a shell command.",
                                           "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]


def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def tool_turn(question: str, n: int, output: str) -> list[dict[str, Any]]:
    cid = f"call_{n}_a1b2"
    return [
        {"role": "user", "content": question},
        {"role": "assistant", "content": "", "reasoning": "I should run ls.", "finish_reason": "tool_calls",
         "tool_calls": [call(cid, "terminal", {"command": "ls -la"})]},
        {"role": "tool", "content": output, "tool_call_id": cid},
        {"role": "assistant", "content": f"Done ({n}).", "finish_reason": "stop"},
    ]


def cjk_turn() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "你好，请总结一下这个文件。 日本語もOK 🙂"},
        {"role": "assistant", "content": "\n<REASONING_SCRATCHPAD>\nSummarise.\n</REASONING_SCRATCHPAD>\n\n\n这个文件列出了三个目录。\n\n",
         "finish_reason": "stop"},
    ]


def simple_turn(question: str, answer: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer, "finish_reason": "stop"}]


PNG = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAE="}}
LONG = "\n".join(f"{i:06d} drwxr-xr-x  some/long/path/segment/{i}" for i in range(6000))  # ~270 KB


# --- the child: runs one commit's writer code ----------------------------------------------------

def load_class(path: Path, class_name: str) -> type:
    """The class `class_name` of `path` with only its methods, in a namespace of the module's own
    top-level imports, functions and assignments (each run alone; what cannot load is left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    ns: dict[str, Any] = {"__name__": f"hermes_writer_{path.stem}", "__file__": str(path)}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            body: list[ast.stmt] = [n for n in node.body if isinstance(n, ast.FunctionDef)]
            node = ast.ClassDef(name=class_name, bases=[], keywords=[], body=body, decorator_list=[])
        elif not isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign, ast.AnnAssign, ast.Try)):
            continue
        try:
            exec(compile(ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[])), str(path), "exec"), ns)
        except Exception:
            pass
    return ns[class_name]  # type: ignore[no-any-return]


def method_named(cls: type, needle: str) -> str:
    """The name of the method whose source mentions `needle` (the /save handler changed its name)."""
    import inspect
    for name, value in vars(cls).items():
        try:
            if callable(value) and needle in inspect.getsource(value):
                return name
        except (OSError, TypeError):
            continue
    raise LookupError(needle)


def agent_history(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What gateway/run.py gave the agent as conversation_history: the transcript without metadata
    and times, simple messages as role and content, a mirror's text tagged with its origin."""
    out = []
    for m in history:
        role = m.get("role")
        if not role or role in ("session_meta", "system"):
            continue
        if "tool_calls" in m or "tool_call_id" in m or role == "tool":
            out.append({k: v for k, v in m.items() if k != "timestamp"})
        elif m.get("content"):
            content = m["content"]
            if m.get("mirror"):
                content = f"[Delivered from {m.get('mirror_source', 'another session')}] {content}"
            out.append({"role": role, "content": content})
    return out


class Writers:
    """One commit's writer code, run against one HERMES_HOME; `expected` records what it was given."""

    def __init__(self, src: Path, home: Path) -> None:
        self.src, self.home = src, home
        self.sessions_dir = home / "sessions"
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        self.expected: dict[str, Any] = {"sessions": {}, "notes": []}
        self.agent_cls = load_class(src / "run_agent.py", "AIAgent")
        sources = "\n".join(p.read_text(encoding="utf-8") for p in [src / "run_agent.py", *sorted((src / "agent").glob("*.py"))] if p.exists())
        self.logs_dir = home / "hermes-agent" / "logs" if 'Path(__file__).parent / "logs"' in sources else self.sessions_dir
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.expected["logs_dir"] = str(self.logs_dir.relative_to(home))
        # How this commit's context compression treats the session: a child row in state.db, and
        # (from late March) the snapshot file renamed after the child.
        self.splits = "parent_session_id=old_session_id" in sources
        self.renames_log = len(re.findall(r"session_log_file = \w+\.logs_dir / f\"session_\{\w+\.session_id\}\.json\"", sources)) > 1
        self.flattens_images = '"[screenshot]"' in sources
        self.user_first = 'append_message(self.session_id, "user", user_message)' in sources
        self.db = None
        if (src / "hermes_state.py").exists():
            from hermes_state import SessionDB  # type: ignore[import-not-found]
            self.db = SessionDB()

    def expect(self, sid: str, messages: list[dict[str, Any]], kind: str, **fields: Any) -> None:
        entry = self.expected["sessions"].setdefault(sid, {"kind": kind, "optional": [], "fields": {}})
        entry["messages"] = [m for m in messages if m.get("role") != "session_meta"]
        entry["fields"].update(fields)

    def stored(self, sid: str) -> int:
        con = sqlite3.connect(self.home / "state.db")
        try:
            return int(con.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?", (sid,)).fetchone()[0])
        finally:
            con.close()

    def agent(self, sid: str, start: Any, platform: str = "cli", db: bool = False) -> Any:
        a = object.__new__(self.agent_cls)
        values = {"session_id": sid, "model": "anthropic/claude-sonnet-4", "base_url": "https://openrouter.ai/api/v1",
                  "platform": platform, "session_start": start, "session_log_file": self.logs_dir / f"session_{sid}.json",
                  "logs_dir": self.logs_dir, "verbose_logging": True, "quiet_mode": True, "_session_messages": [],
                  "_cached_system_prompt": "You are Hermes.", "tools": TOOLS, "valid_tool_names": {"terminal"},
                  "_session_db": self.db if db else None, "_last_flushed_db_idx": 0, "_session_db_created": True,
                  "_persist_user_message_idx": None, "_persist_user_message_override": None,
                  "enabled_toolsets": None, "disabled_toolsets": None, "ephemeral_system_prompt": None,
                  "save_trajectories": False, "prefill_messages": None}
        for k, v in values.items():
            object.__setattr__(a, k, v)
        return a

    def turn(self, a: Any, history: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One run_conversation: the user row first where the loop logged it at the start, then the
        agent's end of turn."""
        if a._session_db is not None and hasattr(a, "_log_msg_to_db"):  # late Feb: each message as appended
            for m in new:
                a._log_msg_to_db(dict(m))
        elif a._session_db is not None and self.user_first:
            self.db.append_message(a.session_id, "user", new[0]["content"])
        messages = [dict(m) for m in history + new]
        self.persist(a, messages, [dict(m) for m in history])
        return history + new

    def persist(self, a: Any, messages: list[dict[str, Any]], history: list[dict[str, Any]] | None = None) -> None:
        """The agent's end of turn: its snapshot (_save_session_log) and, with a database, its rows
        (_flush_messages_to_session_db where the commit has it)."""
        a._session_messages = messages
        a._save_session_log([dict(m) for m in messages])
        if not a.session_log_file.exists():
            raise RuntimeError(f"_save_session_log wrote nothing for {a.session_id}")
        if a._session_db is None:
            return
        before = self.stored(a.session_id)
        new = messages[max(len(history or []) + self.user_first, a._last_flushed_db_idx):]
        if hasattr(a, "_flush_messages_to_session_db"):
            a._flush_messages_to_session_db([dict(m) for m in messages], history)
        if self.stored(a.session_id) == before and new:  # before March the loop appended inline
            import inspect
            accepted = inspect.signature(self.db.append_message).parameters
            for m in new:
                kw = {"role": m["role"], "content": m.get("content"), "tool_calls": m.get("tool_calls"),
                      "tool_call_id": m.get("tool_call_id"), "tool_name": m.get("tool_name"),
                      "finish_reason": m.get("finish_reason"), "reasoning": m.get("reasoning")}
                self.db.append_message(a.session_id, **{k: v for k, v in kw.items() if k in accepted})
            a._last_flushed_db_idx = len(messages)
            self.expected["notes"].append(f"rows of {a.session_id} appended as the inline loop did")

    def sharegpt_fixups(self, sid: str) -> None:
        path = self.logs_dir / f"session_{sid}.json"
        log = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        if "conversations" in log and not (self.sessions_dir / f"{sid}.jsonl").exists():
            self.expected["sessions"][sid]["sharegpt"] = True
            humans = [c["value"] for c in log["conversations"] if c.get("from") == "human"]
            if humans and humans[0] == "" and not (self.sessions_dir / f"{sid}.jsonl").exists():
                # This ShareGPT writer put its user_query "" where the first user message was.
                self.expected["sessions"][sid]["messages"].pop(0)
                self.expected["notes"].append(f"ShareGPT log of {sid}: first user message lost (written as '')")

    def gateway(self) -> None:
        """The gateway: SessionStore writes sessions.json, {id}.jsonl and (from Feb 19) state.db;
        its agent writes session_{id}.json; a cron delivery is mirrored; /retry rewrites; /reset."""
        from dataclasses import fields
        from datetime import datetime

        from gateway.config import GatewayConfig, Platform  # type: ignore[import-not-found]
        from gateway.session import SessionSource, SessionStore  # type: ignore[import-not-found]
        run_py = (self.src / "gateway" / "run.py").read_text(encoding="utf-8")
        writes_meta = '"role": "session_meta"' in run_py
        agent_persists = self.db is not None and "skip_db=agent_persisted" in run_py
        store = SessionStore(self.sessions_dir, GatewayConfig())
        names = {f.name for f in fields(SessionSource)}
        wanted = {"platform": Platform.TELEGRAM, "chat_id": "4242", "chat_type": "dm", "user_id": "777",
                  "user_name": "ramon", "chat_name": "Ramon"}
        source = SessionSource(**{k: v for k, v in wanted.items() if k in names})

        def turn(entry: Any, history: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
            agent = self.agent(entry.session_id, entry.created_at, platform="telegram", db=agent_persists)
            if agent_persists:  # from March 10 the agent wrote the turn's rows, the store only the JSONL
                self.turn(agent, agent_history(history), new)
            else:
                self.persist(agent, agent_history(history) + [dict(m) for m in new])
            ts = datetime.now().isoformat()  # run.py: one time for the whole turn
            if not history and writes_meta:
                store.append_to_transcript(entry.session_id, {"role": "session_meta", "tools": TOOLS,
                                                              "model": os.getenv("HERMES_MODEL", ""),
                                                              "platform": "telegram", "timestamp": ts})
            written = []
            for m in new:
                row = {**m, "timestamp": ts}
                store.append_to_transcript(entry.session_id, row, **({"skip_db": True} if agent_persists else {}))
                written.append(row)
            store.update_session(entry.session_key)
            return history + written

        entry = store.get_or_create_session(source)
        g1 = turn(entry, [], tool_turn("list my files", 1, "a.txt\nb.txt"))
        cjk = cjk_turn()
        if agent_persists and self.flattens_images:  # May 2026: a photo beside the text
            cjk[0] = {**cjk[0], "content": [{"type": "text", "text": cjk[0]["content"]}, PNG]}
        g1 = turn(entry, g1, cjk)
        if (self.src / "gateway" / "mirror.py").exists():
            from gateway import mirror  # type: ignore[import-not-found]
            if mirror.mirror_to_session("telegram", "4242", "Backup finished: 3 files.", source_label="cron"):
                g1.append({"role": "assistant", "content": "Backup finished: 3 files.", "mirror": True, "mirror_source": "cron"})
            else:
                self.expected["notes"].append("mirror_to_session found no session")
        g1 = turn(entry, g1, tool_turn("and the big folder?", 2, LONG))
        self.expect(entry.session_id, g1, "gateway", **({"source": "telegram"} if writes_meta else {}))
        if hasattr(store, "rewrite_transcript"):  # /retry: drop the last exchange, ask again
            history = store.load_transcript(entry.session_id)
            last_user = max(i for i, m in enumerate(history) if m.get("role") == "user")
            truncated = history[:last_user]
            store.rewrite_transcript(entry.session_id, truncated)
            # The exchange /retry dropped may survive in a copy the rewrite did not touch (the
            # snapshot keeps its longer list from late March): imported at most once.
            self.expected["sessions"][entry.session_id]["optional"] = [m for m in g1[len(g1) - 4:]]
            g1 = turn(entry, truncated, simple_turn("and the big folder?", "It holds 6000 entries."))
            self.expected["notes"].append("retry rewrote the transcript")
            self.expect(entry.session_id, g1, "gateway")
        old = entry.session_id
        entry2 = store.reset_session(entry.session_key) if hasattr(store, "reset_session") else None
        if entry2 is not None and entry2.session_id != old:
            weather = simple_turn("new topic: weather?", "Sunny, 21°C.")
            if agent_persists and self.flattens_images:
                weather[0] = {**weather[0], "content": [{"type": "text", "text": "new topic: weather?"}, PNG]}
            self.expect(entry2.session_id, turn(entry2, [], weather),
                        "gateway-reset", source="telegram", user_id="777")
        else:
            self.expected["sessions"][old]["fields"]["user_id"] = "777"

    def cli(self) -> None:
        """A CLI session: two turns, a /save, resumed for a third, then compressed into a child."""
        import uuid
        from datetime import datetime

        start = datetime.now()
        c1 = f"{start:%Y%m%d_%H%M%S}_{uuid.uuid4().hex[:6]}"
        if self.db is not None:
            self.db.create_session(session_id=c1, source="cli", model="anthropic/claude-sonnet-4")
        a1 = self.agent(c1, start, db=True)
        m1 = self.turn(a1, [], tool_turn("what is in /etc?", 3, "passwd\nhosts"))
        m1 = self.turn(a1, m1, cjk_turn())
        self.save(c1, a1.model, start, m1)
        a1b = self.agent(c1, start, db=True)  # --resume: a new agent with the history
        m1 = self.turn(a1b, m1, tool_turn("now /var?", 4, "log\ncache"))
        self.expect(c1, m1, "cli", source="cli", model="anthropic/claude-sonnet-4")

        c2 = f"{datetime.now():%Y%m%d_%H%M%S}_{uuid.uuid4().hex[:6]}"
        summary = {"role": "user", "content": f"[CONTEXT SUMMARY]: The user listed /etc and /var in session {c1}."}
        if self.db is not None and self.splits:
            # _compress_context: end the parent, a child row, the flush cursor reset; the snapshot
            # file follows the child only where this commit's compression renames it. The turn's
            # history is the compressed list, which only the snapshot holds.
            self.db.end_session(c1, "compression")
            self.db.create_session(session_id=c2, source="cli", model=a1b.model, parent_session_id=c1)
            a1b.session_id, a1b._last_flushed_db_idx = c2, 0
            if self.renames_log:
                a1b.session_log_file = self.logs_dir / f"session_{c2}.json"
            child = [*m1[:3], summary, *m1[-4:]]  # ContextCompressor: protect_first_n=3, the summary, the tail
            child = self.turn(a1b, child, simple_turn("continue please", "Continuing from the summary."))
            self.expect(c2, child, "cli-child", parent_session_id=c1)
            self.expected["notes"].append(f"compression split {c1} -> {c2}, snapshot renamed: {self.renames_log}")
        else:
            if self.db is not None:
                self.db.create_session(session_id=c2, source="cli", model=a1b.model)
            child = self.turn(self.agent(c2, datetime.now(), db=True), [summary],
                              simple_turn("continue please", "Continuing from the summary."))
            self.expect(c2, child, "cli-child")
        for sid in (c1, c2):
            self.sharegpt_fixups(sid)

    def save(self, sid: str, model: str, start: Any, messages: list[dict[str, Any]]) -> None:
        """/save: HermesCLI's save handler, loaded from cli.py."""
        cli_cls = load_class(self.src / "cli.py", "HermesCLI")
        cli = object.__new__(cli_cls)
        for k, v in {"model": model, "session_start": start, "conversation_history": [dict(m) for m in messages],
                     "session_id": sid, "agent": None}.items():
            object.__setattr__(cli, k, v)
        saved_dir = self.sessions_dir / "saved"
        saved_dir.mkdir(parents=True, exist_ok=True)
        here = os.getcwd()
        os.chdir(saved_dir)  # before late April, /save wrote into the working folder
        try:
            getattr(cli, method_named(cli_cls, "hermes_conversation_"))()
        finally:
            os.chdir(here)
        saves = sorted(saved_dir.rglob("hermes_conversation_*.json"))
        if not saves:
            raise RuntimeError("/save wrote nothing")
        for path in saves:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not data.get("session_id"):
                self.expect("saved_" + path.stem.removeprefix("hermes_conversation_"), messages, "save")
            self.expected["notes"].append(f"/save wrote {path.relative_to(self.home)} with session_id={data.get('session_id')!r}")


def drive(src: Path, home: Path) -> dict[str, Any]:
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    sys.path.insert(0, str(src))
    writers = Writers(src, home)
    if (src / "gateway").is_dir():
        writers.gateway()
    writers.cli()
    return writers.expected


# --- the parent: extract, run, import, compare ---------------------------------------------------

def extract(git_dir: Path, commit: str, dest: Path) -> None:
    listed = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "--name-only", commit],
                            check=True, capture_output=True, text=True).stdout.split()
    paths = [p for p in PATHS if p in listed]
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit, *paths], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def normal(content: Any) -> str:
    """Text as every copy can hold it: parts joined, scratchpad = think, the snapshot's squeeze and strip."""
    if isinstance(content, str) and content.startswith("\x00json:"):  # this project's stored list of parts
        content = json.loads(content[len("\x00json:"):])
    if isinstance(content, list):  # as the gateway's state.db holds it: text parts, "[screenshot]" per image
        content = "\n".join(str(p.get("text", "")) if p.get("type") == "text" else "[screenshot]"
                            for p in content if isinstance(p, dict))
    text = str(content or "").replace("<REASONING_SCRATCHPAD>", "<think>").replace("</REASONING_SCRATCHPAD>", "</think>")
    text = re.sub(r"\n+(<think>)", r"\n\1", text)
    text = re.sub(r"(</think>)\n+", r"\1\n", text)
    return text.strip()


def key(role: str, content: Any, tool_call_id: Any, tool_calls: Any, sharegpt: bool = False) -> tuple[str, str, str, str]:
    if sharegpt:  # <think> of a ShareGPT value becomes the message's reasoning
        content = re.sub(r"<think>.*?</think>", "", normal(content), flags=re.S)
    calls = tool_calls if isinstance(tool_calls, list) else json.loads(tool_calls) if tool_calls else []
    ids = ",".join(str(c.get("id") or c.get("call_id") or "") for c in calls if isinstance(c, dict))
    return role, normal(content), str(tool_call_id or ""), ids


def file_copies(home: Path, sid: str) -> list[dict[str, Any]]:
    """The messages of every file copy of `sid` in `home`: its JSONL, its snapshots whose inner id is
    `sid`, /save files naming it (a snapshot written under another session's name is left out)."""
    out: list[dict[str, Any]] = []
    for path in home.rglob("*.json*"):
        try:
            if path.suffix == ".jsonl" and path.stem == sid:
                out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            elif path.suffix == ".json" and path.name != "sessions.json":
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and data.get("session_id") == sid:
                    out += data.get("messages") or []
        except (ValueError, OSError):
            continue
    return [m for m in out if isinstance(m, dict)]


def compare(db: Path, expected: dict[str, Any], before: Path | None) -> dict[str, Any]:
    """Every expected message stored once (an optional one at most once; as often as state.db held
    it before the import), in order, with its reasoning and tool name where a file copy holds them;
    the sessions' named fields as the writers gave them."""
    home = db.parent
    held: Counter[tuple[str, ...]] = Counter()
    if before is not None:
        old = sqlite3.connect(before)
        held = Counter((row[0], *key(*row[1:], False)) for row in old.execute(
            "SELECT session_id, role, content, tool_call_id, tool_calls FROM messages"))
        old.close()
    con = sqlite3.connect(db)
    stored = {sid for (sid,) in con.execute("SELECT id FROM sessions")}
    result: dict[str, Any] = {"sessions_expected": len(expected["sessions"]), "messages_expected": 0,
                              "messages_imported": 0, "missing": [], "doubled": [], "fields": [],
                              "extra_sessions": sorted(stored - set(expected["sessions"]))}
    for sid, want in expected["sessions"].items():
        label = f"{sid} ({want['kind']})"
        if sid not in stored:
            result["missing"].append(f"session {label}")
            continue
        sharegpt = bool(want.get("sharegpt"))
        exp = [key(m["role"], m.get("content"), m.get("tool_call_id"), m.get("tool_calls"), sharegpt) for m in want["messages"]]
        optional = Counter(key(m["role"], m.get("content"), m.get("tool_call_id"), m.get("tool_calls"), sharegpt) for m in want.get("optional", []))
        rows = con.execute("SELECT role, content, tool_call_id, tool_calls, reasoning, tool_name FROM messages"
                           " WHERE session_id = ? ORDER BY timestamp, id", (sid,)).fetchall()
        got = [key(*row[:4], sharegpt) for row in rows]
        result["messages_expected"] += len(exp)
        result["messages_imported"] += len(got)
        missing = Counter(exp) - Counter(got)
        result["optional_kept"] = result.get("optional_kept", 0) + sum(((Counter(got) - Counter(exp)) & optional).values())
        extra = Counter(got) - Counter(exp)
        doubled = extra - optional  # an optional message stored once is fine
        result["doubled_before"] = result.get("doubled_before", 0) + sum(
            max(0, min(Counter(got)[k], held[(sid, *k)]) - Counter(exp)[k]) for k in extra)
        doubled = +Counter({k: n for k, n in doubled.items() if Counter(got)[k] > max(Counter(exp)[k] + optional[k], held[(sid, *k)])})
        copies = file_copies(home, sid)
        in_copies = {key(m.get("role", ""), m.get("content"), m.get("tool_call_id"), m.get("tool_calls"), sharegpt) for m in copies}
        in_copies |= {tuple(k[1:]) for k in held if k[0] == sid}
        # What no copy holds (a writer lost it before the import ran) is counted apart.
        lost = Counter({k: n for k, n in missing.items() if not sharegpt and k not in in_copies})
        missing -= lost
        result["lost"] = result.get("lost", []) + [f"{label}: {k[0]} {k[1][:60]!r} x{n}" for k, n in lost.items()]
        result["missing"] += [f"{label}: {k[0]} {k[1][:60]!r} x{n}" for k, n in missing.items()]
        result["doubled"] += [f"{label}: {k[0]} {k[1][:60]!r} x{n}" for k, n in doubled.items()]
        rest = iter(got)
        if not missing and not all(k in rest for k in exp):  # expected order, as a subsequence
            result["missing"].append(f"{label}: order differs")
        by_key = {key(*row[:4], sharegpt): row for row in rows}
        in_files = {key(m.get("role", ""), m.get("content"), m.get("tool_call_id"), m.get("tool_calls"), sharegpt): m
                    for m in copies if m.get("role") not in (None, "session_meta")}
        for m in want["messages"]:
            k = key(m["role"], m.get("content"), m.get("tool_call_id"), m.get("tool_calls"), sharegpt)
            row, copy = by_key.get(k), in_files.get(k)
            if row is None or copy is None:
                continue
            if copy.get("reasoning") and not sharegpt and row[4] != copy["reasoning"]:
                result["fields"].append(f"{label}: reasoning {row[4]!r} for {m['content'][:30]!r}")
            if m["role"] == "tool" and row[5] != "terminal":
                result["fields"].append(f"{label}: tool_name {row[5]!r} for {m['tool_call_id']}")
        columns = {r[1] for r in con.execute("PRAGMA table_info(sessions)")}
        for column, value in want.get("fields", {}).items():
            have = con.execute(f"SELECT {column} FROM sessions WHERE id = ?", (sid,)).fetchone()[0] if column in columns else "(no column)"
            if have != value:
                result["fields"].append(f"{label}: {column} {have!r}, expected {value!r}")
    con.close()
    return result


def run_commit(git_dir: Path, commit: str, out: Path, hermes_state: list[str]) -> dict[str, Any]:
    case = out / commit
    shutil.rmtree(case, ignore_errors=True)
    home = case / "home"
    home.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix=f"hermes-{commit}-") as tmp:
        extract(git_dir, commit, Path(tmp))
        (case / "user").mkdir()
        (case / "user" / ".hermes").symlink_to("../home")  # early mirror code read Path.home() / ".hermes"
        env = {**os.environ, "HERMES_HOME": str(home), "HOME": str(case / "user"), "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("HERMES_MODEL", None)
        child = subprocess.run([sys.executable, __file__, "--drive", tmp, str(home)], env=env, cwd=tmp,
                               capture_output=True, text=True)
    (case / "writer.log").write_text(child.stdout + child.stderr, encoding="utf-8")
    if child.returncode != 0:
        return {"commit": commit, "error": "writer failed: " + (child.stderr.strip().splitlines() or ["?"])[-1]}
    expected = json.loads(child.stdout.strip().splitlines()[-1])
    (case / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False), encoding="utf-8")
    for suffix in ("-wal", "-shm"):
        Path(str(home / "state.db") + suffix).unlink(missing_ok=True)
    had_db = (home / "state.db").exists()
    if had_db:
        shutil.copyfile(home / "state.db", case / "state.before.db")
    imported = subprocess.run([*hermes_state, "--db", str(home / "state.db"), "import-jsonl", str(home), "--tz", "UTC", "--json"],
                              capture_output=True, text=True)
    (case / "import.json").write_text(imported.stdout + imported.stderr, encoding="utf-8")
    again = subprocess.run([*hermes_state, "--db", str(home / "state.db"), "import-jsonl", str(home), "--tz", "UTC", "--json"],
                           capture_output=True, text=True)
    result = {"commit": commit, "state_db_before": had_db, "exit": imported.returncode, **compare(home / "state.db", expected, case / "state.before.db" if had_db else None)}
    try:
        rerun = json.loads(again.stdout)
        result["rerun_messages_imported"] = rerun.get("messages_imported")
    except ValueError:
        result["rerun_messages_imported"] = "?"
    return result


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--drive":
        print(json.dumps(drive(Path(sys.argv[2]), Path(sys.argv[3])), ensure_ascii=False))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hermes-git", required=True, type=Path, help="Hermes' bare git directory")
    parser.add_argument("--commit", action="append", help="only these commits (default: the legacy-era list)")
    parser.add_argument("--hermes-state", default=str(Path(sys.executable).with_name("hermes-state")))
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    bad = 0
    for commit in args.commit or COMMITS:
        r = run_commit(args.hermes_git, commit, args.out.resolve(), [args.hermes_state])
        results.append(r)
        if "error" in r:
            bad += 1
            print(f"{commit}: {r['error']}")
            continue
        ok = not r["missing"] and not r["doubled"] and not r["fields"] and r["rerun_messages_imported"] == 0
        bad += not ok
        print(f"{commit}: {'ok ' if ok else 'BAD'} sessions {r['sessions_expected']} messages expected "
              f"{r['messages_expected']} imported {r['messages_imported']} (doubled in state.db before: {r['doubled_before']}, "
              f"kept from before a rewrite: {r['optional_kept']}) exit {r['exit']} rerun {r['rerun_messages_imported']}"
              + "".join(f"\n  missing {m}" for m in r["missing"][:5]) + "".join(f"\n  doubled {m}" for m in r["doubled"][:5])
              + "".join(f"\n  field {m}" for m in r["fields"][:5])
              + "".join(f"\n  lost by the writer: {m}" for m in r.get("lost", [])[:3])
              + (f"\n  extra sessions {r['extra_sessions']}" if r["extra_sessions"] else ""))
    (args.out / "summary.json").write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
