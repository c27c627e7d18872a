"""fixtures/hermes/LAYOUTS.md: what each Hermes layout adds to v6, read from the dumps themselves.

Each empty dump (the file exactly as that Hermes creates it) is loaded in memory and compared
with v6's: columns of sessions and messages, FTS tables, triggers (name and a digest of their
SQL, with the full text listed once per digest), other tables, indexes, views and state_meta
keys. A second table compares each step of the migrated chain with the fresh file of the same
version, which is where migrated files differ (column order, NOT NULL and defaults).
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from scripts.hermes_source import LAYOUTS

_MAIN = ("sessions", "messages")
_SHADOW = ("_data", "_idx", "_content", "_docsize", "_config")


@dataclass(frozen=True)
class Shape:
    """The schema of one database, as sets of short descriptions."""

    columns: dict[str, list[str]]
    fts: dict[str, str]
    triggers: dict[str, str]
    tables: set[str]
    indexes: dict[str, str]
    views: set[str]
    meta_keys: set[str]
    trigger_sql: dict[str, str] = field(default_factory=dict)


def _digest(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()[:8]


def _column(row: tuple[Any, ...]) -> str:
    _, name, kind, notnull, default, pk = row
    text = f"{name} {kind}".strip()
    text += " NOT NULL" if notnull else ""
    text += f" DEFAULT {default}" if default is not None else ""
    return text + (" PK" if pk else "")


def shape_of(dump: str) -> Shape:
    """Load a dump in memory and describe its schema."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(dump)
        master = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
        virtual = {n for t, n, s in master if t == "table" and s.upper().startswith("CREATE VIRTUAL")}
        hidden = virtual | {v + suffix for v in virtual for suffix in _SHADOW}
        has_meta = any(n == "state_meta" for _, n, _ in master)
        keys = {k for k, in conn.execute("SELECT key FROM state_meta")} if has_meta else set()
        return Shape(
            columns={t: [_column(r) for r in conn.execute(f"PRAGMA table_info({t})")] for t in _MAIN},
            fts={n: s for t, n, s in master if n in virtual},
            triggers={n: _digest(s) for t, n, s in master if t == "trigger"},
            tables={n for t, n, _ in master if t == "table" and n not in hidden and not n.startswith("sqlite")},
            indexes={n: s for t, n, s in master if t == "index"},
            views={n for t, n, s in master if t == "view"},
            meta_keys=keys,
            trigger_sql={_digest(s): s for t, n, s in master if t == "trigger"},
        )
    finally:
        conn.close()


def _names(columns: list[str]) -> list[str]:
    return [c.split(" ", 1)[0] for c in columns]


def _added_columns(shape: Shape, base: Shape, table: str) -> str:
    known = set(_names(base.columns[table]))
    added = [c for c in shape.columns[table] if c.split(" ", 1)[0] not in known]
    return ", ".join(f"`{c}`" for c in added) or "-"


def _listing(items: set[str] | dict[str, str], base: set[str] | dict[str, str]) -> str:
    return ", ".join(f"`{n}`" for n in sorted(set(items) - set(base))) or "-"


def _triggers(shape: Shape) -> str:
    return "<br>".join(f"`{n}` {d}" for n, d in sorted(shape.triggers.items())) or "-"


def _fts(shape: Shape, forms: dict[str, str]) -> str:
    return "<br>".join(f"`{n}` {forms[sql]}" for n, sql in sorted(shape.fts.items())) or "-"


def _layout_rows(shapes: dict[str, Shape], manifest: dict[str, dict[str, Any]], forms: dict[str, str]) -> list[str]:
    base = shapes["v6"]
    rows = ["| layout | commit (date) | schema | sessions + | messages + | FTS tables (form) | triggers (digest) "
            "| other tables + | indexes + | views | state_meta keys |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, shape in shapes.items():
        info = manifest[f"{name}-empty"]
        rows.append(
            f"| {name} | `{info['commit'][:9]}` ({info['date'][:10]}) | {info['schema_version']} "
            f"| {_added_columns(shape, base, 'sessions')} | {_added_columns(shape, base, 'messages')} "
            f"| {_fts(shape, forms)} | {_triggers(shape)} | {_listing(shape.tables, base.tables)} "
            f"| {_listing(shape.indexes, base.indexes)} | {_listing(shape.views, set())} "
            f"| {', '.join(f'`{k}`' for k in sorted(shape.meta_keys)) or '-'} |")
    return rows


def _column_diff(chain: list[str], fresh: list[str]) -> str:
    """The definitions that differ, then where the column order parts (the chain's tail from there)."""
    parts = [f"`{c}` / `{f}`" for c, f in zip(chain, fresh, strict=False)
             if c != f and c.split(" ", 1)[0] == f.split(" ", 1)[0]]
    changed = {c.split(" ", 1)[0] for c in chain} ^ {f.split(" ", 1)[0] for f in fresh}
    parts += [f"only one has `{name}`" for name in sorted(changed)]
    names, fresh_names = _names(chain), _names(fresh)
    if sorted(names) == sorted(fresh_names) and names != fresh_names:
        start = next(i for i, (a, b) in enumerate(zip(names, fresh_names, strict=True)) if a != b)
        parts.append("order differs from column " + str(start + 1) + "; the chain ends " + ", ".join(names[start:]))
    return "; ".join(parts)


def _chain_rows(chain: dict[str, Shape], fresh: dict[str, Shape]) -> list[str]:
    rows = ["| step | columns that differ from a fresh file (chain / fresh) | triggers that differ | "
            "objects only in the chain | objects only in the fresh file |", "|---|---|---|---|---|"]
    for name, shape in chain.items():
        new = fresh[name]
        diffs = []
        for table in _MAIN:
            if shape.columns[table] != new.columns[table]:
                diffs.append(f"{table}: {_column_diff(shape.columns[table], new.columns[table])}")
        triggers = [n for n in shape.triggers if n in new.triggers and shape.triggers[n] != new.triggers[n]]
        mine = set(shape.fts) | shape.tables | set(shape.indexes) | set(shape.triggers) | shape.views
        theirs = set(new.fts) | new.tables | set(new.indexes) | set(new.triggers) | new.views
        rows.append(f"| chain-{name} | {'<br>'.join(diffs) or '-'} | {', '.join(triggers) or '-'} "
                    f"| {_listing(mine, theirs)} | {_listing(theirs, mine)} |")
    return rows


def render_layouts(files: dict[str, str], manifest: dict[str, dict[str, Any]]) -> str:
    """The text of LAYOUTS.md from the dumps and the manifest."""
    ordered = sorted(((n, m) for n, m in manifest.items() if m["layout"] in LAYOUTS),
                     key=lambda item: list(LAYOUTS).index(item[1]["layout"]))
    fresh = {m["layout"]: shape_of(files[f"{n}.sql"]) for n, m in ordered if m["kind"] == "empty"}
    chain = {m["layout"]: shape_of(files[f"{n}.sql"]) for n, m in ordered if m["kind"] == "chain"}
    every_fts = dict.fromkeys(sql for shape in fresh.values() for sql in shape.fts.values())
    forms = {sql: f"F{i + 1}" for i, sql in enumerate(every_fts)}
    bodies: dict[str, str] = {}
    for shape in [*fresh.values(), *chain.values()]:
        bodies.update(shape.trigger_sql)
    out = ["# Hermes layouts, as Hermes' own code creates them", "",
           "Generated by `scripts/make_hermes_fixtures.py` from the `*-empty.sql` dumps; `+` columns are those "
           "v6 lacks, in the order the fresh file holds them (`PK`: part of the primary key).", "",
           *_layout_rows(fresh, manifest, forms), "", "## FTS table forms", ""]
    out += [f"* **{form}** `{sql}`" for sql, form in forms.items()]
    out += ["", "## Trigger bodies by digest", ""]
    for digest, sql in sorted(bodies.items()):
        out += [f"### {digest}", "", "```sql", sql, "```", ""]
    out += ["## Migrated chain: each step against the fresh file of that version", "",
            "One file created by v6 and opened (and written a little) by every later version in order.", "",
            *_chain_rows(chain, fresh), ""]
    return "\n".join(out)
