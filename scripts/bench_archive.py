"""The fleet archive's figures, as ratios measured in one run on one PostgreSQL server:

    python scripts/bench_archive.py --messages 1000000 --small 100000 --hosts 10 --rounds 2

1. push of a Zipf store of --messages messages (scripts/zipf_store.py) vs a bare COPY of the same
   rows, pre-serialised, into the same tables with the same indexes (ratio = copy time / push time);
2. the push's peak RSS at --small messages and at --messages (ratio, flat is 1.0);
3. search p95 over --small messages pushed and grown server-side to --hosts hosts (--small x --hosts
   messages): a selective word, a common word, a prefix and a phrase.

Each database is created and dropped here (`hst_bench_*` on --server).
"""

from __future__ import annotations

import argparse
import io
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hermes_state_tools.archive.push import MESSAGE_COPY, SESSION_COPY
from hermes_state_tools.archive.schema import migrate
from hermes_state_tools.archive.search import SearchFilters, run_search
from scripts.zipf_store import WORDS, ZIPF_TOP

_PUSH = ("import sys; from pathlib import Path; from hermes_state_tools.archive.push import push_file; "
         "push_file(Path(sys.argv[1]), sys.argv[2], 'h0')")


@contextmanager
def database(server: str) -> Iterator[str]:
    name = f"hst_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{server}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def store(folder: Path, messages: int) -> Path:
    path = folder / f"zipf_{messages}.db"
    if not path.exists():
        subprocess.run([sys.executable, str(Path(__file__).parent / "zipf_store.py"), str(path),
                        "--messages", str(messages)], check=True, stdout=subprocess.DEVNULL)
    return path


def timed_push(db: Path, url: str) -> tuple[float, int]:
    """Seconds and peak RSS (KiB) of one push in a child process, into an archive whose tables exist
    (as the bare COPY's do)."""
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn, url)
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", _PUSH, str(db), url])
    _pid, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise SystemExit(f"push failed ({status})")
    return time.perf_counter() - started, usage.ru_maxrss


def bare_copy(server: str, source_url: str) -> float:
    """Seconds to COPY the pushed rows, already serialised, into a new archive with the same indexes."""
    data = {}
    with psycopg.connect(source_url) as src:
        for table, columns in (("sessions", SESSION_COPY), ("messages", MESSAGE_COPY)):
            buffer = io.BytesIO()
            names = ", ".join(f'"{c}"' for c in columns)
            with src.cursor().copy(f"COPY (SELECT {names} FROM hermes.{table}) TO STDOUT") as copy:
                for chunk in copy:
                    buffer.write(chunk)
            data[table] = (names, buffer.getvalue())
    with database(server) as url, psycopg.connect(url, autocommit=True) as dst:
        migrate(dst, url)
        started = time.perf_counter()
        with dst.transaction():
            for table, (names, payload) in data.items():
                with dst.cursor().copy(f"COPY hermes.{table} ({names}) FROM STDIN") as copy:
                    for at in range(0, len(payload), 1 << 20):
                        copy.write(payload[at:at + (1 << 20)])
        return time.perf_counter() - started


def grow_hosts(url: str, hosts: int) -> None:
    columns = [c for c in MESSAGE_COPY if c != "host"]
    names = ", ".join(f'"{c}"' for c in columns)
    s_columns = ", ".join(f'"{c}"' for c in SESSION_COPY if c != "host")
    with psycopg.connect(url, autocommit=True) as conn:
        for k in range(1, hosts):
            conn.execute(f"INSERT INTO hermes.messages (host, {names}) SELECT 'h{k}', {names} "
                         "FROM hermes.messages WHERE host = 'h0'")
            conn.execute(f"INSERT INTO hermes.sessions (host, {s_columns}) SELECT 'h{k}', {s_columns} "
                         "FROM hermes.sessions WHERE host = 'h0'")
        conn.execute("VACUUM ANALYZE hermes.messages")
        conn.execute("ANALYZE hermes.sessions")


def p95(url: str, queries: list[str]) -> float:
    """p95 of the queries' times, each run three times after a first run that warms the cache."""
    times = []
    with psycopg.connect(url, autocommit=True) as conn:
        for query in queries:
            run_search(conn, query, SearchFilters(), 20)
        for query in queries * 3:
            started = time.perf_counter()
            run_search(conn, query, SearchFilters(), 20)
            times.append((time.perf_counter() - started) * 1000)
    return statistics.quantiles(times, n=20)[-1]


def push_vs_copy(server: str, big: Path, rounds: int) -> tuple[float, float, int]:
    """The best of `rounds` pushes and of as many bare COPYs, alternated (a shared machine's load moves
    both alike); and the first push's peak RSS (KiB): a child's peak counts the memory of this process
    it was forked from, which the COPY's buffers grow."""
    pushes, copies, rss = [], [], 0
    for _ in range(rounds):
        with database(server) as url:
            seconds, peak = timed_push(big, url)
            pushes.append(seconds)
            rss = rss or peak
            copies.append(bare_copy(server, url))
    return min(pushes), min(copies), rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2, help="push and COPY this many times each, alternated")
    parser.add_argument("--no-search", action="store_true", help="push, COPY and RSS only")
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "hst_bench_archive")
    args = parser.parse_args()
    args.folder.mkdir(exist_ok=True)
    big, small = store(args.folder, args.messages), store(args.folder, args.small)
    with database(args.server) as small_url:  # first: the COPY's buffers would swell a forked child's peak
        _seconds, rss_small = timed_push(small, small_url)
        push_s, copy_s, rss_big = push_vs_copy(args.server, big, args.rounds)
        print(f"push {args.messages:,} messages: {push_s:.1f} s; bare COPY of the same rows into the same tables "
              f"and indexes: {copy_s:.1f} s; ratio {copy_s / push_s:.2f} (bar >= 0.8; best of {args.rounds} each)")
        print(f"peak RSS: {rss_small / 1024:.0f} MiB at {args.small:,}, {rss_big / 1024:.0f} MiB at "
              f"{args.messages:,}: ratio {rss_big / rss_small:.2f} (bar <= 1.2)")
        url = small_url
        if args.no_search:
            return
        grow_hosts(url, args.hosts)  # the small store's messages under --hosts host names
        search_figures(url, args.small * args.hosts, args.hosts)


def search_figures(url: str, total: int, hosts: int) -> None:
    cases = {"selective word (< 20 ms)": WORDS[3000:3020],  # each in about 0.1% of the messages
             "common word (< 100 ms)": list(ZIPF_TOP),
             "prefix (< 100 ms)": [w[:3] + "*" for w in WORDS[100:110]],
             "phrase (< 100 ms)": [f'"{a} {b}"' for a, b in itertools.pairwise(ZIPF_TOP)]}
    for name, queries in cases.items():
        print(f"search p95 over {total:,} messages from {hosts} hosts, {name}: {p95(url, queries):.1f} ms")


if __name__ == "__main__":
    main()
