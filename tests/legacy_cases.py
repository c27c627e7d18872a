# ruff: noqa: E501, RUF005, B905  (case tables read best one record a line)
"""Legacy-format cases of issue 9, built in a folder: <case>/{home/, state.db?, other.db?, expected.json}.

Every file is written the way Hermes' own writer code wrote it (see /tmp/h9/NOTES.md for the
sources): JSONL lines with json.dumps(ensure_ascii=False), snapshots with indent=2 and the
assistant text cleaned by `_clean_session_content`, the gateway's state.db rows with only the
columns `SessionStore.append_to_transcript` passed. Databases are made with this project's
SessionDB (Hermes' store API); times are naive local ISO strings, imported with --tz UTC.

Used by tests/test_legacy_cases.py (built into a temporary folder); `python tests/legacy_cases.py DIR`
writes them to DIR to look at.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from datetime import datetime, timezone
from pathlib import Path

from hermes_state_tools import SessionDB

ROOT = Path("cases")  # set by build_all
TOOLS = [{"type": "function", "function": {"name": "terminal", "description": "Run shell commands",
                                           "parameters": {"type": "object", "properties": {}}}}]


# --- Hermes' writer code, reproduced ------------------------------------------------------------

def convert_scratchpad_to_think(content: str) -> str:  # agent/trajectory.py
    if not content or "<REASONING_SCRATCHPAD>" not in content:
        return content
    return content.replace("<REASONING_SCRATCHPAD>", "<think>").replace("</REASONING_SCRATCHPAD>", "</think>")


def clean_session_content(content: str) -> str:  # run_agent.py AIAgent._clean_session_content
    if not content:
        return content
    content = convert_scratchpad_to_think(content)
    content = re.sub(r'\n+(<think>)', r'\n\1', content)
    content = re.sub(r'(</think>)\n+', r'\1\n', content)
    return content.strip()


_IMAGE_PART_TYPES = {"image_url", "image", "input_image"}


def durable_content(content):  # agent/session_persistence.py _durable_content (text-only DB projection)
    if not isinstance(content, list):
        return content
    txt = [str(p.get("text", "")) if p.get("type") == "text" else "[screenshot]"
           for p in content if isinstance(p, dict) and (p.get("type") == "text" or p.get("type") in _IMAGE_PART_TYPES)]
    return "\n".join(txt) if txt else None


def jsonl(path: Path, records: list, encoding: str = "utf-8") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding=encoding, newline="\n") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")


def snapshot(path: Path, session_id: str, messages: list, model: str = "anthropic/claude-sonnet-4",
             platform: str = "cli", start: str = "2026-03-05T10:15:00", encoding: str = "utf-8",
             clean: bool = True, **more) -> None:
    cleaned = []
    for m in messages:
        if clean and m.get("role") == "assistant" and m.get("content"):
            m = {**m, "content": clean_session_content(m["content"])}
        m = {k: v for k, v in m.items() if k != "timestamp"}  # snapshots carry no timestamps
        cleaned.append(m)
    entry = {"session_id": session_id, "model": model, "base_url": "https://openrouter.ai/api/v1",
             "platform": platform, "session_start": start, "last_updated": start,
             "system_prompt": "You are Hermes.", "tools": TOOLS, "message_count": len(cleaned),
             "messages": cleaned, **more}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entry, indent=2, ensure_ascii=False, default=str), encoding=encoding)


def meta(model="anthropic/claude-sonnet-4", platform="telegram", ts="2026-03-05T10:15:00"):
    return {"role": "session_meta", "tools": TOOLS, "model": model, "platform": platform, "timestamp": ts}


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).replace(tzinfo=timezone.utc).timestamp()


def gateway_db(path: Path, sessions: list[dict]) -> None:
    """A state.db as the gateway wrote it: append_to_transcript passed role, content, tool_name,
    tool_calls, tool_call_id only; timestamps set to the turn's time."""
    db = SessionDB(path)
    for s in sessions:
        db.create_session(s["id"], s.get("source", "telegram"), model=s.get("model"),
                          parent_session_id=s.get("parent"))
        for m in s["messages"]:
            mid = db.append_message(s["id"], m["role"], content=m.get("content"), tool_name=m.get("tool_name"),
                                    tool_calls=m.get("tool_calls"), tool_call_id=m.get("tool_call_id"),
                                    finish_reason=m.get("finish_reason"), reasoning=m.get("reasoning"))
            if "timestamp" in m:
                db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (epoch(m["timestamp"]), mid))
        if s.get("started"):
            db._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (epoch(s["started"]), s["id"]))
        if s.get("end_reason"):
            db._conn.execute("UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?",
                             (epoch(s["ended"]), s["end_reason"], s["id"]))
        db._conn.commit()
    db.close()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def write_expected(case: Path, expected: dict) -> None:
    (case / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n")


def fresh(name: str) -> Path:
    case = ROOT / name
    shutil.rmtree(case, ignore_errors=True)
    (case / "home" / "sessions").mkdir(parents=True)
    return case


def count(sid: str, extra: str = "") -> str:
    return f"SELECT COUNT(*) FROM messages WHERE session_id = '{sid}'{extra}"


IMPORT_TWICE = [{"cmd": "import", "name": "first run"},
                {"cmd": "import", "name": "re-run", "report": {"eq": {"messages_imported": 0, "sessions_created": 0,
                                                                        "sessions_updated": 0}}}]


# --- the cases --------------------------------------------------------------------------------

def cleaned_snapshot_text() -> None:
    case = fresh("cleaned_snapshot_text")
    sid = "20260305_101500_a1b2c3d4"
    raw1 = "\n\n<REASONING_SCRATCHPAD>\nThe user wants a summary of X.\n</REASONING_SCRATCHPAD>\n\n\nX is a small tool.\n\n\nIt does Y.\n\n"
    raw2 = "  <REASONING_SCRATCHPAD>short</REASONING_SCRATCHPAD>\n\n\nYou're welcome!  \n"
    msgs = [{"role": "user", "content": "What is X?", "timestamp": "2026-03-05T10:15:00"},
            {"role": "assistant", "content": raw1, "finish_reason": "stop", "timestamp": "2026-03-05T10:15:00"},
            {"role": "user", "content": "thanks", "timestamp": "2026-03-05T10:16:10"},
            {"role": "assistant", "content": raw2, "finish_reason": "stop", "timestamp": "2026-03-05T10:16:10"}]
    jsonl(case / "home/sessions" / f"{sid}.jsonl", [meta()] + msgs)
    snapshot(case / "home/sessions" / f"session_{sid}.json", sid, msgs, platform="telegram")
    write_expected(case, {
        "issue": "Cleaned snapshot text: snapshot has <think>, squeezed newlines around think tags, stripped; JSONL raw",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            [count(sid), 4],
            [count(sid, " AND role = 'assistant'"), 2],
            [f"SELECT content FROM messages WHERE session_id = '{sid}' AND role = 'assistant' ORDER BY timestamp, id", [[raw1], [raw2]]],
        ]}, IMPORT_TWICE[1]]})


def flattened_images() -> None:
    case = fresh("flattened_images")
    s1, s2 = "20260512_090000_b2c3d4e5", "20260514_190000_c3d4e5f6"
    png = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAE="}}
    m1 = [{"role": "user", "content": [{"type": "text", "text": "what is in this photo?"}, png], "timestamp": "2026-05-12T09:00:05"},
          {"role": "assistant", "content": "A cat on a sofa.", "finish_reason": "stop", "timestamp": "2026-05-12T09:00:05"},
          {"role": "user", "content": "and its colour?", "timestamp": "2026-05-12T09:01:00"},
          {"role": "assistant", "content": "Orange.", "finish_reason": "stop", "timestamp": "2026-05-12T09:01:00"}]
    m2 = [{"role": "user", "content": [png], "timestamp": "2026-05-14T19:00:01"},  # image alone
          {"role": "assistant", "content": "A receipt.", "timestamp": "2026-05-14T19:00:01"},
          {"role": "user", "content": [{"type": "text", "text": "compare"}, png, png], "timestamp": "2026-05-14T19:02:00"},
          {"role": "assistant", "content": "They match.", "timestamp": "2026-05-14T19:02:00"}]
    jsonl(case / "home/sessions" / f"{s1}.jsonl", [meta(ts="2026-05-12T09:00:00")] + m1)
    jsonl(case / "home/sessions" / f"{s2}.jsonl", [meta(ts="2026-05-14T19:00:00")] + m2)
    gateway_db(case / "state.db", [
        {"id": s1, "messages": [{**m, "content": durable_content(m["content"])} for m in m1], "started": "2026-05-12T09:00:00"},
        {"id": s2, "messages": [{**m, "content": durable_content(m["content"])} for m in m2], "started": "2026-05-14T19:00:00"}])
    write_expected(case, {
        "issue": "Flattened images: JSONL list of parts vs state.db text + '\\n[screenshot]' (agent/session_persistence.py _durable_content)",
        "db_contents_before": {s1: durable_content(m1[0]["content"]), s2: [durable_content(m2[0]["content"]), durable_content(m2[2]["content"])]},
        "steps": [{**IMPORT_TWICE[0], "sql": [[count(s1), 4], [count(s1, " AND role = 'user'"), 2],
                                            [count(s2), 4], [count(s2, " AND role = 'user'"), 2]],
                   "report": {"eq": {"messages_imported": 0, "sessions_created": 0}}}, IMPORT_TWICE[1]]})


def inflated_snapshots() -> None:
    case = fresh("inflated_snapshots")
    s1, s2 = "20260301_120000_c3d4e5f6", "20260302_120000_d4e5f6a7"
    ex1 = [("Deploy the app", "Deployed."), ("ok", "Anything else?"), ("ok", "Bye then.")]  # a legit repeated "ok"
    ex2 = [("hi", "Hello!"), ("time?", "12:00")]

    def turns(pairs, day, times):
        out = []
        for n, (q, a) in enumerate(pairs):
            ts = f"2026-03-0{day}T12:0{n}:00"
            out += [{"role": "user", "content": q, "timestamp": ts},
                    {"role": "assistant", "content": a, "timestamp": ts}]
        inflated = []
        for n in range(len(pairs)):
            inflated += out[2 * n:2 * n + 2] * times
        return out, inflated

    j1, i1 = turns(ex1, 1, 2)
    j2, i2 = turns(ex2, 2, 3)
    jsonl(case / "home/sessions" / f"{s1}.jsonl", [meta(ts="2026-03-01T12:00:00")] + j1)
    jsonl(case / "home/sessions" / f"{s2}.jsonl", [meta(ts="2026-03-02T12:00:00")] + j2)
    snapshot(case / "home/sessions" / f"session_{s1}.json", s1, i1, platform="telegram", start="2026-03-01T12:00:00")
    snapshot(case / "home/sessions" / f"session_{s2}.json", s2, i2, platform="telegram", start="2026-03-02T12:00:00")
    write_expected(case, {
        "issue": "Inflated snapshots (gateway double-write bug #860): snapshot repeats each exchange 2x/3x; the timestamped JSONL holds it once",
        "steps": [{**IMPORT_TWICE[0], "sql": [[count(s1), 6], [count(s1, " AND content = 'ok'"), 2], [count(s2), 4]]},
                  IMPORT_TWICE[1]]})


def doubled_replies_mirror_era() -> None:
    case = fresh("doubled_replies_mirror_era")
    sid = "20260222_081500_d0bb1e22"
    pairs = [("Good morning", "Morning! What's the plan?"), ("Remind me at 9 to call Ana", "Reminder set for 09:00."),
             ("What's the weather?", "Sunny, 14 °C."), ("ok", "Anything else?"), ("ok", "Have a good day."),
             ("Summarise my inbox", "3 new mails: 2 newsletters, 1 from Ana."), ("thanks", "You're welcome!")]
    msgs = []
    for n, (q, a) in enumerate(pairs):
        ts = f"2026-02-22T08:{15 + n}:00"
        msgs += [{"role": "user", "content": q, "timestamp": ts}, {"role": "assistant", "content": a, "timestamp": ts}]
        if n == 2:  # the cron job's delivery, mirrored into this chat's transcript by the gateway
            msgs.append({"role": "assistant", "content": "⏰ Reminder: call Ana", "mirror": True,
                         "mirror_source": "cron", "timestamp": "2026-02-22T09:00:00"})
    jsonl(case / "home/sessions" / f"{sid}.jsonl", [meta(ts="2026-02-22T08:15:00")] + msgs)
    # The agent's history of that time held each reply twice (the gateway appended the reply the agent
    # had already appended): the snapshot repeats every assistant message; it holds no mirror line.
    doubled = []
    for m in msgs:
        if not m.get("mirror"):
            doubled += [m, m] if m["role"] == "assistant" else [m]
    snapshot(case / "home/sessions" / f"session_{sid}.json", sid, doubled, platform="telegram",
             start="2026-02-22T08:15:00", clean=False)
    write_expected(case, {
        "issue": "Mirror era (Feb 22): the snapshot repeats each assistant reply twice, the timed JSONL holds each once",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            [count(sid), len(msgs)], [count(sid, " AND role = 'assistant'"), 8],
            [count(sid, " AND content = 'ok'"), 2], [count(sid, " AND content = 'Anything else?'"), 1]]},
            IMPORT_TWICE[1]]})


def trailing_space_rewrite_era() -> None:
    case = fresh("trailing_space_rewrite_era")
    sid = "20260302_120000_fac75fac"
    fact = "Fact 5: An octopus has three hearts and blue blood."
    replies = ["Fact 1: Honey never spoils.", "Fact 2: Bananas are berries.", fact + " ", "Fact 4: Venus spins backwards.",
               fact]  # asked again, the model said fact 5 again, this time without the trailing space
    msgs = []
    for n, reply in enumerate(replies):
        ts = f"2026-03-02T12:0{n}:00"
        msgs += [{"role": "user", "content": "another fact" if n else "tell me a fact", "timestamp": ts},
                 {"role": "assistant", "content": reply, "finish_reason": "stop", "timestamp": ts}]
    # /retry (March 2026) rewrote the transcript whole, each line stamped with an epoch float, and the
    # session's rows in state.db, all stored within a second; the snapshot holds the cleaned (stripped) text.
    jsonl(case / "home/sessions" / f"{sid}.jsonl",
          [meta(ts="2026-03-02T12:00:00")] + [{**m, "timestamp": epoch(m["timestamp"])} for m in msgs])
    snapshot(case / "home/sessions" / f"session_{sid}.json", sid, msgs, platform="telegram", start="2026-03-02T12:00:00")
    gateway_db(case / "state.db", [{"id": sid, "started": "2026-03-02T12:00:00", "messages": [
        {"role": m["role"], "content": m["content"], "timestamp": "2026-03-02T12:09:00"} for m in msgs]}])
    q = f"SELECT content, finish_reason FROM messages WHERE session_id = '{sid}' AND role = 'assistant' ORDER BY timestamp, id"
    write_expected(case, {
        "issue": "Rewrite era (March 2): a reply with a trailing space and the same text without it pair each with its own row",
        "steps": [{**IMPORT_TWICE[0], "sql": [[count(sid), len(msgs)], [q, [[r, "stop"] for r in replies]]]},
                  IMPORT_TWICE[1]]})


def sharegpt_log(case: Path, name_id: str, inner_id: str, start: str, updated: str, conversations: list) -> None:
    """A February 2026 ShareGPT log beside the install: $HERMES_HOME/hermes-agent/logs/session_<name_id>.json,
    written with indent=2 after the generated tool-use system prompt."""
    logs = case / "home/hermes-agent/logs"
    logs.mkdir(parents=True, exist_ok=True)
    (case / "home/hermes-agent/run_agent.py").write_text("# the installed code lives here\n")
    system = {"from": "system", "value": "You are a function calling AI model. <tools>[]</tools>"}
    (logs / f"session_{name_id}.json").write_text(json.dumps({
        "session_id": inner_id, "model": "anthropic/claude-sonnet-4", "session_start": start, "last_updated": updated,
        "message_count": len(conversations), "conversations": [system, *conversations]}, indent=2, ensure_ascii=False))


def compressed_parent(case: Path, parent: str, child: str, day: str) -> None:
    """state.db after compression split a session on `day`: the parent's four rows, ended by
    'compression', and its child, still without rows."""
    pmsgs = [{"role": "user", "content": "Refactor the parser", "timestamp": f"{day}T08:00:10"},
             {"role": "assistant", "content": "Done with step 1.", "timestamp": f"{day}T08:05:00"},
             {"role": "user", "content": "Now step 2", "timestamp": f"{day}T09:00:00"},
             {"role": "assistant", "content": "Step 2 done.", "timestamp": f"{day}T09:20:00"}]
    gateway_db(case / "state.db", [
        {"id": parent, "source": "cli", "messages": pmsgs, "started": f"{day}T08:00:00",
         "end_reason": "compression", "ended": f"{day}T09:30:00"},
        {"id": child, "source": "cli", "parent": parent, "messages": [], "started": f"{day}T09:30:00"}])


def mirror_tagged_in_gateway_snapshot() -> None:
    case = fresh("mirror_tagged_in_gateway_snapshot")
    s1, s2 = "20260305_090000_a1b2c3d4", "20260306_090000_b2c3d4e5"
    turn1 = [{"role": "user", "content": "Back up my notes", "timestamp": "2026-03-05T09:00:05"},
             {"role": "assistant", "content": "I'll schedule it.", "timestamp": "2026-03-05T09:00:05"}]
    mirror = {"role": "assistant", "content": "Backup finished: 3 files.", "timestamp": "2026-03-05T10:00:00",
              "mirror": True, "mirror_source": "cron"}
    turn2 = [{"role": "user", "content": "Did it work?", "timestamp": "2026-03-05T10:05:00"},
             {"role": "assistant", "content": "Yes, 3 files were saved.", "timestamp": "2026-03-05T10:05:00"}]
    msgs = turn1 + [mirror] + turn2
    jsonl(case / "home/sessions" / f"{s1}.jsonl", [meta(ts="2026-03-05T09:00:00")] + msgs)
    # gateway/run.py gave its agent the history with a mirror's text tagged "[Delivered from <source>] ";
    # the agent's snapshot of the next turn holds it so. mirror.py wrote the row into state.db as said.
    tagged = turn1 + [{"role": "assistant", "content": "[Delivered from cron] Backup finished: 3 files."}] + turn2
    snapshot(case / "home/sessions" / f"session_{s1}.json", s1, tagged, platform="telegram", start="2026-03-05T09:00:00")
    gateway_db(case / "state.db", [{"id": s1, "messages": msgs, "started": "2026-03-05T09:00:00"}])
    # A snapshot alone (its transcript lost): the tagged line is still the mirror.
    alone = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"},
             {"role": "assistant", "content": "[Delivered from cli] Deploy done."},
             {"role": "user", "content": "thanks"}, {"role": "assistant", "content": "You're welcome."}]
    snapshot(case / "home/sessions" / f"session_{s2}.json", s2, alone, platform="telegram", start="2026-03-06T09:00:00")
    extra = ("SELECT json_extract(e.data, '$.mirror_source'), json_extract(e.data, '$.original_content') FROM hst_message_extra e"
             f" JOIN messages m ON m.id = e.message_id WHERE m.session_id = '{s2}' AND m.content = 'Deploy done.'")
    write_expected(case, {
        "issue": "Mirror era: the gateway agent's snapshot holds a mirror line as '[Delivered from cron] text'; "
                 "the JSONL and state.db hold the text: one message",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            [count(s1), 5], [count(s1, " AND content LIKE '[Delivered from%'"), 0],
            [count(s1, " AND content = 'Backup finished: 3 files.'"), 1],
            [count(s2), 5], [extra, [["cli", "[Delivered from cli] Deploy done."]]]]}, IMPORT_TWICE[1]]})


def sharegpt_log_beside_jsonl() -> None:
    case = fresh("sharegpt_log_beside_jsonl")
    s1, s2 = "20260205_090000_c3d4e5f6", "20260206_100000_d4e5f6"
    msgs = [{"role": "user", "content": "Summarise the file", "timestamp": "2026-02-05T09:00:05"},
            {"role": "assistant", "content": "<REASONING_SCRATCHPAD>\nShort file.\n</REASONING_SCRATCHPAD>\n\nIt lists three folders.",
             "timestamp": "2026-02-05T09:00:05"},
            {"role": "user", "content": "thanks", "timestamp": "2026-02-05T09:01:00"},
            {"role": "assistant", "content": "Any time.", "timestamp": "2026-02-05T09:01:00"}]
    jsonl(case / "home/sessions" / f"{s1}.jsonl", msgs)  # early February: no session_meta

    def log(sid: str, conversations: list) -> None:
        # _save_session_log of early February: _convert_to_trajectory_format(messages, "", True) put its
        # user_query "" where the first user message was, and the scratchpad inside <think> tags.
        sharegpt_log(case, sid, sid, "2026-02-05T09:00:00", "2026-02-05T09:01:00", conversations)

    log(s1, [{"from": "human", "value": ""}, {"from": "gpt", "value": "<think>\nShort file.\n</think>\n\nIt lists three folders."},
             {"from": "human", "value": "thanks"}, {"from": "gpt", "value": "Any time."}])
    log(s2, [{"from": "human", "value": ""}, {"from": "gpt", "value": "Hello!"}, {"from": "human", "value": "bye"},
             {"from": "gpt", "value": "Bye."}])
    write_expected(case, {
        "issue": "February 2026: the gateway agent's ShareGPT log beside the JSONL, its first human entry the writer's "
                 "empty user_query and its scratchpad in <think> (reasoning): each message once",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            [count(s1), 4], [count(s1, " AND content = ''"), 0], [count(s1, " AND role = 'assistant'"), 2],
            [count(s2), 3], [count(s2, " AND content = ''"), 0]],
            "report": {"problem": [{"kind": "sharegpt_placeholder", "file_endswith": f"session_{s2}.json"}]}},
            IMPORT_TWICE[1]]})


def sharegpt_compression_child() -> None:
    case = fresh("sharegpt_compression_child_under_parent_name")
    parent, child = "20260220_080000_e5f6a7", "20260220_093000_f6a7b8"
    compressed_parent(case, parent, child, "2026-02-20")
    # February 19-21: compression gave the agent the child's id, the log file kept the parent's name;
    # the compressor kept the first messages, then the summary and the tail.
    sharegpt_log(case, parent, child, "2026-02-20T08:00:00", "2026-02-20T09:40:00", [
            {"from": "human", "value": "Refactor the parser"},
            {"from": "gpt", "value": "<think>\n</think>\nDone with step 1."},
            {"from": "human", "value": "[CONTEXT SUMMARY]: The user asked to refactor the parser; steps 1-2 are done."},
            {"from": "human", "value": "Now step 3"},
            {"from": "gpt", "value": "<think>\n</think>\nStep 3 done."}])
    write_expected(case, {
        "issue": "Compression child in a ShareGPT log under the parent's name (February 2026): the child's messages",
        "steps": [{**IMPORT_TWICE[0], "sql": [[count(parent), 4], [count(child), 5]],
                   "report": {"problem": [{"kind": "compression_child"}]}}, IMPORT_TWICE[1]]})


def compression_child() -> None:
    case = fresh("compression_child_under_parent_name")
    parent, child = "20260310_080000_e5f6a7", "20260310_093000_f6a7b8"
    compressed_parent(case, parent, child, "2026-03-10")
    cmsgs = [{"role": "user", "content": "[CONTEXT SUMMARY]: The user asked to refactor the parser; steps 1-2 are done."},
             {"role": "user", "content": "Now step 3"},
             {"role": "assistant", "content": "Step 3 done."},
             {"role": "user", "content": "Run the tests"},
             {"role": "assistant", "content": "All 42 pass."}]
    # The snapshot of the CHILD's conversation, written to the parent's file name (Feb-Mar 2026).
    snapshot(case / "home/sessions" / f"session_{parent}.json", child, cmsgs, platform="cli",
             start="2026-03-10T08:00:00")
    write_expected(case, {
        "issue": "Compression child saved under the parent's name: session_<parent>.json holds the child's id and messages",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            [count(parent), 4], [count(child), 5],
            [f"SELECT substr(content, 1, 17) FROM messages WHERE session_id = '{child}' ORDER BY timestamp, id LIMIT 1", "[CONTEXT SUMMARY]"],
            [f"SELECT end_reason FROM sessions WHERE id = '{parent}'", "compression"]]}, IMPORT_TWICE[1]]})


def unpaired_surrogates() -> None:
    case = fresh("unpaired_surrogates")
    s1, s2 = "20260220_140000_a7b8c9d0", "20260221_150000_b1c2d3"
    lines = [json.dumps(meta(ts="2026-02-20T14:00:00")),
             json.dumps({"role": "user", "content": "send me the emoji", "timestamp": "2026-02-20T14:00:01"}),
             '{"role": "assistant", "content": "here: \\ud83d (cut)", "timestamp": "2026-02-20T14:00:01"}',
             '{"role": "user", "content": "and \\udc00 alone \\ud83d\\ude00 ok", "timestamp": "2026-02-20T14:01:00"}',
             json.dumps({"role": "assistant", "content": "fine", "timestamp": "2026-02-20T14:01:00"})]
    jsonl(case / "home/sessions" / f"{s1}.jsonl", lines)
    snap = {"session_id": s2, "model": "m", "platform": "cli", "session_start": "2026-02-21T15:00:00",
            "last_updated": "2026-02-21T15:01:00", "message_count": 2,
            "messages": [{"role": "user", "content": "x \ud83d y"}, {"role": "assistant", "content": "ok"}]}
    # json.dump's default ensure_ascii=True writes the lone surrogate as an escape
    (case / "home/sessions" / f"session_{s2}.json").write_text(json.dumps(snap, indent=2), encoding="utf-8")
    write_expected(case, {
        "issue": "Unpaired surrogates: stored as U+FFFD and every re-run adds another copy; problem must name file and line",
        "steps": [{**IMPORT_TWICE[0], "sql": [[count(s1), 4], [count(s2), 2]],
                   "report": {"problem": [{"file_endswith": f"{s1}.jsonl", "line": 3}]}},
                  {**IMPORT_TWICE[1], "sql": [[count(s1), 4], [count(s2), 2]]}]})


def enrichment() -> None:
    case = fresh("enrichment_messages_enriched")
    sid = "20260215_100000_b8c9d0e1"
    call = [{"id": "call_abc1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}]
    file_msgs = [
        {"role": "user", "content": "list files", "message_id": "tg-101", "timestamp": "2026-02-15T10:00:05"},
        {"role": "assistant", "content": "", "tool_calls": call, "reasoning": "Need to run ls.",
         "finish_reason": "tool_calls", "reasoning_content": "Need to run ls.", "timestamp": "2026-02-15T10:00:05"},
        {"role": "tool", "content": "a.txt\nb.txt", "tool_call_id": "call_abc1", "timestamp": "2026-02-15T10:00:05"},
        {"role": "assistant", "content": "Two files: a.txt, b.txt.", "reasoning": "Summarise.",
         "finish_reason": "length", "timestamp": "2026-02-15T10:00:05"}]
    db_msgs = [{k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "tool_call_id", "timestamp")}
               for m in file_msgs]
    db_msgs[3]["finish_reason"] = "stop"  # a value already stored: never overwritten
    jsonl(case / "home/sessions" / f"{sid}.jsonl", [meta(ts="2026-02-15T10:00:00")] + file_msgs)
    gateway_db(case / "state.db", [{"id": sid, "messages": db_msgs, "started": "2026-02-15T10:00:00"}])
    q = f"SELECT {{}} FROM messages WHERE session_id = '{sid}' ORDER BY timestamp, id"
    write_expected(case, {
        "issue": "Enrichment: fill NULL fields of stored rows from the files (reasoning, finish_reason, tool_name from call id, extra data), count messages_enriched",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            [count(sid), 4],
            [q.format("reasoning"), [[None], ["Need to run ls."], [None], ["Summarise."]]],
            [q.format("finish_reason"), [[None], ["tool_calls"], [None], ["stop"]]],
            [q.format("tool_name"), [[None], [None], ["terminal"], [None]]]],
            "report": {"eq": {"messages_enriched": 4, "messages_imported": 0}},
            "export_contains": ["tg-101"]},
            {**IMPORT_TWICE[1], "report": {"eq": {"messages_imported": 0, "sessions_created": 0, "messages_enriched": 0}}}]})


def empty_model() -> None:
    case = fresh("empty_model")
    s1, s2, s3 = "20260301_090000_c9d0e1f2", "20260302_090000_d0e1f2a3", "20260303_090000_e1f2a3b4"
    base = [{"role": "user", "content": "hi", "timestamp": "2026-03-0{}T09:00:05"},
            {"role": "assistant", "content": "hello", "timestamp": "2026-03-0{}T09:00:05"}]
    for n, sid in ((1, s1), (2, s2), (3, s3)):
        msgs = [{**m, "timestamp": m["timestamp"].format(n)} for m in base]
        jsonl(case / "home/sessions" / f"{sid}.jsonl", [meta(model="", ts=f"2026-03-0{n}T09:00:00")] + msgs)
        if sid == s2:
            snapshot(case / "home/sessions" / f"session_{sid}.json", sid, msgs, model="openai/gpt-4o",
                     platform="telegram", start="2026-03-02T09:00:00")
    gateway_db(case / "state.db", [{"id": s3, "model": None, "started": "2026-03-03T09:00:00",
                                    "messages": [{**m, "timestamp": m["timestamp"].format(3)} for m in base]}])
    write_expected(case, {
        "issue": "Empty model: session_meta 'model': '' (gateway _resolve_gateway_model() returned '') is no value",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            [f"SELECT model FROM sessions WHERE id = '{s1}'", None],
            [f"SELECT model FROM sessions WHERE id = '{s2}'", "openai/gpt-4o"],
            [f"SELECT model FROM sessions WHERE id = '{s3}'", None],
            ["SELECT COUNT(*) FROM sessions WHERE model = ''", 0]]}, IMPORT_TWICE[1]]})


def code_pages() -> None:
    case = fresh("code_pages")
    s1, s2, s3 = "20260210_101010_aa11bb22", "20260211_111111_bb22cc33", "20260212_121212_cc33dd"
    tr1 = "Günaydın! Bugün İstanbul'da hava güneşli, şemsiyeye gerek yok."
    tr2 = "Çok teşekkürler ağabey, Şişli'ye ışık hızıyla gidiyorum. Ğ ğ ı İ ş Ş"
    fr1 = "Café «résumé» — 5 €, naïve façade, “quotes” and ‘single’ ones…"
    jsonl(case / "home/sessions" / f"{s1}.jsonl", [
        {"role": "user", "content": tr1, "timestamp": "2026-02-10T10:10:10"},
        {"role": "assistant", "content": tr2, "timestamp": "2026-02-10T10:10:10"}], encoding="cp1254")
    jsonl(case / "home/sessions" / f"{s2}.jsonl", [
        {"role": "user", "content": fr1, "timestamp": "2026-02-11T11:11:11"},
        {"role": "assistant", "content": "Très bien, déjà fait.", "timestamp": "2026-02-11T11:11:11"}], encoding="cp1252")
    snapshot(case / "home/sessions" / f"session_{s3}.json", s3,
             [{"role": "user", "content": tr1}, {"role": "assistant", "content": tr2}],
             start="2026-02-12T12:12:12", encoding="cp1254")
    q = "SELECT content FROM messages WHERE session_id = '{}' ORDER BY timestamp, id"
    write_expected(case, {
        "issue": "Code pages: Windows installs wrote cp1254/cp1252 (open() without encoding); choose per file by evidence, report it",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            [q.format(s1), [[tr1], [tr2]]], [q.format(s2), [[fr1], ["Très bien, déjà fait."]]], [q.format(s3), [[tr1], [tr2]]]],
            "report": {"detail_contains": ["cp1254", "cp1252"]}}, IMPORT_TWICE[1]]})


def western_windows_transcript() -> None:
    case = fresh("western_windows_transcript")
    sid = "20260218_193000_5ca1ab1e"
    text = "Café naïve résumé — “smart quotes” … €5 ±2 ½"
    msgs = [{"role": "user", "content": text, "timestamp": "2026-02-18T19:30:05"},
            {"role": "assistant", "content": "Noted: “Café naïve résumé”, €5 ±2 ½.", "timestamp": "2026-02-18T19:30:05"}]
    # gateway/session.py (Feb 2026) opened the transcript with open(path, "a") and no encoding: a
    # Western European Windows wrote it in cp1252
    jsonl(case / "home/sessions" / f"{sid}.jsonl", [meta(ts="2026-02-18T19:30:00")] + msgs, encoding="cp1252")
    q = f"SELECT content FROM messages WHERE session_id = '{sid}' ORDER BY timestamp, id"
    write_expected(case, {
        "issue": "cp1252 transcript of a Western European Windows install was read as cp1250 (naïve as naďve, ½ as ˝)",
        "steps": [{**IMPORT_TWICE[0], "sql": [[q, [[m["content"]] for m in msgs]]],
                   "report": {"detail_contains": ["cp1252 chosen"]}}, IMPORT_TWICE[1]]})


def save_without_session_start() -> None:
    case = fresh("save_without_session_start")
    saved = case / "home/sessions/saved"
    saved.mkdir(parents=True)
    # tui_gateway/server.py session.save: json.dump({"model": ..., "messages": history}) only
    (saved / "hermes_conversation_20260415_143012.json").write_text(json.dumps(
        {"model": "anthropic/claude-opus-4.6", "messages": [
            {"role": "user", "content": "save test"}, {"role": "assistant", "content": "saved"}]},
        indent=2, ensure_ascii=False), encoding="utf-8")
    t = epoch("2026-04-15T14:30:12")
    write_expected(case, {
        "issue": "/save files without session_start (TUI wrote only {model, messages}): start at the file name's date/time",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            ["SELECT COUNT(*) FROM sessions", 1],
            [f"SELECT COUNT(*) FROM sessions WHERE abs(started_at - {t}) < 1", 1],
            [f"SELECT COUNT(*) FROM messages WHERE timestamp < {t} - 1 OR timestamp > {t} + 86400", 0]]},
            IMPORT_TWICE[1]]})


def hermes_agent_logs() -> None:
    case = fresh("hermes_agent_logs")
    log_sid, gw_sid = "20260206_101010_1a2b3c", "20260210_090000_aabbccdd"
    sharegpt_log(case, log_sid, log_sid, "2026-02-06T10:10:10", "2026-02-06T10:12:00", [
        {"from": "human", "value": "What's 2+2?"}, {"from": "gpt", "value": "<think>\nsimple\n</think>\n4"}])
    jsonl(case / "home/sessions" / f"{gw_sid}.jsonl", [{"role": "user", "content": "hey", "timestamp": "2026-02-10T09:00:01"},
                                                     {"role": "assistant", "content": "hi", "timestamp": "2026-02-10T09:00:01"}])
    write_expected(case, {
        "issue": "Logs beside the install: $HERMES_HOME/hermes-agent/logs/session_*.json must be found when importing a HERMES_HOME",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            [f"SELECT COUNT(*) FROM sessions WHERE id = '{log_sid}'", 1],
            [f"SELECT COUNT(*) >= 2 FROM messages WHERE session_id = '{log_sid}'", 1],
            [count(gw_sid), 2]]}, IMPORT_TWICE[1]]})


def nested_folders() -> None:
    case = fresh("nested_folders")
    shutil.rmtree(case / "home")
    b = case / "home"  # here "home" is a backups/ folder, not a HERMES_HOME
    ids = ["20260201_100000_0000000a", "20260202_100000_0000000b", "20260204_100000_0000000d"]
    for n, (sid, sub) in enumerate(zip(ids, ["", "2026-03", "old/deeper"])):
        jsonl(b / sub / f"{sid}.jsonl", [{"role": "user", "content": f"q{n}", "timestamp": "2026-02-01T10:00:00"},
                                       {"role": "assistant", "content": f"a{n}", "timestamp": "2026-02-01T10:00:00"}])
    snapshot(b / "laptop/sessions" / "session_20260203_100000_00000c.json", "20260203_100000_00000c",
             [{"role": "user", "content": "c"}, {"role": "assistant", "content": "c!"}], start="2026-02-03T10:00:00")
    (b / "photos").mkdir()
    (b / "photos/cat.png").write_bytes(b"\x89PNG\r\n")
    (b / "notes.txt").write_text("my backups\n")
    write_expected(case, {
        "issue": "Nested folders: walk recursively, report every file/folder not read with the reason",
        "steps": [{**IMPORT_TWICE[0], "sql": [["SELECT COUNT(*) FROM sessions", 4],
                                            ["SELECT COUNT(*) FROM messages", 8]],
                   "report": {"min": {"files_read": 4},
                              "problem": [{"file_endswith": "notes.txt"}, {"file_endswith": "cat.png"}],
                              "no_problem": [{"detail_contains": "holds no transcripts", "file_endswith": "laptop"},
                                             {"detail_contains": "holds no transcripts", "file_endswith": "2026-03"},
                                             {"detail_contains": "holds no transcripts", "file_endswith": "old"}]}},
                  IMPORT_TWICE[1]]})


def hermes_export() -> None:
    case = fresh("hermes_sessions_export")
    src = case / "source.db"
    db = SessionDB(src)
    db.create_session("20260320_101010_abcdef12", "telegram", model="anthropic/claude-sonnet-4", user_id="12345")
    db.set_session_title("20260320_101010_abcdef12", "Trip plan")
    db.append_message("20260320_101010_abcdef12", "user", "Plan a trip to İzmir")
    db.append_message("20260320_101010_abcdef12", "assistant", "Day 1: Kemeraltı.", finish_reason="stop",
                      reasoning="Think about sights.")
    db.update_token_counts("20260320_101010_abcdef12", input_tokens=1200, output_tokens=340)
    db.end_session("20260320_101010_abcdef12", "session_reset")
    db.create_session("20260321_080000_a1b2c3", "cli", model="openai/gpt-4o")
    call = [{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\":\"date\"}"}}]
    db.append_message("20260321_080000_a1b2c3", "user", "what day is it")
    db.append_message("20260321_080000_a1b2c3", "assistant", None, tool_calls=call, finish_reason="tool_calls")
    db.append_message("20260321_080000_a1b2c3", "tool", "Sat Mar 21", tool_call_id="call_1", tool_name="terminal")
    db.append_message("20260321_080000_a1b2c3", "assistant", "Saturday.")
    db.end_session("20260321_080000_a1b2c3", "compression")
    db.create_session("20260321_090000_d4e5f6", "cli", model="openai/gpt-4o", parent_session_id="20260321_080000_a1b2c3")
    db.append_message("20260321_090000_d4e5f6", "user", [{"type": "text", "text": "and this?"},
                                                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}])
    db.append_message("20260321_090000_d4e5f6", "assistant", "A calendar.")
    out = case / "home" / "hermes-backup.jsonl"  # `hermes sessions export hermes-backup.jsonl`
    with open(out, "w", encoding="utf-8") as f:
        for s in db.export_all():  # hermes_cli/main.py: f.write(_json.dumps(s, ensure_ascii=False) + "\n")
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    originals = {r[0]: r[1] for r in db._conn.execute("SELECT session_id, COUNT(*) FROM messages GROUP BY session_id")}
    db.close()
    shutil.rmtree(case / "home/sessions")
    src.unlink()
    for suffix in ("-wal", "-shm"):
        Path(str(src) + suffix).unlink(missing_ok=True)
    write_expected(case, {
        "issue": "Hermes' own export (`hermes sessions export FILE`): sessions columns + messages rows per line",
        "import_path": "home/hermes-backup.jsonl",
        "steps": [{**IMPORT_TWICE[0], "sql": [
            ["SELECT COUNT(*) FROM sessions", 3],
            *[[count(sid), n] for sid, n in originals.items()],
            ["SELECT COUNT(*) FROM sessions WHERE id = 'hermes-backup'", 0],
            ["SELECT title, user_id, input_tokens, output_tokens, end_reason FROM sessions WHERE id = '20260320_101010_abcdef12'",
             [["Trip plan", "12345", 1200, 340, "session_reset"]]],
            ["SELECT parent_session_id FROM sessions WHERE id = '20260321_090000_d4e5f6'", "20260321_080000_a1b2c3"],
            ["SELECT tool_name FROM messages WHERE tool_call_id = 'call_1'", "terminal"]],
            "report": {"eq": {"records_not_stored": 0}, "no_problem": [{"kind": "missing_role"}]}},
            IMPORT_TWICE[1]]})


def export_round_trip_of_doubled_rows() -> None:
    case = fresh("export_round_trip_of_doubled_rows")
    s1, s2 = "20260216_101500_b10cb10c", "20260217_201500_c20dc20d"
    turns = [("hi", "Hello!"), ("weather?", "Sunny."), ("ok", "Anything else?"), ("ok", "Bye.")]

    def stamped(day: int, pairs: list) -> list:
        return [{"role": role, "content": text, "timestamp": f"2026-02-{day}T10:{15 + n}:00"}
                for n, (q, a) in enumerate(pairs) for role, text in (("user", q), ("assistant", a))]

    once1, once2 = stamped(16, turns), stamped(17, turns[:2])
    # Hermes #860 (February 2026): the gateway re-appended the whole history, stamped with the turn's
    # time, before the turn's own messages; and the agent stored each reply twice. Rows that the
    # database holds as Hermes wrote them: the import leaves them as they are.
    rows1 = once1[:4] + [{**m, "timestamp": once1[4]["timestamp"]} for m in once1[:4]] + once1[4:]
    rows2 = [m for m in once2 for _ in range(2 if m["role"] == "assistant" else 1)]
    gateway_db(case / "state.db", [{"id": s1, "messages": rows1, "started": "2026-02-16T10:15:00"},
                                   {"id": s2, "messages": rows2, "started": "2026-02-17T20:15:00"}])
    jsonl(case / "home/sessions" / f"{s1}.jsonl", [meta(ts="2026-02-16T10:15:00")] + once1)
    snapshot(case / "home/sessions" / f"session_{s2}.json", s2, once2, platform="telegram",
             start="2026-02-17T20:15:00", clean=False)
    write_expected(case, {
        "issue": "An export of this project's format is a faithful dump: the rows Hermes doubled (#860) come back row for row",
        "steps": [{**IMPORT_TWICE[0], "sql": [[count(s1), len(rows1)], [count(s2), len(rows2)]], "round_trip": True},
                  {**IMPORT_TWICE[1], "round_trip": True}]})


def merge_other_db() -> None:
    case = fresh("merge_other_db")
    shutil.rmtree(case / "home")
    a, b = "20260401_100000_aaaa0001", "20260402_100000_bbbb0002"
    msgs = [{"role": "user", "content": f"m{n}", "timestamp": f"2026-04-01T10:0{n}:00"} if n % 2 == 0 else
            {"role": "assistant", "content": f"m{n}", "timestamp": f"2026-04-01T10:0{n}:00"} for n in range(5)]
    gateway_db(case / "state.db", [{"id": a, "messages": msgs[:3], "started": "2026-04-01T10:00:00"}])
    gateway_db(case / "other.db", [{"id": a, "messages": msgs, "started": "2026-04-01T10:00:00"},
                                   {"id": b, "source": "discord", "model": "x/y", "started": "2026-04-02T10:00:00",
                                    "messages": [{"role": "user", "content": "b0", "timestamp": "2026-04-02T10:00:01"},
                                                 {"role": "assistant", "content": "b1", "timestamp": "2026-04-02T10:00:02"}]}])
    write_expected(case, {
        "issue": "hermes-state merge OTHER.db (new): same alignment, nothing doubles, re-run adds nothing, OTHER only read",
        "steps": [{"cmd": "merge", "name": "first merge", "sql": [[count(a), 5], [count(b), 2],
                   [f"SELECT source, model FROM sessions WHERE id = '{b}'", [["discord", "x/y"]]]],
                   "report": {"eq": {"sessions_created": 1, "sessions_updated": 1, "messages_imported": 4,
                                     "messages_skipped_duplicate": 3}}, "other_unchanged": True},
                  {"cmd": "merge", "name": "re-merge", "sql": [[count(a), 5], [count(b), 2]],
                   "report": {"eq": {"sessions_created": 0, "messages_imported": 0}}, "other_unchanged": True}]})


def session_meta_rows() -> None:
    case = fresh("session_meta_rows_foreign_role")
    s, t = "20260212_070000_5e55e55e", "20260213_070000_7e77e77e"
    m = meta(model="anthropic/claude-opus-4.6", platform="telegram", ts="2026-02-12T07:00:00")
    msgs = [{"role": "user", "content": "morning", "timestamp": "2026-02-12T07:00:01"},
            {"role": "assistant", "content": "Good morning!", "timestamp": "2026-02-12T07:00:01"}]
    jsonl(case / "home/sessions" / f"{s}.jsonl", [m] + msgs)
    # gateway/session.py append_to_transcript (Feb 2026) sent every line to SQLite too:
    # role=message.get("role"), content=message.get("content") -> a 'session_meta' row with NULL content.
    gateway_db(case / "state.db", [
        {"id": s, "model": None, "started": "2026-02-12T07:00:00",
         "messages": [{"role": "session_meta", "content": None, "timestamp": "2026-02-12T07:00:00"}] + msgs},
        {"id": t, "model": None, "started": "2026-02-13T07:00:00",
         "messages": [{"role": "session_meta", "content": None, "timestamp": "2026-02-13T07:00:00"},
                      {"role": "user", "content": "t", "timestamp": "2026-02-13T07:00:01"}]}])
    write_expected(case, {
        "issue": "session_meta rows in messages (Feb 2026 gateway): check reports foreign_role, repair/import move them to extra data",
        "steps": [
            {"cmd": "check", "name": "check reports foreign_role", "expect_exit": [1],
             "report": {"problem": [{"kind": "foreign_role", "session_ids_include": [s, t]}]}},
            {"cmd": "import", "name": "import over it fixes the touched session", "sql": [
                [count(s, " AND role = 'session_meta'"), 0], [count(s), 2],
                [f"SELECT model FROM sessions WHERE id = '{s}'", "anthropic/claude-opus-4.6"],
                [count(t, " AND role = 'session_meta'"), 1]]},
            {"cmd": "repair", "name": "repair moves the rest", "sql": [
                ["SELECT COUNT(*) FROM messages WHERE role = 'session_meta'", 0], [count(t), 1],
                [f"SELECT message_count FROM sessions WHERE id = '{t}'", 1]]},
            {"cmd": "check", "name": "clean afterwards", "expect_exit": [0], "report": {"no_problem": [{"kind": "foreign_role"}]}},
            {"cmd": "import", "name": "re-run", "report": {"eq": {"messages_imported": 0, "sessions_created": 0}}}]})


def integer_overflow() -> None:
    case = fresh("integer_overflow")
    s1, s2 = "20260225_101010_0f0f0f0f", "20260226_101010_1e1e1e1e"
    for sid, day in ((s1, 25), (s2, 26)):
        jsonl(case / "home/sessions" / f"{sid}.jsonl", [{"role": "user", "content": "x", "timestamp": f"2026-02-{day}T10:10:11"},
                                                      {"role": "assistant", "content": "y", "timestamp": f"2026-02-{day}T10:10:11"}])
    index = {"_README": "gateway index",
             "agent:main:telegram:dm:1": {"session_key": "agent:main:telegram:dm:1", "session_id": s1,
                                          "created_at": "2026-02-25T10:10:10", "updated_at": "2026-02-25T10:11:00",
                                          "platform": "telegram", "chat_type": "dm", "input_tokens": 2 ** 70,
                                          "output_tokens": 5, "total_tokens": 2 ** 70 + 5,
                                          "origin": {"platform": "telegram", "chat_id": "1", "user_id": "u1"}},
             "agent:main:discord:dm:2": {"session_key": "agent:main:discord:dm:2", "session_id": s2,
                                         "created_at": "2026-02-26T10:10:10", "updated_at": "2026-02-26T10:11:00",
                                         "platform": "discord", "chat_type": "dm", "input_tokens": 10,
                                         "output_tokens": 5, "total_tokens": 15,
                                         "origin": {"platform": "discord", "chat_id": "2", "user_id": "u2"}}}
    (case / "home/sessions/sessions.json").write_text(json.dumps(index, indent=2), encoding="utf-8")
    write_expected(case, {
        "issue": "Integer beyond 64 bits in sessions.json: a problem entry for that record, everything else imports",
        "steps": [{**IMPORT_TWICE[0], "expect_exit": [0, 1], "sql": [
            [count(s1), 2], [count(s2), 2], [f"SELECT source, user_id FROM sessions WHERE id = '{s2}'", [["discord", "u2"]]]],
            "report": {"problem": [{"file_endswith": "sessions.json"}]}},
            {**IMPORT_TWICE[1], "expect_exit": [0, 1]}]})


def bad_file_names() -> None:
    case = fresh("bad_file_names")
    good = "20260227_101010_2d2d2d2d"
    rec = [{"role": "user", "content": "x", "timestamp": "2026-02-27T10:10:11"},
           {"role": "assistant", "content": "y", "timestamp": "2026-02-27T10:10:11"}]
    jsonl(case / "home/sessions" / f"{good}.jsonl", rec)
    jsonl(case / "home/sessions" / ".jsonl", rec)
    (case / "home/sessions/session_.json").write_text(json.dumps({"model": "m", "messages": rec}, indent=2))
    write_expected(case, {
        "issue": "File names that yield no session id (session_.json, .jsonl) are problems, not sessions",
        "steps": [{**IMPORT_TWICE[0], "expect_exit": [0, 1], "sql": [
            ["SELECT COUNT(*) FROM sessions", 1], ["SELECT COUNT(*) FROM sessions WHERE id IN ('', '.jsonl', '.json')", 0]],
            "report": {"problem": [{"file_endswith": "/.jsonl"}, {"file_endswith": "session_.json"}]}},
            {**IMPORT_TWICE[1], "expect_exit": [0, 1]}]})


def report_grouping() -> None:
    case = fresh("report_grouping")
    sid = "20260228_101010_3c3c3c3c"
    lines = [json.dumps({"role": "user", "content": "start", "timestamp": "2026-02-28T10:10:11"})]
    for n in range(300):
        lines += ["", "", "", json.dumps({"content": f"no role {n}", "timestamp": "2026-02-28T10:10:12"})]
    lines.append(json.dumps({"role": "assistant", "content": "end", "timestamp": "2026-02-28T10:10:13"}))
    jsonl(case / "home/sessions" / f"{sid}.jsonl", lines)
    write_expected(case, {
        "issue": "Report: notices apart from failures; human report grouped by kind with counts, a few examples, points to --json",
        "steps": [{"cmd": "import", "name": "json report", "expect_exit": [1],
                   "report": {"eq": {"records_not_stored": 300}, "failures_separable": True}},
                  {"cmd": "import", "name": "human report", "json": False, "expect_exit": [1],
                   "stdout_contains": ["missing_role", "300", "blank_line", "900", "--json"], "stdout_max_lines": 60}]})


def dry_run_names() -> None:
    case = fresh("dry_run_names")
    a, b = "20260301_101010_4b4b4b4b", "20260302_101010_5a5a5a5a"
    msgs = [{"role": "user", "content": "one", "timestamp": "2026-03-01T10:10:11"},
            {"role": "assistant", "content": "two", "timestamp": "2026-03-01T10:10:12"},
            {"role": "user", "content": "three", "timestamp": "2026-03-01T10:10:13"},
            {"role": "assistant", "content": "four", "timestamp": "2026-03-01T10:10:14"}]
    jsonl(case / "home/sessions" / f"{a}.jsonl", msgs)
    jsonl(case / "home/sessions" / f"{b}.jsonl", [{**m, "timestamp": m["timestamp"].replace("03-01", "03-02")} for m in msgs])
    gateway_db(case / "state.db", [{"id": a, "messages": msgs[:2], "started": "2026-03-01T10:10:10"}])
    conn = sqlite3.connect(case / "state.db")  # make it a v5 file: the real run would upgrade it (and back it up)
    for col in ("reasoning", "reasoning_details", "codex_reasoning_items"):
        conn.execute(f"ALTER TABLE messages DROP COLUMN {col}")
    conn.execute("UPDATE schema_version SET version = 5")
    conn.commit()
    conn.close()
    write_expected(case, {
        "issue": "--dry-run names the sessions it would create and update (--json: lists), says the real run upgrades + backs up",
        "steps": [{"cmd": "import", "name": "dry run json", "args": ["--dry-run"], "db_unchanged": True,
                   "report": {"eq": {"sessions_created": 1, "sessions_updated": 1, "messages_imported": 6},
                              "list_containing": [b, a]}},
                  {"cmd": "import", "name": "dry run human", "args": ["--dry-run"], "json": False, "db_unchanged": True,
                   "stdout_contains": [a, b, "upgrade", "backup"]}]})


def build_all(root: Path) -> list[str]:
    """Build every case under `root`; returns the case names."""
    global ROOT
    ROOT = root
    ROOT.mkdir(parents=True, exist_ok=True)
    for build in BUILDERS:
        build()
    return sorted(p.name for p in ROOT.iterdir() if (p / "expected.json").exists())


def main() -> None:
    import sys
    build_all(Path(sys.argv[1]))


BUILDERS = (cleaned_snapshot_text, flattened_images, inflated_snapshots, compression_child, unpaired_surrogates,
                  enrichment, empty_model, code_pages, save_without_session_start, hermes_agent_logs, nested_folders,
                  hermes_export, merge_other_db, session_meta_rows, integer_overflow, bad_file_names, report_grouping,
                  dry_run_names, western_windows_transcript,
                  doubled_replies_mirror_era, export_round_trip_of_doubled_rows,
                  trailing_space_rewrite_era, mirror_tagged_in_gateway_snapshot, sharegpt_log_beside_jsonl,
                  sharegpt_compression_child)


if __name__ == "__main__":
    main()
