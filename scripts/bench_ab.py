"""The short-session import of two versions of this code, interleaved in one run, against the bulk limit.

The machines this project runs on change speed by half within minutes, so a change to the import is
measured against the code before it in the same run: each round times the bulk limit, then the
import with the other code, then with this checkout, each on a new file after dirty pages are
flushed; the medians are compared.

    git worktree add /tmp/before <commit>
    python scripts/bench_ab.py /tmp/before --rounds 10
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench

HERE = Path(__file__).resolve().parent.parent


def _import_seconds(tree: Path, folder: Path, db: Path) -> float:
    """Process start to exit of `import-jsonl` into the new file `db`, run from the code in `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # both sides run from compiled modules
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hermes_state_tools", "--db", str(db), "import-jsonl", str(folder),
                    "--no-progress", "--json"], env=env, cwd=tempfile.gettempdir(), stdout=subprocess.DEVNULL,
                   check=False)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="a checkout of the code to compare with (e.g. a git worktree)")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        corpus = bench.make_corpus(root / "short", 10_000, 10, seed=5)
        times: dict[str, list[float]] = {"bulk limit": [], "other": [], "this": []}
        for round_ in range(args.rounds):
            bench._settle(root)
            times["bulk limit"].append(bench.bulk_limit(root / "bulk.db", corpus))
            for side, tree in (("other", args.other.resolve()), ("this", HERE)):
                bench._settle(root)
                times[side].append(_import_seconds(tree, root / "short", root / f"{side}.db"))
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
        medians = {side: statistics.median(values) for side, values in times.items()}
        bulk = medians["bulk limit"]
        print(f"medians of {args.rounds}: bulk limit {bulk:.2f} s; {args.other} {medians['other']:.2f} s "
              f"(ratio {bulk / medians['other']:.2f}); this checkout {medians['this']:.2f} s "
              f"(ratio {bulk / medians['this']:.2f}): {medians['this'] / medians['other']:.2f} of the other's time")


if __name__ == "__main__":
    main()
