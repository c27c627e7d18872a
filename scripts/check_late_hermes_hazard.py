"""Run a v6 file made by this tool through a later Hermes' own `SessionDB` and report its search index.

Hermes from schema v23 on keeps an existing search index as it finds it ("legacy"), and its
`_migrate_broad_fts_update_triggers` replaces v6's broad `AFTER UPDATE ON messages` trigger with
the update trigger Hermes writes for its own inline index (v11 to v22). v6's `messages_fts` is not
inline: it reads its text from `messages` (external content). This script shows, with Hermes'
own code, what that does to the file:

1. builds a v6 file with this tool (`import-jsonl fixtures/legacy-home`);
2. opens it with Hermes' `SessionDB` (the constructor runs Hermes' migrations, as on every start)
   and records schema_version, the FTS tables and the triggers on `messages`;
   and what Hermes wrote into the search indexes meanwhile (its "repair" of an index with fewer
   triggers than it expects refills v6's index with text v6's index does not hold);
3. on one copy, edits a message's text the way Hermes itself does (`purge_stale_tool_call_markers`,
   Hermes' one writer of `messages.content`, on a marker row appended through `append_message`);
   on another copy, a plain `UPDATE messages SET content = ...` of one message;
4. runs FTS5's integrity-check on each index and Hermes' own `search_messages` for the old and
   the new word;
5. runs Hermes' `optimize_fts_storage` (`hermes sessions optimize-storage`) on the damaged copy
   and checks again.

    python scripts/check_late_hermes_hazard.py /path/to/folder-with-hermes_state.py
    python scripts/check_late_hermes_hazard.py DIR --write-fixture fixtures/hermes-late

The folder holds Hermes' modules (an unpacked `hermes-agent` wheel of schema 23 or later); no
Hermes code is kept here. `--write-fixture` writes the file as Hermes left it after step 2 (an
SQL dump, `hermes_state_tools.store.sqldump`) and what Hermes showed (`*.json`), for the tests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hermes_state_tools.store.sqldump import dump_sql, load_sql  # noqa: E402

HOME = ROOT / "fixtures" / "legacy-home"
OLD_WORD = "Ulaanbaatar"
NEW_WORD = "Kharkhorin"
MARKER = "[memory]"
MARKER_WORD = "memory"
PLAIN_UPDATE = (f"UPDATE messages SET content = replace(content, '{OLD_WORD}', '{NEW_WORD}') "
                f"WHERE content LIKE '%{OLD_WORD}%'")

# Runs inside Hermes' folder (PYTHONPATH), one phase per process, as a fresh Hermes start would.
DRIVER = r'''
import json, logging, sqlite3, sys
from pathlib import Path
logging.disable(logging.CRITICAL)
import re
traced = []
_connect = sqlite3.connect
def connect(*a, **k):
    conn = _connect(*a, **k)
    conn.set_trace_callback(traced.append)
    return conn
sqlite3.connect = connect
import hermes_state

phase, path = sys.argv[1], Path(sys.argv[2])
args = json.loads(sys.argv[3])
db = hermes_state.SessionDB(db_path=path)
sqlite3.connect = _connect
common = sys.modules.get("hermes_state_common")
version = getattr(hermes_state, "SCHEMA_VERSION", None) or getattr(common, "SCHEMA_VERSION", None)
out = {"hermes_schema_version": version}
if phase == "open":  # what Hermes wrote into the search indexes while it opened the file
    writes = (" ".join(sql.split()) for sql in traced)
    out["fts_writes"] = [sql for sql in writes if re.match(r"(DELETE FROM|INSERT INTO) messages_fts", sql)]
if phase == "hermes-edit":
    sid = db._conn.execute("SELECT session_id FROM messages ORDER BY id LIMIT 1").fetchone()[0]
    call = [{"id": "call_1", "type": "function", "function": {"name": "memory", "arguments": "{}"}}]
    out["marker_id"] = db.append_message(sid, "assistant", content=args["marker"], tool_calls=call)
    out["purge"] = db.purge_stale_tool_call_markers(backup=False)
elif phase == "optimize":
    result = db.optimize_fts_storage(vacuum=False)
    out["optimize"] = {k: v for k, v in result.items() if isinstance(v, (str, int, float, bool, type(None)))}
if phase != "open":
    out["search"] = {w: [(h.get("id"), h.get("session_id")) for h in db.search_messages(w)] for w in args["words"]}
db.close()
print(json.dumps(out))
'''


class HazardError(Exception):
    """A step of the run failed; the message says which."""


@dataclass(frozen=True)
class Hermes:
    """Where Hermes' modules are and the Python that can import them."""

    folder: Path
    python: str


def build_v6(db: Path) -> None:
    """A v6 file made by this tool from the legacy fixture home."""
    cmd = [sys.executable, "-m", "hermes_state_tools", "--db", str(db), "import-jsonl", str(HOME)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode not in (0, 1) or not db.exists():
        raise HazardError(f"import-jsonl failed: {done.stderr.strip()}")


def run_hermes(hermes: Hermes, phase: str, db: Path, home: Path, words: list[str]) -> dict[str, Any]:
    """One phase of DRIVER with Hermes' modules first on the path; its JSON answer."""
    env = dict(os.environ, PYTHONPATH=str(hermes.folder), HERMES_HOME=str(home))
    argv = [hermes.python, "-c", DRIVER, phase, str(db), json.dumps({"marker": MARKER, "words": words})]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=home, check=False)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise HazardError(f"Hermes' {phase} failed: {tail[0]}")
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def fts_check(conn: sqlite3.Connection, table: str) -> str:
    """FTS5's own integrity-check of one index: 'ok' or SQLite's error."""
    try:
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return "ok"


def index_terms(conn: sqlite3.Connection) -> str:
    """A digest of every (term, rowid, column, offset) messages_fts holds: equal digests, equal indexes."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.hst_terms USING fts5vocab(main, messages_fts, instance)")
    rows = conn.execute("SELECT term, doc, col, offset FROM temp.hst_terms ORDER BY 1, 2, 3, 4").fetchall()
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def replay(db: Path, statements: list[str]) -> None:
    """Hermes' own writes into the search indexes, run again on the reloaded dump in one transaction."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            for sql in statements:
                conn.execute(sql)
    finally:
        conn.close()


def file_state(db: Path) -> dict[str, Any]:
    """schema_version, FTS DDL, the triggers on messages, state_meta and each index's integrity."""
    conn = sqlite3.connect(db)
    try:
        fts = dict(conn.execute("SELECT name, sql FROM sqlite_master "
                                "WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"))
        has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'state_meta'").fetchone() is not None
        return {
            "schema_version": conn.execute("SELECT version FROM schema_version").fetchone()[0],
            "fts_tables": fts,
            "triggers": dict(conn.execute("SELECT name, sql FROM sqlite_master "
                                          "WHERE type = 'trigger' AND tbl_name = 'messages' ORDER BY name")),
            "state_meta": dict(conn.execute("SELECT key, value FROM state_meta ORDER BY key")) if has_meta else {},
            "fts_integrity": {name: fts_check(conn, name) for name in sorted(fts)},
            "index_terms": index_terms(conn),
        }
    finally:
        conn.close()


def raw_matches(db: Path, word: str) -> list[int]:
    """The rowids messages_fts returns for a word, without Hermes' join to messages."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid", (word,))
        return [r[0] for r in rows]
    finally:
        conn.close()


def plain_update(db: Path) -> int:
    """The plain edit of one message's text; the number of rows changed."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            return conn.execute(PLAIN_UPDATE).rowcount
    finally:
        conn.close()


def run(hermes: Hermes, work: Path) -> dict[str, Any]:
    """Steps 1-5 in the docstring, each on its own copy of the file; what each showed."""
    home = work / "home"
    home.mkdir()
    v6 = work / "v6.db"
    build_v6(v6)
    report: dict[str, Any] = {"v6": file_state(v6)}
    opened = work / "opened.db"
    shutil.copy(v6, opened)
    report["open"] = run_hermes(hermes, "open", opened, home, [])
    report["after_open"] = file_state(opened)

    hermes_edit = work / "hermes-edit.db"
    shutil.copy(opened, hermes_edit)
    report["hermes_edit"] = run_hermes(hermes, "hermes-edit", hermes_edit, home, [MARKER_WORD])
    report["hermes_edit"]["file"] = file_state(hermes_edit)
    report["hermes_edit"]["index_rowids"] = {MARKER_WORD: raw_matches(hermes_edit, MARKER_WORD)}

    plain = work / "plain-edit.db"
    shutil.copy(opened, plain)
    report["plain_edit"] = {"statement": PLAIN_UPDATE, "rows": plain_update(plain)}
    report["plain_edit"] |= run_hermes(hermes, "search", plain, home, [OLD_WORD, NEW_WORD])
    report["plain_edit"]["file"] = file_state(plain)
    report["plain_edit"]["index_rowids"] = {w: raw_matches(plain, w) for w in (OLD_WORD, NEW_WORD)}

    report["optimize"] = run_hermes(hermes, "optimize", plain, home, [OLD_WORD, NEW_WORD])
    report["optimize"]["file"] = file_state(plain)
    return report


def write_fixture(report: dict[str, Any], opened: Path, out: Path) -> None:
    """The file as Hermes left it after opening, as SQL: the dump reloads the rows through the triggers,
    which index them anew, so Hermes' own writes into the indexes while it opened the file
    (`open.fts_writes` in the JSON) are replayed after it; checked to give the same index."""
    out.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(opened)
    try:
        script = dump_sql(conn)
    finally:
        conn.close()
    with tempfile.TemporaryDirectory() as tmp:
        again = Path(tmp) / "again.db"
        load_sql(script, again)
        replay(again, report["open"]["fts_writes"])
        if file_state(again) != report["after_open"]:
            raise HazardError("the dump does not reload into the file Hermes left")
    name = f"v6-opened-by-v{report['after_open']['schema_version']}"
    (out / f"{name}.sql").write_text(script, encoding="utf-8")
    text = json.dumps(report, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    (out / f"{name}.json").write_text(text, encoding="utf-8")


def summary(report: dict[str, Any]) -> list[str]:
    """The few lines that answer the question."""
    after = report["after_open"]
    plain, edit, opt = report["plain_edit"], report["hermes_edit"], report["optimize"]
    return [
        f"Hermes SCHEMA_VERSION {report['open']['hermes_schema_version']}: file schema_version "
        f"{report['v6']['schema_version']} -> {after['schema_version']}, state_meta {after['state_meta']}",
        f"messages_fts after open: {after['fts_tables'].get('messages_fts', '').splitlines()}",
        f"messages_fts_update after open: {after['triggers'].get('messages_fts_update')!r}",
        f"Hermes' writes into the indexes while opening: {report['open']['fts_writes']}; "
        f"integrity after open {after['fts_integrity']} (v6 file before: {report['v6']['fts_integrity']})",
        f"Hermes' purge_stale_tool_call_markers: {edit.get('purge', {}).get('rows_affected')} row(s); "
        f"index still holds {MARKER_WORD!r} for rowids {edit['index_rowids'][MARKER_WORD]}; "
        f"integrity {edit['file']['fts_integrity']}",
        f"plain UPDATE ({plain['rows']} row): Hermes search {OLD_WORD!r} -> {plain['search'][OLD_WORD]}, "
        f"{NEW_WORD!r} -> {plain['search'][NEW_WORD]}; index rowids {plain['index_rowids']}; "
        f"integrity {plain['file']['fts_integrity']}",
        f"after Hermes' optimize_fts_storage {opt.get('optimize')}: search {opt['search']}; "
        f"integrity {opt['file']['fts_integrity']}; "
        f"messages_fts {opt['file']['fts_tables'].get('messages_fts', '').split()[:8]}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hermes_dir", type=Path, help="folder holding Hermes' hermes_state.py and its modules")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs Hermes (with its deps)")
    parser.add_argument("--write-fixture", type=Path, help="folder for the opened file's SQL dump and the report")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = parser.parse_args(argv)
    if not (args.hermes_dir / "hermes_state.py").is_file():
        print(f"error: {args.hermes_dir} holds no hermes_state.py", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        try:
            report = run(Hermes(args.hermes_dir.resolve(), args.python), Path(tmp))
            if args.write_fixture:
                write_fixture(report, Path(tmp) / "opened.db", args.write_fixture)
        except HazardError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    print(json.dumps(report, indent=1, ensure_ascii=False) if args.json else "\n".join(summary(report)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
