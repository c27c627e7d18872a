"""A seeded fuzzer of one session's copies as Hermes wrote them: the timed JSONL (parts with images,
tool calls, lone surrogates, scratchpad tags), maybe a snapshot (cleaned text, each exchange written
1-3 times) and maybe a gateway state.db holding a prefix of it (flattened images, bare rows).
Every message must be stored once, and a re-run must change nothing. More seeds: pytest -m soak."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from import_helpers import export_bytes, import_json, query
from legacy_cases import clean_session_content, durable_content, epoch

from hermes_state_tools import SessionDB

WORDS = ["ok", "yes", "continue", "deploy it", "done.", "<REASONING_SCRATCHPAD>t</REASONING_SCRATCHPAD>\n\n\nok",
         "hi 👋", "cut \ud83d"]
PNG = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
SID = "20260301_100000_abcdef01"


def transcript(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(rng.randint(1, 7)):
        stamp = f"2026-03-01T10:{n:02d}:00"
        question: Any = rng.choice(WORDS)
        if rng.random() < 0.2:
            question = [{"type": "text", "text": question}, PNG]
        messages.append({"role": "user", "content": question, "timestamp": stamp})
        if rng.random() < 0.3:
            call = {"id": f"call_{n}", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
            messages.append({"role": "assistant", "content": "", "tool_calls": [call], "timestamp": stamp})
            messages.append({"role": "tool", "content": rng.choice(WORDS), "tool_call_id": call["id"],
                             "timestamp": stamp})
        messages.append({"role": "assistant", "content": rng.choice(WORDS), "timestamp": stamp, "reasoning": "r"})
    return messages


def inflated_snapshot(rng: random.Random, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    exchanges: list[list[dict[str, Any]]] = []
    for message in messages:
        if message["role"] == "user" or not exchanges:
            exchanges.append([])
        exchanges[-1].append(message)
    snapshot = []
    for exchange in exchanges:
        for _ in range(rng.choice([1, 1, 2, 3])):
            for m in exchange:
                content = m["content"]
                if m["role"] == "assistant" and isinstance(content, str) and content:
                    content = clean_session_content(content)
                kept = {k: v for k, v in m.items() if k not in ("timestamp", "reasoning")}
                snapshot.append(kept | {"content": content})
    return snapshot


def gateway_db(path: Path, messages: list[dict[str, Any]]) -> None:
    db = SessionDB(path)
    db.create_session(SID, "telegram")
    for m in messages:
        content = durable_content(m["content"])
        content = content.replace("\ud83d", "\ufffd") if isinstance(content, str) else content
        mid = db.append_message(SID, m["role"], content=content, tool_calls=m.get("tool_calls"),
                                tool_call_id=m.get("tool_call_id"))
        db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (epoch(m["timestamp"]), mid))
    db._conn.commit()
    db.close()


def check_seed(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    messages = transcript(rng)
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / f"{SID}.jsonl").write_text("".join(json.dumps(m) + "\n" for m in messages))
    if rng.random() < 0.7:
        snapshot = {"session_id": SID, "messages": inflated_snapshot(rng, messages)}
        (folder / f"session_{SID}.json").write_text(json.dumps(snapshot))
    db = tmp_path / "state.db"
    with_db = rng.random() < 0.5
    if with_db:
        gateway_db(db, messages[:rng.randint(0, len(messages))])
    import_json(db, folder, options=["--tz", "UTC"])
    _code, again = import_json(db, folder, options=["--tz", "UTC"])
    roles = [r["role"] for r in query(db, "SELECT role FROM messages ORDER BY timestamp, id")]
    assert roles == [m["role"] for m in messages], f"seed {seed}"
    assert (again["messages_imported"], again["sessions_updated"], again["messages_enriched"]) == (0, 0, 0)
    if not with_db:  # (the fuzzer's gateway rows share their turn's time; Hermes' own never tie)
        exported = export_bytes(db)
        (tmp_path / "export.jsonl").write_bytes(exported)
        import_json(tmp_path / "copy.db", tmp_path / "export.jsonl")
        assert export_bytes(tmp_path / "copy.db") == exported, f"seed {seed}: the round trip changed something"


@pytest.mark.parametrize("seed", range(8))
def test_fuzzed_copies(tmp_path, seed):
    check_seed(tmp_path, seed)


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(8, 300))
def test_fuzzed_copies_soak(tmp_path, seed):
    check_seed(tmp_path, seed)
