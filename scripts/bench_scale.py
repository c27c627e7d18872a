"""The at-scale cases of scripts/bench.py (`--messages N`): a Zipf-text store of N messages, and each
case as a ratio to its floor measured in the same run, interleaved, medians compared.

    python scripts/bench.py --messages 1000000

check (full)    `hermes-state check` (process) / PRAGMA integrity_check + FTS5 'integrity-check' rank=1
check --quick   `hermes-state check --quick` (process) / PRAGMA quick_check
search          common (top-10 words), prefix (`w*` of each), phrase (`"w0 w1"`, `"w1 w2"`, ...), selective
                (rank 20k-49k) and no match (a selective word beside one no message holds: the literal
                look): p50/p95 wall clock and p95 CPU time of search_messages
append          SessionDB.append_message / raw BEGIN IMMEDIATE + INSERT + counter UPDATE + COMMIT (and
                without the contract's checkpoint every 50 writes; alone: bench_scale.py --append N)
prune           `hermes-state prune` of half the sessions (process) / bare DELETEs with the FTS triggers
memory          peak RSS of check, export, prune, vacuum at N against N/10 messages
"""

from __future__ import annotations

import itertools
import os
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zipf_store

IC1 = "INSERT INTO messages_fts(messages_fts, rank) VALUES('integrity-check', 1)"
INSERT = ("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, "
          "token_count, finish_reason, reasoning, reasoning_details, codex_reasoning_items) "
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
BUMP = ("UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, "
        "tool_call_count = COALESCE(tool_call_count, 0) + ? WHERE id = ?")
TEXT = "please run the tests again and show me the failing ones " * 2


def fresh_copy(store: Path, dest: Path) -> Path:
    """A settled copy: the write-back of the copy must not land in the timed run."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(dest) + suffix).unlink(missing_ok=True)
    shutil.copyfile(store, dest)
    os.sync()
    time.sleep(0.5)
    return dest


def timed(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def interleaved(pairs: dict[str, Callable[[], float]], repeat: int) -> dict[str, float]:
    """Each side `repeat` times, alternating which goes first; the medians."""
    times: dict[str, list[float]] = {name: [] for name in pairs}
    for run in range(repeat):
        names = list(pairs) if run % 2 == 0 else list(reversed(pairs))
        for name in names:
            times[name].append(pairs[name]())
    return {name: statistics.median(values) for name, values in times.items()}


def _readonly(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)


def check_floor(store: Path, copy: Path) -> float:
    """integrity_check on the store plus FTS5's integrity-check on a copy made beforehand (untimed)."""
    conn = _readonly(store)
    began = time.perf_counter()
    conn.execute("PRAGMA integrity_check").fetchall()
    first = time.perf_counter() - began
    conn.close()
    conn = sqlite3.connect(str(copy), isolation_level=None)
    second = timed(lambda: conn.execute(IC1))
    conn.close()
    return first + second


def quick_floor(store: Path) -> float:
    conn = _readonly(store)
    elapsed = timed(lambda: conn.execute("PRAGMA quick_check").fetchall())
    conn.close()
    return elapsed


def search_latencies(store: Path) -> dict[str, tuple[float, float, float]]:
    """p50 and p95 wall clock and p95 CPU time (of this thread: what other work on the machine
    moves least) of search_messages per group of queries, in ms."""
    from hermes_state_tools.search.query import search_messages

    words = zipf_store.WORDS
    selective = [words[i] for i in (20000, 25000, 30000, 35000, 40000, 49000)]
    # A selective word beside one that no message holds: no whole-word match, so search_messages goes
    # on to its literal look (bounded to the newest messages), the cost of any query that finds nothing.
    # A prefix of a common word matches hundreds of words (FTS5 merges all their lists); a phrase of two
    # common words with few matches is looked for in both words' position lists down to the oldest row.
    groups = {"common": words[:10], "prefix": [f"{word}*" for word in words[:10]],
              "phrase": [f'"{a} {b}"' for a, b in itertools.pairwise(words[:11])],
              "selective": selective, "no match": [f"{word} zq{n}xw" for n, word in enumerate(selective)]}
    conn = _readonly(store)
    conn.row_factory = sqlite3.Row
    out = {}
    for name, queries in groups.items():
        walls, cpus = [], []
        for _ in range(5):
            for query in queries:
                cpu = time.thread_time()
                walls.append(timed(lambda q=query: search_messages(conn, q, limit=20)) * 1000)
                cpus.append((time.thread_time() - cpu) * 1000)
        walls.sort()
        cpus.sort()
        p95 = max(0, int(len(walls) * 0.95) - 1)
        out[name] = (statistics.median(walls), walls[p95], cpus[p95])
    conn.close()
    return out


def append_ratio(store: Path, work: Path, repeat: int, block: int = 300) -> tuple[float, float]:
    """floor / append_message, and floor / append_message without the contract's PASSIVE checkpoint every
    50 writes (what that checkpoint costs; session-store.md keeps it), each side on a copy of its own."""
    from hermes_state_tools import SessionDB
    from hermes_state_tools.core import connection

    db = SessionDB(fresh_copy(store, work / "append_a.db"))
    bare = SessionDB(fresh_copy(store, work / "append_c.db"))
    raw = sqlite3.connect(str(fresh_copy(store, work / "append_b.db")), isolation_level=None)
    raw.execute("PRAGMA journal_mode=WAL")
    raw.execute("PRAGMA foreign_keys=ON")
    sid = raw.execute("SELECT id FROM sessions ORDER BY started_at DESC LIMIT 1").fetchone()[0]

    def ours() -> float:
        return timed(lambda: [db.append_message(sid, "user", TEXT) for _ in range(block)])

    def no_checkpoint() -> float:
        every = connection._CHECKPOINT_EVERY_N_WRITES
        connection._CHECKPOINT_EVERY_N_WRITES = 10**9
        try:
            return timed(lambda: [bare.append_message(sid, "user", TEXT) for _ in range(block)])
        finally:
            connection._CHECKPOINT_EVERY_N_WRITES = every

    def floor() -> float:
        def one() -> None:
            raw.execute("BEGIN IMMEDIATE")
            raw.execute(INSERT, (sid, "user", TEXT, None, None, None, time.time(), None, None, None, None, None))
            raw.execute(BUMP, (0, sid))
            raw.execute("COMMIT")
        return timed(lambda: [one() for _ in range(block)])

    medians = interleaved({"ours": ours, "no checkpoint": no_checkpoint, "floor": floor}, repeat * 4)
    db.close()
    bare.close()
    raw.close()
    return medians["floor"] / medians["ours"], medians["floor"] / medians["no checkpoint"]


def print_append(store: Path, root: Path, repeat: int) -> None:
    ratio, without = append_ratio(store, root, repeat)
    print(f"append:  floor/append_message {ratio:.2f} (goal >= 0.95); without the checkpoint every 50 "
          f"writes {without:.2f}")


def print_search(store: Path) -> None:
    """The search rows, each with its goal and whether the p95 meets it."""
    for name, (p50, p95, cpu95) in search_latencies(store).items():
        goal = 5.0 if name == "selective" else 100.0
        print(f"search:  {name} p50 {p50:.1f} ms, p95 {p95:.1f} ms, p95 CPU {cpu95:.1f} ms "
              f"(goal p95 < {goal:.0f} ms: {'met' if p95 < goal else 'NOT MET'})")


def prune_days(store: Path) -> float:
    """--older-than that selects about half the sessions."""
    conn = _readonly(store)
    low, high = conn.execute("SELECT min(started_at), max(started_at) FROM sessions").fetchone()
    conn.close()
    return (time.time() - (low + high) / 2) / 86_400


def prune_floor(path: Path, days: float) -> float:
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    where = "started_at < ? AND ended_at IS NOT NULL"
    cutoff = time.time() - days * 86_400

    def run() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN "
                     f"(SELECT id FROM sessions WHERE {where})", (cutoff,))
        conn.execute(f"DELETE FROM messages WHERE session_id IN (SELECT id FROM sessions WHERE {where})", (cutoff,))
        conn.execute(f"DELETE FROM sessions WHERE {where}", (cutoff,))
        conn.execute("COMMIT")

    elapsed = timed(run)
    conn.close()
    return elapsed


def run_scale(messages: int, repeat: int, run_cli: Callable[[list[str]], tuple[float, int]], root: Path) -> None:
    """Build the stores, then every case; one line each."""
    store, small = root / "store.db", root / "store_small.db"
    built = zipf_store.build(str(store), messages)
    zipf_store.build(str(small), max(1000, messages // 10), seed=13)
    print(f"store: {built['messages']:,} messages, {built['sessions']:,} sessions, "
          f"{built['bytes'] / 2**20:.0f} MiB (built in {built['seconds_total']} s)")
    fts_copy = fresh_copy(store, root / "fts_copy.db")
    med = interleaved({"ours": lambda: run_cli(["--db", str(store), "check", "--no-progress", "--json"])[0],
                       "floor": lambda: check_floor(store, fts_copy)}, repeat)
    print(f"check:   floor {med['floor']:.2f} s, check {med['ours']:.2f} s -> {med['ours'] / med['floor']:.2f}x "
          "(goal <= 1.5x)")
    med = interleaved({"ours": lambda: run_cli(["--db", str(store), "check", "--quick", "--no-progress",
                                                "--json"])[0],
                       "floor": lambda: quick_floor(store)}, repeat * 2)
    print(f"quick:   quick_check {med['floor']:.2f} s, check --quick {med['ours']:.2f} s -> "
          f"{med['ours'] / med['floor']:.2f}x (goal <= 2x)")
    print_search(store)
    print_append(store, root, repeat)
    days = prune_days(store)
    copies = iter(range(10 * repeat))
    med = interleaved({
        "ours": lambda: run_cli(["--db", str(fresh_copy(store, root / f"prune{next(copies)}.db")), "prune",
                                 "--older-than", f"{days:.4f}", "--yes", "--json"])[0],
        "floor": lambda: prune_floor(fresh_copy(store, root / f"prune{next(copies)}.db"), days)}, repeat)
    print(f"prune:   bare DELETEs {med['floor']:.2f} s, prune {med['ours']:.2f} s -> "
          f"{med['floor'] / med['ours']:.2f} (goal >= 0.8)")
    for path in root.glob("prune*.db*"):
        path.unlink()
    memory(store, small, run_cli, root)


def memory(store: Path, small: Path, run_cli: Callable[[list[str]], tuple[float, int]], root: Path) -> None:
    """Peak RSS of check, export, prune, vacuum on the store against the store a tenth its size."""
    peaks = {}
    for label, source in (("big", store), ("small", small)):
        days = prune_days(source)
        work = fresh_copy(source, root / f"mem_{label}.db")
        peaks[label] = {
            "check": run_cli(["--db", str(work), "check", "--no-progress"])[1],
            "export": run_cli(["--db", str(work), "export", "-o", str(root / "mem.jsonl")])[1],
            "prune": run_cli(["--db", str(work), "prune", "--older-than", f"{days:.4f}", "--yes"])[1],
            "vacuum": run_cli(["--db", str(work), "vacuum", "--no-progress"])[1],
        }
    shown = ", ".join(f"{name} {peaks['big'][name] / 1024:.0f}/{peaks['small'][name] / 1024:.0f} MiB "
                      f"({peaks['big'][name] / peaks['small'][name]:.2f}x)" for name in peaks["big"])
    print(f"memory:  peak RSS at N / N/10: {shown} (goal <= ~1.2x)")


if __name__ == "__main__":  # python scripts/bench_scale.py --append N | --search N: one case alone, on N messages
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="the append or the search case of bench.py --messages, alone")
    case = parser.add_mutually_exclusive_group(required=True)
    case.add_argument("--append", type=int, metavar="N", help="the append case, on a store of N messages")
    case.add_argument("--search", type=int, metavar="N", help="the search rows, on a store of N messages")
    parser.add_argument("--store", type=Path, help="with --search: a store zipf_store.py built, not a new one")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as scratch:
        store = args.store if args.search and args.store else Path(scratch) / "store.db"
        if store != args.store:
            zipf_store.build(str(store), args.append or args.search)
        if args.append:
            print_append(store, Path(scratch), args.repeat)
        if args.search:
            print_search(store)
