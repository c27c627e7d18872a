"""Files a later Hermes makes itself, filled through its own API, as fixtures for the read commands.

Hermes of schema 18 and later writes layouts this tool does not know: it reads them through the
columns it knows and never writes them. This script runs Hermes' own `SessionDB` (from an unpacked
`hermes-agent` wheel, in a subprocess, as `check_late_hermes_hazard.py` does) and makes two files:

* `fresh-v<N>`: a file Hermes creates itself, filled the way Hermes fills it: sessions with tool
  calls and tool results, reasoning, CJK text, multimodal list content, a compression chain
  (parent and child), a delegate child (`model_config._delegate_from`, source `subagent`), a
  rewound turn (`rewind_to_message`), messages compacted away (`archive_and_compact`), an
  archived session, observed group context, a pinned and a hidden session and a system prompt
  (where that Hermes has them);
* `v17-opened-by-v<N>`: a file this tool made with `import-jsonl fixtures/legacy-home --schema 17`,
  then opened once by that Hermes (the path most users' files took).

Each goes to OUT as an SQL dump (`hermes_state_tools.store.sqldump`) and a JSON of what Hermes' own
API shows on it: `list_sessions_rich()` and `session_count()` with their default filters (and with
everything included), `message_count()`, `get_messages` and `get_messages_as_conversation` per
session (default and with the inactive rows), and `search_messages` for a few words.

    python scripts/make_late_fixtures.py /path/to/unpacked-hermes-wheel fixtures/hermes-late

No Hermes code is kept here.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hermes_state_tools.store.sqldump import dump_sql, load_sql  # noqa: E402

HOME = ROOT / "fixtures" / "legacy-home"
# Words search_messages is asked for: plain text, a tool name, a word of a tool result, CJK text,
# a rewound turn's word, a compacted-away word, a delegate child's word, reasoning only, observed.
WORDS = ["weather", "web_search", "sunny", "東京", "天気", "Ulaanbaatar", "compaction",
         "subagent", "ponder", "observed", "quarterly", "Kharkhorin", "tea", "hidden"]

# Runs inside Hermes' folder (PYTHONPATH), one process per file, as a fresh Hermes start would.
DRIVER = r'''
import inspect, json, logging, sqlite3, sys, time
from pathlib import Path
logging.disable(logging.CRITICAL)
import hermes_state

mode, path, words = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
db = hermes_state.SessionDB(db_path=path)
common = sys.modules.get("hermes_state_common")
version = getattr(hermes_state, "SCHEMA_VERSION", None) or getattr(common, "SCHEMA_VERSION", None)
done = []

def has(name, kw=None):
    fn = getattr(db, name, None)
    return fn is not None and (kw is None or kw in inspect.signature(fn).parameters)

def call(text, role="tool", name="web_search"):
    return [{"id": f"call_{len(done)}", "type": "function",
             "function": {"name": name, "arguments": json.dumps({"query": text}, ensure_ascii=False)}}]

def fill():
    a = "20261207_090000_aaaa0001"
    db.create_session(a, "cli", model="anthropic/claude-sonnet-4", cwd="/home/user/proj",
                      model_config={"temperature": 0.2},
                      system_prompt="You are Hermes, a helpful agent. Answer briefly.")
    db.append_message(a, "user", content="What is the weather in 東京 today?")
    db.append_message(a, "assistant", content="", tool_calls=call("東京 天気"),
                      reasoning="I should ponder which tool fits; web_search does.",
                      reasoning_content="I should ponder which tool fits; web_search does.")
    db.append_message(a, "tool", content='{"result": "東京: 晴れ, sunny, 22°C"}',
                      tool_name="web_search", tool_call_id="call_0")
    db.append_message(a, "assistant", content="It is sunny in 東京 (晴れ), 22°C. 天気は良いです。",
                      finish_reason="stop")
    db.set_session_title(a, "Weather in Tokyo")
    if has("update_system_prompt"):
        db.update_system_prompt(a, "You are Hermes, a helpful agent. Answer briefly.")
    db.end_session(a, "user_exit")
    done.append(a)

    m = "20261207_091000_bbbb0002"
    db.create_session(m, "cli", model="openai/gpt-5")
    db.append_message(m, "user", content=[
        {"type": "text", "text": "What is in this picture of Ulaanbaatar?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}])
    db.append_message(m, "assistant", content="A city square in Ulaanbaatar under snow.")
    db.end_session(m, "user_exit")
    done.append(m)

    root, child = "20261207_092000_cccc0003", "20261207_093000_cccc0004"
    db.create_session(root, "cli", model="openai/gpt-5")
    db.append_message(root, "user", content="Draft the quarterly report outline.")
    db.append_message(root, "assistant", content="Outline: revenue, costs, outlook.")
    db.end_session(root, "compression")
    db.create_session(child, "cli", model="openai/gpt-5", parent_session_id=root)
    db.append_message(child, "user", content="[Summary of earlier turns] quarterly report outline agreed.")
    db.append_message(child, "assistant", content="Continuing with the quarterly figures.")
    done.extend([root, child])

    d = "20261207_093500_dddd0005"
    db.create_session(d, "subagent", model="openai/gpt-5-mini", parent_session_id=a,
                      model_config={"_delegate_from": a})
    db.append_message(d, "user", content="subagent task: check the forecast source")
    db.append_message(d, "assistant", content="The subagent found the forecast source.")
    db.end_session(d, "completed")
    done.append(d)

    r = "20261207_094000_eeee0006"
    db.create_session(r, "cli", model="openai/gpt-5")
    db.append_message(r, "user", content="Name a mountain.")
    db.append_message(r, "assistant", content="Mount Fuji.")
    back = db.append_message(r, "user", content="Rewound question about Kharkhorin?")
    db.append_message(r, "assistant", content="Kharkhorin was the capital.")
    db.rewind_to_message(r, back)
    db.append_message(r, "user", content="Name a river instead.")
    db.append_message(r, "assistant", content="The Tuul river.")
    done.append(r)

    k = "20261207_095000_ffff0007"
    db.create_session(k, "cli", model="openai/gpt-5")
    db.append_message(k, "user", content="Long talk before compaction about the old plan.")
    db.append_message(k, "assistant", content="Noted the old plan before compaction.")
    db.archive_and_compact(k, [{"role": "user", "content": "Summary: the old plan was noted."}])
    db.append_message(k, "assistant", content="Working from the summary now.")
    done.append(k)

    x = "20261207_096000_aaaa0008"
    db.create_session(x, "cli", model="openai/gpt-5")
    db.append_message(x, "user", content="An archived chat about tea.")
    db.append_message(x, "assistant", content="Tea is brewed.")
    db.end_session(x, "user_exit")
    db.set_session_archived(x, True)
    done.append(x)

    g = "20261207_097000_bbbb0009"
    db.create_session(g, "telegram", model="openai/gpt-5", user_id="42", chat_id="-1001",
                      chat_type="group", session_key="agent:main:telegram:group:-1001")
    db.append_message(g, "user", content="Someone observed the launch in the group.", observed=True)
    db.append_message(g, "user", content="@hermes what did we see?")
    db.append_message(g, "assistant", content="The group observed the launch.")
    done.append(g)

    for sid, what in (("20261207_098000_cccc0010", "pinned"), ("20261207_099000_dddd0011", "hidden")):
        setter = f"set_session_{what}"
        if not has(setter):
            continue
        db.create_session(sid, "cli", model="openai/gpt-5")
        db.append_message(sid, "user", content=f"A {what} chat.")
        db.append_message(sid, "assistant", content=f"This chat is {what}.")
        getattr(db, setter)(sid, True)
        done.append(sid)

def plain(value):
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value

def listing(**kw):
    ok = {k: v for k, v in kw.items() if has("list_sessions_rich", k)}
    return [s["id"] for s in db.list_sessions_rich(limit=1000, **ok)]

def everything_kw(name):
    keys = ("include_archived", "include_children", "include_hidden", "include_subagents",
            "include_pinned", "project_compression_tips")
    kw = {k: True for k in keys if has(name, k)}
    if "project_compression_tips" in kw:
        kw["project_compression_tips"] = False
    return kw

if mode == "fill":
    fill()
ids = [r[0] for r in db._conn.execute("SELECT id FROM sessions ORDER BY started_at, id")]
out = {"hermes_schema_version": version, "made": done}
out["list_sessions_rich"] = listing()
out["list_sessions_rich_all"] = listing(**everything_kw("list_sessions_rich"))
out["session_count"] = db.session_count()
count_all = {k: v for k, v in everything_kw("session_count").items() if k != "project_compression_tips"}
count_all.pop("include_children", None)
out["session_count_all"] = db.session_count(**count_all)
out["message_count"] = db.message_count()
out["messages"] = {s: plain(db.get_messages(s)) for s in ids}
inactive = {"include_inactive": True}
if has("get_messages", "include_compacted"):
    inactive["include_compacted"] = True
out["messages_all"] = {s: [m["id"] for m in db.get_messages(s, **inactive)] for s in ids}
out["conversation"] = {s: plain(db.get_messages_as_conversation(s)) for s in ids}
out["search"] = {w: [[h.get("id"), h.get("session_id")] for h in db.search_messages(w, limit=100)]
                 for w in words}
out["search_inactive"] = {w: [[h.get("id"), h.get("session_id")] for h in
                              db.search_messages(w, limit=100, include_inactive=True)] for w in words}
db.close()
print(json.dumps(out, ensure_ascii=False))
'''


class FixtureError(Exception):
    """A step failed; the message says which."""


def run_hermes(hermes_dir: Path, python: str, mode: str, db: Path, home: Path) -> dict[str, Any]:
    """DRIVER with Hermes' modules first on the path; its JSON answer."""
    env = dict(os.environ, PYTHONPATH=str(hermes_dir), HERMES_HOME=str(home))
    argv = [python, "-c", DRIVER, mode, str(db), json.dumps(WORDS)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=home, check=False)
    if done.returncode != 0:
        raise FixtureError(f"Hermes' {mode} failed: {done.stderr.strip()[-2000:] or 'no output'}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def build_v17(db: Path) -> None:
    """A v17 file made by this tool from the legacy fixture home."""
    cmd = [sys.executable, "-m", "hermes_state_tools", "--db", str(db), "import-jsonl", str(HOME),
           "--schema", "17"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode not in (0, 1) or not db.exists():
        raise FixtureError(f"import-jsonl failed: {done.stderr.strip()}")


def index_state(db: Path) -> dict[str, Any]:
    """Each search index's rows per term (fts5vocab) and FTS5's own integrity-check."""
    conn = sqlite3.connect(db)
    try:
        names = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'")]
        state: dict[str, Any] = {}
        for name in sorted(names):
            conn.execute(f"CREATE VIRTUAL TABLE temp.v_{name} USING fts5vocab(main, {name}, instance)")
            terms = conn.execute(f"SELECT term, doc, col, offset FROM temp.v_{name} ORDER BY 1, 2, 3, 4").fetchall()
            try:
                conn.execute(f"INSERT INTO {name}({name}, rank) VALUES('integrity-check', 1)")
                ok = "ok"
            except sqlite3.DatabaseError as exc:
                ok = str(exc)
            state[name] = (len(terms), hash(tuple(terms)), ok)
        return state
    finally:
        conn.close()


def write(db: Path, shown: dict[str, Any], out: Path, name: str) -> None:
    """The file as SQL (checked to reload with the same search indexes) and what Hermes showed."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        script = dump_sql(conn)
        shown["schema_version"] = conn.execute("SELECT version FROM schema_version").fetchone()[0]
    finally:
        conn.close()
    with tempfile.TemporaryDirectory() as tmp:
        again = Path(tmp) / "again.db"
        load_sql(script, again)
        if index_state(again) != index_state(db):
            raise FixtureError(f"{name}: the dump does not reload into the same search indexes")
    (out / f"{name}.sql").write_text(script, encoding="utf-8")
    text = json.dumps(shown, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    (out / f"{name}.json").write_text(text, encoding="utf-8")


def make(hermes_dir: Path, python: str, out: Path, work: Path) -> list[str]:
    """Both files for one Hermes; their names."""
    home = work / "home"
    home.mkdir()
    fresh = work / "fresh.db"
    shown = run_hermes(hermes_dir, python, "fill", fresh, home)
    version = shown["hermes_schema_version"]
    write(fresh, shown, out, f"fresh-v{version}")
    v17 = work / "v17.db"
    build_v17(v17)
    shown = run_hermes(hermes_dir, python, "open", v17, home)
    write(v17, shown, out, f"v17-opened-by-v{version}")
    return [f"fresh-v{version}", f"v17-opened-by-v{version}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hermes_dir", type=Path, help="folder holding Hermes' hermes_state.py and its modules")
    parser.add_argument("out", type=Path, help="folder for the SQL dumps and what Hermes showed")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs Hermes (with its deps)")
    args = parser.parse_args(argv)
    if not (args.hermes_dir / "hermes_state.py").is_file():
        print(f"error: {args.hermes_dir} holds no hermes_state.py", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            names = make(args.hermes_dir.resolve(), args.python, args.out, Path(tmp))
        except FixtureError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    print("\n".join(f"{args.out / name}.sql" for name in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
