"""Each maintenance command beside live writers, as a running Hermes gateway keeps its store open.

    python scripts/bench_live.py                         # 300,000 messages, two writers
    python scripts/bench_live.py --messages 120000 --writers 4 --words 24
    python scripts/bench_live.py --hermes-git /path/to/hermes-agent --hermes-rev 42fec1915

Builds a Zipf-text store (scripts/zipf_store.py) once, then for each command: a fresh copy, N writer
processes that each open a SessionDB, keep its connection open and append a message every 50 ms,
the command (`python -m hermes_state_tools ... --json`), ten seconds more of appends, and per command:

    worst append     the slowest append_message of any writer while the command ran and in the 10 s after
    failed           appends that raised
    -wal after 10 s  the -wal's size ten seconds after the command returned (writers still appending)
    exit             the command's exit code
    (the row `idle` is the control: no command, the writers alone for 20 s, on the same busy machine)
    kept             every appended message is in the store exactly once (counted after the writers stop)

The writers use this project's SessionDB (the v6 contract), or with --hermes-git DIR Hermes' own
`hermes_state.py` read at run time from that git directory (never copied into this project).
`maintain` runs after 40% of the sessions were deleted; `prune` deletes half the sessions.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

COMMANDS = ("idle", "vacuum", "maintain", "prune", "check", "repair", "rebuild-fts", "backup", "upgrade")
ARGS = {"prune": ["prune", "--older-than", "182", "--yes"]}
IDLE_S = 20.0  # the control: the writers alone for as long, on a machine that other work keeps busy
SETTLE_S = 10.0


def hermes_session_db(git_dir: str, rev: str, folder: Path) -> Any:
    """Hermes' own SessionDB class from `rev:hermes_state.py` of a git directory, loaded from a private copy."""
    source = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{rev}:hermes_state.py"],
                            check=True, capture_output=True).stdout
    module_path = folder / "hermes_state_v6.py"
    module_path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("hermes_state_v6", module_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SessionDB


def writer(args: argparse.Namespace) -> None:
    """A writer process: append every `interval` s until the stop file appears; write what it saw as JSON."""
    if args.hermes_git:
        session_db = hermes_session_db(args.hermes_git, args.hermes_rev, Path(tempfile.mkdtemp()))
    else:
        from hermes_state_tools import SessionDB as session_db
    db = session_db(Path(args.db))
    sid = f"live-writer-{args.writer}"
    db.create_session(sid, "gateway")
    Path(args.out + ".ready").touch()
    times: list[tuple[float, float]] = []  # (start, seconds)
    failed, appended = 0, 0
    stop = Path(args.stop)
    while not stop.exists():
        started = time.time()
        try:
            db.append_message(sid, "user", f"writer {args.writer} message {appended}")
            appended += 1
        except Exception as exc:  # a failed append is what this bench counts
            failed += 1
            print(f"writer {args.writer}: {exc}", file=sys.stderr)
        times.append((started, time.time() - started))
        time.sleep(max(0.0, args.interval - (time.time() - started)))
    db.close()
    Path(args.out).write_text(json.dumps({"times": times, "failed": failed, "appended": appended, "sid": sid}))


def build_store(args: argparse.Namespace, folder: Path) -> Path:
    import zipf_store

    store = Path(args.store) if args.store else folder / f"base-{args.messages}-{args.words}.db"
    if not store.exists():  # built under another name: a killed build leaves no store to reuse
        building = store.with_name(store.name + ".building")
        print(json.dumps(zipf_store.build(str(building), args.messages, mean_words=args.words)), flush=True)
        os.replace(building, store)
    return store


def prepare(command: str, store: Path, db: Path) -> None:
    """A fresh copy of the store; for maintain, 40% of its sessions deleted first (free pages to vacuum)."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(store, db)
    if command == "maintain":
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("BEGIN")
        conn.execute("CREATE TEMP TABLE doomed AS SELECT id FROM sessions WHERE abs(random()) % 10 < 4")
        conn.execute("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN (SELECT id FROM doomed)")
        conn.execute("DELETE FROM messages WHERE session_id IN (SELECT id FROM doomed)")
        conn.execute("DELETE FROM sessions WHERE id IN (SELECT id FROM doomed)")
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()


def run_one(command: str, args: argparse.Namespace, store: Path, folder: Path) -> dict[str, Any]:
    db = folder / "live.db"
    prepare(command, store, db)
    stop = folder / "stop"
    stop.unlink(missing_ok=True)
    outs = [folder / f"writer{i}.json" for i in range(args.writers)]
    for out in outs:
        out.unlink(missing_ok=True)
        Path(f"{out}.ready").unlink(missing_ok=True)
    extra = ["--hermes-git", args.hermes_git, "--hermes-rev", args.hermes_rev] if args.hermes_git else []
    children = [subprocess.Popen([sys.executable, __file__, "--writer", str(i), "--db", str(db), "--stop", str(stop),
                                  "--out", str(out), "--interval", str(args.interval), *extra])
                for i, out in enumerate(outs)]
    while not all(Path(f"{out}.ready").exists() for out in outs):
        time.sleep(0.05)
    time.sleep(2.0)  # the writers' steady state before the command
    argv = ARGS.get(command, [command])
    if command == "backup":
        argv = ["backup", str(folder / f"backup-{time.time_ns()}.db")]
    began = time.time()
    command_line = [sys.executable, "-m", "hermes_state_tools", "--db", str(db), *argv, "--json", "--no-progress"]
    if command == "idle":
        command_line = [sys.executable, "-c", f"import time; time.sleep({IDLE_S})"]
    done = subprocess.run(command_line, capture_output=True, text=True)
    ended = time.time()
    time.sleep(args.settle)
    wal = Path(f"{db}-wal")
    wal_after = wal.stat().st_size if wal.exists() else 0
    stop.touch()
    for child in children:
        child.wait()
    seen = [json.loads(out.read_text()) for out in outs]
    during = [s for w in seen for (t, s) in w["times"] if t + s >= began]
    worst_at = max(((s, t - began) for w in seen for (t, s) in w["times"] if t + s >= began), default=(0.0, 0.0))[1]
    before = [s for w in seen for (t, s) in w["times"] if t + s < began]
    conn = sqlite3.connect(db)
    kept = all(conn.execute("SELECT COUNT(*), COUNT(DISTINCT content) FROM messages WHERE session_id = ?",
                            (w["sid"],)).fetchone() == (w["appended"], w["appended"]) for w in seen)
    conn.close()
    return {"command": command, "exit": done.returncode, "seconds": round(ended - began, 2),
            "worst_append_s": round(max(during, default=0.0), 3), "worst_before_s": round(max(before, default=0.0), 3),
            "worst_at_s": round(worst_at, 2),
            "failed": sum(w["failed"] for w in seen), "appends": sum(w["appended"] for w in seen),
            "wal_mib_after_10s": round(wal_after / 2**20, 1), "kept": kept,
            "said": (done.stdout.strip() or done.stderr.strip())[-300:]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=300_000)
    parser.add_argument("--words", type=int, default=50, help="mean words a message (50: ~220 MiB at 300k)")
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--interval", type=float, default=0.05)
    parser.add_argument("--settle", type=float, default=SETTLE_S)
    parser.add_argument("--store", help="a built store to copy (default: built in --folder)")
    parser.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "hermes-bench-live"))
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--hermes-git", help="a Hermes Agent git directory: its writers use Hermes' own SessionDB")
    parser.add_argument("--hermes-rev", default="42fec1915", help="the Hermes commit (default: the v6 one)")
    parser.add_argument("--writer", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--stop", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer is not None:
        writer(args)
        return
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    store = build_store(args, folder)
    print(f"{'command':<12} {'worst append':>12} {'failed':>6} {'-wal 10 s after':>15} {'exit':>4} "
          f"{'seconds':>7}  kept", flush=True)
    for command in args.commands.split(","):
        row = run_one(command, args, store, folder)
        print(f"{command:<12} {row['worst_append_s']:>10.3f} s {row['failed']:>6} "
              f"{row['wal_mib_after_10s']:>11.1f} MiB "
              f"{row['exit']:>4} {row['seconds']:>7}  {'yes' if row['kept'] else 'NO'}", flush=True)
        print("  " + json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
