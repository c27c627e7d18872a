"""Run one legacy-format case (built by tests/legacy_cases.py) against this checkout's CLI (run in the
test's own process: tests/helpers.py:hermes_state).

Each case: a fresh temp folder, the case's state.db / other.db copied in (never used in place), then
its steps in order (an import step is `import-jsonl <case>/home --tz UTC --json --no-progress`; the
usual pair is a first run and a re-run that must add nothing). Checks per step: exit code, JSON
report keys, problems, SQL queries on the resulting db, export text, human stdout, files unchanged.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

# `hermes-state ARGS` -> its exit code, stdout and stderr
Cli = Callable[..., subprocess.CompletedProcess[str]]


def sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def lists_in(value: Any):
    if isinstance(value, list):
        yield value
        for v in value:
            yield from lists_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from lists_in(v)


def matches(problem: dict, want: dict) -> bool:
    for key, expected in want.items():
        if key == "file_endswith" and not str(problem.get("file") or "").endswith(expected):
            return False
        if key == "line" and problem.get("line") != expected:
            return False
        if key == "kind" and problem.get("kind") != expected:
            return False
        if key == "detail_contains" and expected not in str(problem.get("detail") or ""):
            return False
        if key == "session_ids_include" and not set(expected) <= set(problem.get("session_ids") or []):
            return False
    return True


def check_report(report: dict, want: dict, errors: list[str]) -> None:
    for key, value in want.get("eq", {}).items():
        if report.get(key) != value:
            errors.append(f"report[{key!r}] = {report.get(key)!r}, want {value!r}")
    for key, value in want.get("min", {}).items():
        if not isinstance(report.get(key), (int, float)) or report[key] < value:
            errors.append(f"report[{key!r}] = {report.get(key)!r}, want >= {value!r}")
    problems = [p for p in report.get("problems") or [] if isinstance(p, dict)]
    for matcher in want.get("problem", []):
        if not any(matches(p, matcher) for p in problems):
            errors.append(f"no problem matching {matcher}")
    for matcher in want.get("no_problem", []):
        bad = [p for p in problems if matches(p, matcher)]
        if bad:
            errors.append(f"unexpected problem matching {matcher}: {bad[0]}")
    text = json.dumps(report, ensure_ascii=False)
    for needle in want.get("detail_contains", []):
        if needle not in text:
            errors.append(f"report never mentions {needle!r}")
    for needle in want.get("list_containing", []):
        if not any(needle in lst for lst in lists_in(report)):
            errors.append(f"no list in the report names {needle!r}")
    if want.get("failures_separable"):
        keyed = any(k in report for k in ("failures", "notices", "failure_counts", "notice_counts"))
        flagged = bool(problems) and all(any(k in p for k in ("failure", "severity", "level")) for p in problems)
        if not (keyed or flagged):
            errors.append("report does not tell notices from failures (no failures/notices keys, no per-problem flag)")


def check_sql(db: Path, queries: list, errors: list[str]) -> None:
    if not db.exists():
        errors.append("database file does not exist")
        return
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        for query, expected in queries:
            try:
                rows = [list(r) for r in conn.execute(query).fetchall()]
            except sqlite3.Error as exc:
                errors.append(f"SQL error {exc} in {query}")
                continue
            got: Any = rows[0][0] if len(rows) == 1 and len(rows[0]) == 1 and not isinstance(expected, list) else rows
            if not isinstance(expected, list) and not rows:
                got = None
            if got != expected:
                errors.append(f"{query}\n      got  {str(got)[:300]}\n      want {str(expected)[:300]}")
    finally:
        conn.close()


ROUND_TRIP_SQL = ("SELECT session_id, role, content, tool_calls, tool_call_id, tool_name, finish_reason, reasoning"
                  " FROM messages ORDER BY session_id, timestamp, id")


def check_round_trip(db: Path, work: Path, cli: Cli, errors: list[str]) -> None:
    """`export`, then `import-jsonl` of it into an empty database: every message comes back, in order."""
    dump, copy = work / "round-trip.jsonl", work / "round-trip.db"
    copy.unlink(missing_ok=True)
    for argv in (["--db", str(db), "export", "-o", str(dump)], ["--db", str(copy), "import-jsonl", str(dump)]):
        proc = cli(*argv, "--no-progress")
        if proc.returncode != 0:
            errors.append(f"round trip: {argv[2]} exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            return
    with sqlite3.connect(db) as a, sqlite3.connect(copy) as b:
        before, after = a.execute(ROUND_TRIP_SQL).fetchall(), b.execute(ROUND_TRIP_SQL).fetchall()
    if before != after:
        errors.append(f"round trip: {len(before)} messages exported, {len(after)} came back"
                      + ("" if len(before) != len(after) else " (not the same rows)"))


def run_case(case: Path, cli: Cli, verbose: bool) -> dict:
    expected = json.loads((case / "expected.json").read_text())
    result = {"case": case.name, "ok": True, "steps": []}
    with tempfile.TemporaryDirectory(prefix=f"h9-{case.name}-") as tmp:
        work = Path(tmp)
        db, other = work / "state.db", work / "other.db"
        if (case / "state.db").exists():
            shutil.copy2(case / "state.db", db)
        if (case / "other.db").exists():
            shutil.copy2(case / "other.db", other)
        other_sha = sha(other)
        source = case / expected.get("import_path", "home")
        for number, step in enumerate(expected["steps"], 1):
            errors: list[str] = []
            as_json = step.get("json", True)
            cmd = step["cmd"]
            argv = ["--db", str(db)]
            if cmd == "import":
                argv += ["import-jsonl", str(source), "--tz", "UTC"]
            elif cmd == "merge":
                argv += ["merge", str(other)]
            else:
                argv += [cmd]
            argv += [*step.get("args", []), "--no-progress"] + (["--json"] if as_json else [])
            before = sha(db)
            proc = cli(*argv)
            allowed = step.get("expect_exit", [0])
            if proc.returncode not in allowed:
                errors.append(f"exit {proc.returncode}, want {allowed}; stderr: {proc.stderr.strip()[-300:]}")
            report: dict = {}
            if as_json:
                try:
                    report = json.loads(proc.stdout)
                except ValueError:
                    errors.append(f"stdout is not one JSON document: {proc.stdout[:200]!r}")
                if isinstance(report, dict):
                    check_report(report, step.get("report", {}), errors)
            else:
                for needle in step.get("stdout_contains", []):
                    if needle not in proc.stdout:
                        errors.append(f"human output lacks {needle!r}")
                limit = step.get("stdout_max_lines")
                if limit and len(proc.stdout.splitlines()) > limit:
                    errors.append(f"human output has {len(proc.stdout.splitlines())} lines, want <= {limit}")
            if step.get("db_unchanged") and sha(db) != before:
                errors.append("the database file changed")
            if step.get("other_unchanged") and sha(other) != other_sha:
                errors.append("OTHER.db changed")
            if step.get("sql"):
                check_sql(db, step["sql"], errors)
            if step.get("round_trip"):
                check_round_trip(db, work, cli, errors)
            if step.get("export_contains"):
                exp = cli("--db", str(db), "export", "--no-progress")
                for needle in step["export_contains"]:
                    if needle not in exp.stdout:
                        errors.append(f"export lacks {needle!r}")
            if verbose:
                print(f"    $ {' '.join(argv)}\n    exit {proc.returncode}; stdout {proc.stdout[:400]!r}")
            name = step.get("name", f"step {number}")
            result["steps"].append({"step": name, "ok": not errors, "errors": errors})
            result["ok"] &= not errors
    return result
