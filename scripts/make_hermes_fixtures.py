"""Build fixtures/hermes/: databases made by Hermes Agent's own `SessionDB` at every known layout.

For each layout in scripts/hermes_source.py (name -> commit of the fork's history), Hermes'
`hermes_state.py` at that commit runs in a subprocess (scripts/hermes_populate.py) and writes:

* `<name>-empty.sql`: the empty database exactly as that version creates it;
* `<name>.sql`: a scenario written through that version's public API (tool calls, CJK,
  multimodal content, a rewound turn, an in-place compaction, an archived session, observed
  group context, a delegate child, a /branch child, a compression child), as far as it goes;
* `chain-<name>.sql`: one file created at v6 and then opened and written a little by each
  later version in turn, as real users' files are (columns added by ALTER sit at the end);
* `manifest.json` (what each dump holds, so tests assert without hard-coding) and
  `LAYOUTS.md` (each layout's differences from v6).

Every dump is checked before it is written: it loads back into a file whose schema text is
byte-identical, whose rows are identical, and which passes integrity_check and the FTS5
integrity-check of every FTS table.

    python scripts/make_hermes_fixtures.py --hermes-git /path/to/hermes-agent/.git
    python scripts/make_hermes_fixtures.py --hermes-git ... --check   # exit 1 if fixtures/hermes differs

Deterministic: Hermes' clock is replaced, so the same commits always give the same files.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hermes_state_tools.store.sqldump import dump_sql, load_sql  # noqa: E402
from scripts.hermes_layouts_md import render_layouts  # noqa: E402
from scripts.hermes_source import (  # noqa: E402
    COMMITS,
    LAYOUTS,
    STRAY_CHAIN,
    HermesSourceError,
    describe,
    git_dir_from,
    read_with_hermes,
    run_worker,
)
from scripts.hermes_view import SEARCH_QUERIES, integrity, summarize  # noqa: E402

OUT = ROOT / "fixtures" / "hermes"
WORKER = ROOT / "scripts" / "hermes_populate.py"


def fts_tables(conn: sqlite3.Connection) -> list[str]:
    """The FTS5 virtual tables of a database."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'")
    return sorted(name for name, sql in rows if "fts5" in sql.lower())


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """What integrity_check and each FTS table's FTS5 integrity-check report; empty when sound."""
    return [f"{check}: {result}" for check, result in integrity(conn).items() if result != "ok"]


def _schema(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    return sorted(conn.execute("SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_master"))


def _rows(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    virtual = {name for name, in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'")}
    tables = [name for name, in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
              if not any(name.startswith(v + "_") for v in virtual) and name not in virtual]
    return {t: conn.execute(f'SELECT * FROM "{t}" ORDER BY rowid').fetchall() for t in sorted(tables)}


def checked_dump(db_path: Path, copy: Path) -> str:
    """The dump of `db_path`, after proving it loads back into the same schema, rows and a sound FTS."""
    conn = sqlite3.connect(str(db_path))
    try:
        if problems := integrity_problems(conn):
            raise HermesSourceError(f"{db_path.name} as Hermes left it fails integrity: {problems}")
        text = dump_sql(conn)
        schema, rows = _schema(conn), _rows(conn)
    finally:
        conn.close()
    load_sql(text, copy)
    again = sqlite3.connect(str(copy))
    try:
        if _schema(again) != schema:
            raise HermesSourceError(f"{db_path.name}: the dump does not reload the same schema text")
        if _rows(again) != rows:
            raise HermesSourceError(f"{db_path.name}: the dump does not reload the same rows")
        if problems := integrity_problems(again):
            raise HermesSourceError(f"{db_path.name}: the reloaded dump fails integrity: {problems}")
    finally:
        again.close()
    return text


def _count(conn: sqlite3.Connection, sql: str) -> int | None:
    try:
        return int(conn.execute(sql).fetchone()[0])
    except sqlite3.OperationalError:  # the column does not exist at this layout
        return None


def facts(db_path: Path) -> dict[str, Any]:
    """Schema version and counts of a database, for the manifest."""
    conn = sqlite3.connect(str(db_path))
    try:
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        return {
            "schema_version": row[0] if row else None,
            "sessions": _count(conn, "SELECT COUNT(*) FROM sessions"),
            "messages": _count(conn, "SELECT COUNT(*) FROM messages"),
            "inactive_messages": _count(conn, "SELECT COUNT(*) FROM messages WHERE active = 0"),
            "fts_tables": fts_tables(conn),
            "delegate_marked": [sid for sid, in conn.execute(
                "SELECT id FROM sessions WHERE json_valid(model_config) "
                "AND json_extract(model_config, '$._delegate_from') IS NOT NULL ORDER BY id")],
            "state_meta": dict(conn.execute("SELECT key, value FROM state_meta").fetchall())
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'state_meta'").fetchone() else None,
        }
    finally:
        conn.close()


class Builder:
    """Runs Hermes at each commit into a scratch folder and collects the checked dumps."""

    def __init__(self, git_dir: Path, scratch: Path) -> None:
        self.git_dir, self.scratch = git_dir, scratch
        self.files: dict[str, str] = {}
        self.manifest: dict[str, dict[str, Any]] = {}

    def _record(self, dump: str, db_path: Path, layout: str, kind: str, extra: dict[str, Any]) -> None:
        commit = describe(self.git_dir, COMMITS[layout])
        self.files[f"{dump}.sql"] = checked_dump(db_path, self.scratch / f"reload-{dump}.db")
        view = summarize(read_with_hermes(self.git_dir, commit.sha, db_path, list(SEARCH_QUERIES)))
        self.manifest[dump] = {"layout": layout, "kind": kind, "commit": commit.sha, "date": commit.date,
                               "subject": commit.subject, **facts(db_path), **extra, "hermes_view": view}

    def layout(self, name: str) -> None:
        """`<name>-empty` and `<name>`: a new file as this version creates it, empty then populated."""
        for kind, dump in (("empty", f"{name}-empty"), ("populated", name)):
            db_path = self.scratch / f"{dump}.db"
            notes = run_worker(self.git_dir, COMMITS[name], WORKER, [kind, str(db_path)])
            self._record(dump, db_path, name, kind, {"scenario": notes} if kind == "populated" else {})

    def chain(self, names: list[str], prefix: str = "chain") -> None:
        """`<prefix>-<name>` for each step: one file made by the first version, opened by each later one."""
        db_path = self.scratch / f"{prefix}.db"
        steps: list[str] = []
        scenario: dict[str, list[Any]] = {}
        for step, name in enumerate(names):
            notes = run_worker(self.git_dir, COMMITS[name], WORKER, ["chain", str(db_path), str(step)])
            for kind, values in notes.items():
                scenario.setdefault(kind, []).extend(values)
            steps.append(name)
            so_far = {kind: list(values) for kind, values in scenario.items()}
            self._record(f"{prefix}-{name}", db_path, name, prefix, {"steps": list(steps), "scenario": so_far})


def build(git_dir: Path, names: list[str]) -> dict[str, str]:
    """file name -> text: every dump, manifest.json and LAYOUTS.md."""
    with tempfile.TemporaryDirectory(prefix="hermes-fixtures-") as tmp:
        builder = Builder(git_dir, Path(tmp))
        for name in names:
            print(f"{name}: {LAYOUTS[name]}", file=sys.stderr)
            builder.layout(name)
        builder.chain(names)
        if {name for name in STRAY_CHAIN if name in LAYOUTS} <= set(names):
            builder.chain(list(STRAY_CHAIN), prefix="strays")
        files = dict(builder.files)
        files["LAYOUTS.md"] = render_layouts(builder.files, builder.manifest)
    files["manifest.json"] = json.dumps(builder.manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hermes-git", required=True, help="Hermes' git directory (or a clone holding it)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the dumps go (default fixtures/hermes)")
    parser.add_argument("--only", nargs="+", choices=list(LAYOUTS), help="these layouts only (the chain too)")
    parser.add_argument("--check", action="store_true", help="compare with the files in --out instead")
    args = parser.parse_args()
    try:
        files = build(git_dir_from(args.hermes_git), args.only or list(LAYOUTS))
    except HermesSourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.check:
        on_disk = {p.name: p.read_text("utf-8") for p in args.out.glob("*") if p.is_file()}
        stale = [n for n, text in files.items() if on_disk.get(n) != text]
        for name in stale:
            print(f"stale fixture: {args.out / name}", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
