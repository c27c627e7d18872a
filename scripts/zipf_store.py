"""Build a v6 Hermes state.db of N messages fast: Zipf text over a 50,000-word vocabulary.

    python scripts/zipf_store.py /tmp/store1m.db --messages 1000000

Used by scripts/bench.py --messages N (the at-scale cases).

Schema comes from the project (SessionDB(path).close()); rows are inserted raw with the FTS
triggers dropped, the index is rebuilt once, then the triggers are restored from the SQL they
had in sqlite_master.  Deterministic for a given --seed.

Sessions: ~20 messages each (uniform 10..30), started_at spread over the last 365 days, all
but the newest 5% ended.  Roles: user / assistant (some with tool_calls) / tool.
Text: words drawn from Zipf(s=1.0) over VOCAB words; top-10 words are ZIPF_TOP below.
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import random
import sqlite3
import sys
import time

VOCAB = 50_000
S = 1.0
_SYL = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ve", "da", "zu", "fi", "go", "he", "ji",
        "qu", "xa", "yo", "wi", "be", "co", "el", "an", "or", "is", "um", "ex", "ot", "ar", "en"]


def vocabulary(n: int = VOCAB) -> list[str]:
    """n distinct lowercase pseudo-words; short ones are the most frequent (like real text)."""
    words, seen = [], set()
    for length in itertools.count(1):
        for combo in itertools.product(_SYL, repeat=length):
            w = "".join(combo)
            if w not in seen and len(w) > 1:
                seen.add(w)
                words.append(w)
                if len(words) == n:
                    return words


WORDS = vocabulary()
ZIPF_TOP = WORDS[:10]


def cum_weights(n: int = VOCAB, s: float = S) -> list[float]:
    return list(itertools.accumulate(1.0 / (k ** s) for k in range(1, n + 1)))


def build(path: str, n_messages: int, seed: int = 11, per_session: int = 20, mean_words: int = 24) -> dict:
    from hermes_state_tools import SessionDB

    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    t0 = time.perf_counter()
    SessionDB(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    triggers = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type='trigger' AND tbl_name='messages' ORDER BY name").fetchall()
    conn.execute("PRAGMA journal_mode=OFF")  # build only; WAL is restored at the end
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-400000")
    conn.execute("BEGIN")
    for name, _sql in triggers:
        conn.execute(f"DROP TRIGGER {name}")

    rng = random.Random(seed)
    cw = cum_weights()
    total_w = cw[-1]
    now = time.time()
    year = 365 * 86400.0
    sources = ["cli", "telegram", "discord", "slack", "whatsapp"]
    models = ["anthropic/claude-sonnet-4", "openai/gpt-5", "qwen/qwen3-coder"]

    def text(k: int) -> str:
        # choices() with cum_weights bisects; draw uniforms ourselves to avoid per-call overhead
        rnd = rng.random
        return " ".join([WORDS[bisect.bisect(cw, rnd() * total_w)] for _ in range(k)])

    n_sessions = 0
    msg_id = 0
    sess_rows, msg_rows = [], []
    n_expected = max(1, n_messages // per_session)
    t_gen = 0.0
    while msg_id < n_messages:
        n_sessions += 1
        sid = f"{20250101 + n_sessions:08d}_{rng.getrandbits(40):010x}"
        started = now - year + year * (n_sessions / n_expected) + rng.random() * 60
        count = min(rng.randint(per_session // 2, per_session * 3 // 2), n_messages - msg_id)
        ended = None if n_sessions > n_expected * 0.95 else started + count * 30 + 5
        tools = 0
        ts = started
        g0 = time.perf_counter()
        for i in range(count):
            msg_id += 1
            ts += rng.random() * 30
            role = "user" if i % 3 == 0 else "assistant" if i % 3 == 1 or rng.random() >= .6 else "tool"
            k = max(1, int(rng.expovariate(1.0 / mean_words)))
            tool_calls = tool_name = tool_call_id = None
            if role == "assistant" and rng.random() < 0.3:
                tool_calls = json.dumps([{"id": f"call_{msg_id}", "type": "function",
                                          "function": {"name": "terminal", "arguments": "{}"}}])
                tools += 1
            if role == "tool":
                tool_name, tool_call_id = "terminal", f"call_{msg_id - 1}"
            msg_rows.append((msg_id, sid, role, text(k), tool_call_id, tool_calls, tool_name, ts,
                             k + 3 if role == "assistant" else None,
                             "stop" if role == "assistant" else None))
        t_gen += time.perf_counter() - g0
        sess_rows.append((sid, sources[n_sessions % len(sources)], models[n_sessions % 3], started, ended,
                          "user_exit" if ended else None, count, tools))
        if len(msg_rows) >= 50_000:
            flush(conn, sess_rows, msg_rows)
    flush(conn, sess_rows, msg_rows)
    t_rows = time.perf_counter()
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES('rebuild')")
    t_fts = time.perf_counter()
    for _name, sql in triggers:
        conn.execute(sql)
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    t1 = time.perf_counter()
    return {"path": path, "messages": msg_id, "sessions": n_sessions, "bytes": os.path.getsize(path),
            "seconds_total": round(t1 - t0, 1), "seconds_rows": round(t_rows - t0, 1),
            "seconds_textgen": round(t_gen, 1), "seconds_fts_rebuild": round(t_fts - t_rows, 1),
            "top10": ZIPF_TOP}


def flush(conn: sqlite3.Connection, sess_rows: list, msg_rows: list) -> None:
    conn.executemany(
        "INSERT INTO sessions (id, source, model, started_at, ended_at, end_reason, message_count, "
        "tool_call_count) VALUES (?,?,?,?,?,?,?,?)", sess_rows)
    conn.executemany(
        "INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_calls, tool_name, "
        "timestamp, token_count, finish_reason) VALUES (?,?,?,?,?,?,?,?,?,?)", msg_rows)
    sess_rows.clear()
    msg_rows.clear()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    print(json.dumps(build(a.path, a.messages, a.seed)), flush=True)
    sys.exit(0)
