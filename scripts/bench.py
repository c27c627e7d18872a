"""Benchmarks, each as a ratio against a baseline measured in the same run (these machines are noisy).

    python scripts/bench.py                 # 2,000 sessions / ~200,000 messages, plus RSS at 4x
    python scripts/bench.py --sessions 200  # a quick run
    python scripts/bench.py --messages 1000000  # the at-scale cases (scripts/bench_scale.py) and the
                                                # short-session import (10,000 sessions x 10 messages)
    python scripts/bench.py --short             # the short-session import alone

1. import: `hermes-state import-jsonl` end to end (process start to exit, FTS complete) on a
   generated corpus of gateway JSONL transcripts, against the raw SQLite bulk limit: the same
   rows, pre-parsed, inserted in one transaction with the FTS triggers dropped, then one FTS
   `rebuild`. Ratio = baseline time / import time (1.0 = as fast as the bulk limit).
2. memory: peak RSS of the import process at 1x and 4x the corpus (flat means streaming).
3. export: `hermes-state export` of the whole database against a bare SELECT of the same rows
   serialised with orjson. Ratio = baseline time / export time.
4. one big session (--big-mb, default 200; 0 skips): peak RSS of importing one gateway JSONL of that
   much text (tool outputs of ~1 MB) and of importing it again, against the bar of about twice the
   session's text.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from hermes_state_tools.core.schema import TRIGGERS, schema_statements

WORDS = [
    "the", "deploy", "build", "docker", "config", "server", "staging", "prod", "error", "retry", "cache",
    "token", "session", "agent", "memory", "query", "index", "table", "worker", "queue", "timeout",
    "latency", "disk", "usage", "kernel", "network", "route",
]
START = dt.datetime(2026, 3, 1, 9, 0, 0)


def _text(rng: random.Random, chars: int) -> str:
    out, size = [], 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _length(rng: random.Random) -> int:
    if rng.random() < 0.03:
        return rng.randint(5_000, 20_000)  # a big tool output
    return max(20, int(rng.lognormvariate(5.7, 0.6)))  # median ~300 characters


def _session_lines(rng: random.Random, index: int, messages: int) -> tuple[str, list[dict]]:
    started = START + dt.timedelta(minutes=index * 7)
    sid = started.strftime("%Y%m%d_%H%M%S_") + f"{index:08x}"
    lines: list[dict] = [{"role": "session_meta", "model": "anthropic/claude-opus-4.6", "platform": "telegram",
                          "timestamp": started.isoformat()}]
    clock = started
    for n in range(messages):
        clock += dt.timedelta(seconds=rng.randint(1, 90))
        role = ("user", "assistant", "assistant", "tool")[n % 4]
        line: dict = {"role": role, "content": _text(rng, _length(rng)), "timestamp": clock.isoformat()}
        if role == "assistant" and n % 4 == 1:
            line["tool_calls"] = [{"id": f"call_{index}_{n}", "type": "function",
                                   "function": {"name": "terminal", "arguments": '{"command": "ls"}'}}]
        if role == "tool":
            line["tool_call_id"] = f"call_{index}_{n - 2}"
        lines.append(line)
    return sid, lines


def make_corpus(folder: Path, sessions: int, per_session: int, seed: int = 7) -> list[tuple[str, list[dict]]]:
    """Write `{id}.jsonl` files; returns the parsed lines (the baseline's pre-parsed rows)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    corpus = []
    for index in range(sessions):
        sid, lines = _session_lines(rng, index, per_session)
        (folder / f"{sid}.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
        corpus.append((sid, lines))
    return corpus


def _rows(corpus: list[tuple[str, list[dict]]]) -> tuple[list[tuple], list[tuple]]:
    """The sessions and messages rows of parsed transcripts, as the baselines insert them."""
    sessions, messages = [], []
    for sid, lines in corpus:
        meta, rest = lines[0], lines[1:]
        stamp = dt.datetime.fromisoformat(meta["timestamp"]).timestamp()
        sessions.append((sid, "telegram", meta["model"], stamp))
        for line in rest:
            calls = orjson.dumps(line["tool_calls"]).decode() if "tool_calls" in line else None
            messages.append((sid, line["role"], line["content"], line.get("tool_call_id"), calls,
                             dt.datetime.fromisoformat(line["timestamp"]).timestamp()))
    return sessions, messages


def _bulk_load(db: Path, rows: Callable[[], tuple[list[tuple], list[tuple]]]) -> float:
    """Seconds for `rows()` and their raw insert in one transaction (triggers dropped, one FTS rebuild)."""
    conn = sqlite3.connect(str(db), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    for statement in schema_statements():
        conn.execute(statement)
    began = time.perf_counter()
    sessions, messages = rows()
    conn.execute("BEGIN")
    for name in TRIGGERS:
        conn.execute(f"DROP TRIGGER {name}")
    conn.executemany("INSERT INTO sessions (id, source, model, started_at) VALUES (?, ?, ?, ?)", sessions)
    conn.executemany("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, timestamp) "
                     "VALUES (?, ?, ?, ?, ?, ?)", messages)
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - began
    conn.close()
    return elapsed


def bulk_limit(db: Path, corpus: list[tuple[str, list[dict]]]) -> float:
    """Seconds for the raw bulk insert of pre-parsed rows (triggers dropped, one FTS rebuild)."""
    rows = _rows(corpus)
    return _bulk_load(db, lambda: rows)


def naive_import(db: Path, folder: Path) -> float:
    """Seconds for the simplest one-process importer of the same files: read each, parse its lines
    with orjson, then the bulk limit's insert. No checks, no repairs, no crash safety: a second
    reference point (the goal is against bulk_limit)."""
    def rows() -> tuple[list[tuple], list[tuple]]:
        corpus = [(path.stem, [orjson.loads(line) for line in path.read_bytes().splitlines()])
                  for path in sorted(folder.glob("*.jsonl"))]
        return _rows(corpus)

    return _bulk_load(db, rows)


# A small parent runs the command and reports its peak RSS: a child forked straight from this
# (large) benchmark process would count this process's memory as its own until it execs.
_MEASURE = """
import os, resource, subprocess, sys, time
began = time.perf_counter()
code = subprocess.call([sys.executable, "-m", "hermes_state_tools", *sys.argv[1:]], stdout=subprocess.DEVNULL)
print(time.perf_counter() - began, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)
"""


def run_cli(args: list[str]) -> tuple[float, int]:
    """Seconds (process start to exit) and peak RSS (KiB) of one `hermes-state` run."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *args], capture_output=True, text=True, check=True)
    elapsed, rss, code = out.stdout.split()
    if int(code) not in (0, 1):
        raise SystemExit(f"hermes-state {' '.join(args)} exited {code}: {out.stderr}")
    return float(elapsed), int(rss)


def export_baseline(db: Path, out: Path) -> float:
    """Seconds for a bare SELECT of every session and message row, serialised with orjson."""
    began = time.perf_counter()
    conn = sqlite3.connect(str(db))
    with open(out, "wb") as handle:
        for table in ("sessions", "messages"):
            cursor = conn.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cursor.description]
            for row in cursor:
                handle.write(orjson.dumps(dict(zip(names, row, strict=True))) + b"\n")
    conn.close()
    return time.perf_counter() - began


def write_big_session(path: Path, megabytes: int) -> int:
    """One gateway transcript with ~`megabytes` of text in 1 MB tool outputs; returns its text length."""
    chunk = ("lorem ipsum dolor sit amet " * 40_000)[:1_000_000]
    text = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write(orjson.dumps({"role": "session_meta", "model": "m", "platform": "telegram",
                                "timestamp": START.isoformat()}).decode() + "\n")
        for n in range(megabytes):
            call = [{"id": f"call_{n}", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]
            for record in ({"role": "user", "content": f"step {n}"}, {"role": "assistant", "content": "",
                           "tool_calls": call}, {"role": "tool", "content": chunk, "tool_call_id": f"call_{n}"},
                           {"role": "assistant", "content": f"done {n}"}):
                record["timestamp"] = START.isoformat()
                out.write(orjson.dumps(record).decode() + "\n")
                text += len(str(record.get("content") or ""))
    return text


def big_session_memory(root: Path, megabytes: int) -> None:
    folder = root / "big"
    folder.mkdir()
    text = write_big_session(folder / "20260301_090000_0badcafe.jsonl", megabytes)
    db = root / "big.db"
    command = ["--db", str(db), "import-jsonl", str(folder), "--no-progress", "--json"]
    _, first = run_cli(command)
    _, again = run_cli(command)
    print(f"memory:  one session of {text / 2**20:.0f} MiB text: peak RSS first import {first / 1024:.0f} MiB, "
          f"re-import {again / 1024:.0f} MiB (bar ~{2 * text / 2**20:.0f} MiB, twice the text)")


def _settle(root: Path, keep: Path | None = None) -> None:
    """Drop the previous runs' databases and flush dirty pages, so no run pays for another's write-back."""
    for path in root.glob("*.db*"):
        if keep is None or not path.name.startswith(keep.name):
            path.unlink()
    os.sync()


def _median(values: list[float]) -> float:
    return statistics.median(values)


def evict(folder: Path) -> None:
    """Drop a folder's files from the page cache (an old history is rarely cached); POSIX only."""
    if not hasattr(os, "posix_fadvise"):
        return
    os.sync()
    for path in folder.iterdir():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def short_sessions(root: Path, repeat: int, sessions: int = 10_000, per_session: int = 10,
                   ceiling: bool = False) -> None:
    """Many small files: the import against the bulk limit of the same rows, with the files cached
    (just written) and, once per run, evicted from the page cache first (cold). With `ceiling`, also
    the import with a reader that costs nothing (bench_ceiling.py)."""
    corpus = make_corpus(root / "short", sessions, per_session, seed=5)
    command = ["import-jsonl", str(root / "short"), "--no-progress", "--json"]
    bulk, naive, imports, cold, free = [], [], [], [], []
    reader = None
    if ceiling:
        from bench_ceiling import FreeReader, start_seconds

        reader = FreeReader(root / "short", root / "ceiling")
    for run in range(repeat):
        if reader is not None:
            _settle(root)
            free.append(start_seconds() + reader.import_seconds(root / f"sfree{run}.db"))
        _settle(root)
        bulk.append(bulk_limit(root / f"sbulk{run}.db", corpus))
        _settle(root)
        naive.append(naive_import(root / f"snaive{run}.db", root / "short"))
        db = root / f"simport{run}.db"
        _settle(root, keep=db)
        imports.append(run_cli(["--db", str(db), *command])[0])
        _settle(root)
        evict(root / "short")
        cold.append(run_cli(["--db", str(root / f"scold{run}.db"), *command])[0])
    print(f"short:   {sessions:,} sessions x {per_session} messages: bulk limit {_median(bulk):.2f} s, "
          f"import-jsonl {_median(imports):.2f} s -> ratio {_median(bulk) / _median(imports):.2f} (goal >= 0.9); "
          f"files evicted from the page cache first: {_median(cold):.2f} s; a one-process importer with no "
          f"checks (read, orjson, the same insert): {_median(naive):.2f} s -> ratio "
          f"{_median(naive) / _median(imports):.2f}")
    if free:
        print(f"short:   the same import with a reader that costs nothing (process start and imports "
              f"included): {_median(free):.2f} s -> ratio {_median(bulk) / _median(free):.2f}")
    _settle(root)


def main() -> None:
    parser = argparse.ArgumentParser(description="hermes-state-tools benchmarks (ratios against baselines)")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--messages-per-session", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side, interleaved; medians compared")
    parser.add_argument("--no-scale", action="store_true", help="skip the 4x corpus memory run")
    parser.add_argument("--big-mb", type=int, default=200, help="MB of text in the one-big-session run (0: skip)")
    parser.add_argument("--messages", type=int, default=0,
                        help="run the at-scale cases on a Zipf-text store of this many messages instead")
    parser.add_argument("--short", action="store_true", help="run only the short-session import")
    parser.add_argument("--ceiling", action="store_true",
                        help="with --short: also the import with a reader that costs nothing (its ceiling)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as scratch:
        root = Path(scratch)
        if args.short:
            short_sessions(root, args.repeat, ceiling=args.ceiling)
            return
        if args.messages:
            from bench_scale import run_scale

            run_scale(args.messages, args.repeat, run_cli, root)
            short_sessions(root, args.repeat)
            return
        corpus = make_corpus(root / "sessions", args.sessions, args.messages_per_session)
        total = sum(len(lines) - 1 for _, lines in corpus)
        size = sum(f.stat().st_size for f in (root / "sessions").iterdir())
        print(f"corpus: {args.sessions:,} sessions, {total:,} messages, {size / 1e6:.0f} MB of JSONL")
        bulk, imports, rss, selects, exports = [], [], 0, [], []
        for run in range(args.repeat):
            _settle(root)
            bulk.append(bulk_limit(root / f"bulk{run}.db", corpus))
            db = root / f"import{run}.db"
            _settle(root, keep=db)
            seconds, peak = run_cli(["--db", str(db), "import-jsonl", str(root / "sessions"), "--no-progress",
                                     "--json"])
            imports.append(seconds)
            rss = max(rss, peak)
            os.sync()
            selects.append(export_baseline(db, root / "select.jsonl"))
            os.sync()
            exports.append(run_cli(["--db", str(db), "export", "-o", str(root / "export.jsonl")])[0])
        del corpus
        runs = ", ".join(f"{b:.2f}/{i:.2f}" for b, i in zip(bulk, imports, strict=True))
        print(f"import:  bulk limit {_median(bulk):.2f} s, import-jsonl {_median(imports):.2f} s "
              f"({total / _median(imports):,.0f} msg/s) -> ratio {_median(bulk) / _median(imports):.2f} "
              f"(target >= 0.8; runs bulk/import: {runs})")
        print(f"export:  bare SELECT+orjson {_median(selects):.2f} s, export {_median(exports):.2f} s "
              f"-> ratio {_median(selects) / _median(exports):.2f} (target >= 0.5)")
        print(f"memory:  peak RSS of the import (largest of its two processes) at 1x {rss / 1024:.0f} MiB")
        if not args.no_scale:
            make_corpus(root / "sessions4x", args.sessions * 4, args.messages_per_session, seed=11)
            _, rss4 = run_cli(["--db", str(root / "import4x.db"), "import-jsonl", str(root / "sessions4x"),
                               "--no-progress", "--json"])
            print(f"memory:  peak RSS at 4x {rss4 / 1024:.0f} MiB (1x {rss / 1024:.0f} MiB)")
        if args.big_mb:
            big_session_memory(root, args.big_mb)


if __name__ == "__main__":
    main()
