"""A later Hermes' columns in an import: values carried in extra data, and what new rows must hold.

Records carry the values of a later Hermes' columns (core/layouts.py's later_columns) in their extra
data under HERMES_COLUMNS_KEY: an export of a later file, or another state.db merged in. Once a
batch's rows are in, `settle` moves each value into its column where this file has one and leaves the
others in the extra data (each such session gets a notice); then every new row is given the values
its layout requires where nothing gave one (`active = 1`, ...), and on a later Hermes' file a
`model_config` that is not JSON is set aside, since that Hermes reads it with json_extract.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

from hermes_state_tools.core.layouts import FileLayout, later_columns
from hermes_state_tools.core.records import HERMES_COLUMNS_KEY, Problem
from hermes_state_tools.tables import counters, extras

_KEY = f"'$.{HERMES_COLUMNS_KEY}'"
def _carrying(data: str = "data") -> str:
    """The SQL condition of an extra-data row (its `data` column) that carries columns' values."""
    return f"json_valid({data}) AND json_type({data}, {_KEY}) = 'object'"


_CARRIES = _carrying()
_CHUNK = 500  # session ids bound per statement


def _chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _CHUNK):
        yield list(ids[start:start + _CHUNK])


def settle(conn: sqlite3.Connection, layout: FileLayout, first_id: int,
           created: Sequence[str]) -> dict[str, tuple[Problem, ...]]:
    """Settle the rows a batch wrote (messages from id `first_id` on, the sessions it `created`); returns the
    notices of each session whose values of columns this file lacks stay in the extra data, and of each
    that this layout shows where the source's Hermes hid it."""
    kept: dict[str, tuple[Problem, ...]] = {}
    if extras.present(conn):
        _promote(conn, layout, "messages", extras.MESSAGE_TABLE, "message_id", "message_id >= ?", [first_id])
        for ids in _chunks(created):
            marks = ",".join("?" * len(ids))
            _promote(conn, layout, "sessions", extras.SESSION_TABLE, "session_id", f"session_id IN ({marks})", ids)
        kept = {sid: (problem,) for sid, problem in _still_carried(conn, first_id, created).items()}
        for sid, problem in _shown_here(conn, first_id, created).items():
            kept[sid] = (*kept.get(sid, ()), problem)
    _fill_new_rows(conn, layout, first_id, created)
    if not layout.hides_rewound:
        _recount_where_every_row_shows(conn, created)
    if layout.later:
        _set_aside_unreadable_model_config(conn, created)
    return kept


def _promote(conn: sqlite3.Connection, layout: FileLayout, table: str, extra_table: str, key: str,
             where: str, params: Sequence[object]) -> None:
    """Move carried values into the columns `table` has here, all of a row's in one UPDATE (its triggers
    fire once), and drop them from the extra data."""
    columns = [name for name in layout.columns[table] if name in later_columns(table)]
    if not columns:
        return
    sets = ", ".join(
        f'"{name}" = COALESCE((SELECT json_extract(x.data, \'$.{HERMES_COLUMNS_KEY}."{name}"\') FROM {extra_table} x '
        f'WHERE x.{key} = {table}.id AND {_CARRIES}), "{name}")' for name in columns)
    carried = f"SELECT {key} FROM {extra_table} WHERE {where} AND {_CARRIES}"
    conn.execute(f"UPDATE {table} SET {sets} WHERE id IN ({carried})", params)
    paths = ", ".join(f"'$.{HERMES_COLUMNS_KEY}.\"{name}\"'" for name in columns)
    conn.execute(f"UPDATE {extra_table} SET data = json_remove(data, {paths}) WHERE {where} AND {_CARRIES}", params)
    conn.execute(f"UPDATE {extra_table} SET data = json_remove(data, {_KEY}) "
                 f"WHERE {where} AND {_CARRIES} AND json_extract(data, {_KEY}) = '{{}}'", params)
    conn.execute(f"DELETE FROM {extra_table} WHERE {where} AND data = '{{}}'", params)


def _still_carried(conn: sqlite3.Connection, first_id: int, created: Sequence[str]) -> dict[str, Problem]:
    """A notice for each session whose rows keep values of columns this file has not."""
    found: dict[str, tuple[int, set[str]]] = {}

    def note(session_id: str, names: str) -> None:
        count, all_names = found.get(session_id, (0, set()))
        found[session_id] = (count + 1, all_names | set(names.split(",")))

    for session_id, names in conn.execute(
            f"SELECT x.session_id, group_concat(j.key) FROM {extras.MESSAGE_TABLE} x, json_each(x.data, {_KEY}) j "
            f"WHERE x.message_id >= ? AND {_carrying('x.data')} GROUP BY x.message_id", (first_id,)):
        note(session_id, names)
    for ids in _chunks(created):
        for session_id, names in conn.execute(
                f"SELECT x.session_id, group_concat(j.key) FROM {extras.SESSION_TABLE} x, json_each(x.data, {_KEY}) j "
                f"WHERE x.session_id IN ({','.join('?' * len(ids))}) AND {_carrying('x.data')} "
                "GROUP BY x.session_id",
                ids):
            note(session_id, names)
    return {
        session_id: Problem(f"session {session_id}", None, "kept_in_extra",
                            f"{count} row(s) hold values of columns this database has not "
                            f"({', '.join(sorted(names))}): kept in the extra data, where export finds them")
        for session_id, (count, names) in found.items()
    }


def _carried(column: str, data: str = "x.data") -> str:
    return f"json_extract({data}, '$.{HERMES_COLUMNS_KEY}.\"{column}\"')"


def _shown_here(conn: sqlite3.Connection, first_id: int, created: Sequence[str]) -> dict[str, Problem]:
    """A notice for each session the source's Hermes hid in part or whole (rewound or compacted-away
    messages, an archived or hidden session) where this layout has no column to hide it: here it is live."""
    said: dict[str, list[str]] = {}
    for session_id, rewound, compacted in conn.execute(
            f"SELECT x.session_id, SUM(COALESCE({_carried('compacted')}, 0) != 1), "
            f"SUM(COALESCE({_carried('compacted')}, 0) = 1) FROM {extras.MESSAGE_TABLE} x "
            f"WHERE x.message_id >= ? AND {_carrying('x.data')} AND {_carried('active')} = 0 "
            "GROUP BY x.session_id", (first_id,)):
        parts = [f"{n} message(s) {what}" for n, what in ((rewound, "rewound"), (compacted, "compacted away")) if n]
        said[session_id] = [" and ".join(parts) + " there are live here: this database's Hermes shows them and "
                            "replays them on resume"]
    for ids in _chunks(created):
        for session_id, archived in conn.execute(
                f"SELECT x.session_id, {_carried('archived')} FROM {extras.SESSION_TABLE} x "
                f"WHERE x.session_id IN ({','.join('?' * len(ids))}) AND {_carrying('x.data')} "
                f"AND (COALESCE({_carried('archived')}, 0) = 1 OR COALESCE({_carried('hidden')}, 0) = 1)", ids):
            what = "archived" if archived == 1 else "hidden"
            said.setdefault(session_id, []).append(f"the session, {what} there, is listed here")
    return {
        session_id: Problem(f"session {session_id}", None, "shown_here",
                            f"{'; '.join(parts)} (this layout has no column to hide them; "
                            "their state is in the extra data, and export carries it)")
        for session_id, parts in said.items()
    }


def _recount_where_every_row_shows(conn: sqlite3.Connection, created: Sequence[str]) -> None:
    """A stored count kept from an export (a later Hermes counts only the rows it shows) is recounted in a
    file that shows every row: there each imported row is live."""
    for ids in _chunks(created):
        short = [row[0] for row in conn.execute(
            f"SELECT id FROM sessions WHERE id IN ({','.join('?' * len(ids))}) AND message_count != "
            f"{counters.REAL_MESSAGE_COUNT}", ids)]
        counters.recount(conn, short)


def _fill_new_rows(conn: sqlite3.Connection, layout: FileLayout, first_id: int, created: Sequence[str]) -> None:
    """Give new rows the values their layout requires where nothing gave one (a column a Hermes reconcile
    added may lack its default, and NULL there hides a message from every Hermes loader)."""
    values = layout.new_row_values("messages")
    if values:
        sets = ", ".join(f"{name} = COALESCE({name}, {value})" for name, value in values.items())
        nulls = " OR ".join(f"{name} IS NULL" for name in values)
        conn.execute(f"UPDATE messages SET {sets} WHERE id >= ? AND ({nulls})", (first_id,))
    values = layout.new_row_values("sessions")
    if values:
        sets = ", ".join(f"{name} = COALESCE({name}, {value})" for name, value in values.items())
        nulls = " OR ".join(f"{name} IS NULL" for name in values)
        for ids in _chunks(created):
            conn.execute(f"UPDATE sessions SET {sets} WHERE id IN ({','.join('?' * len(ids))}) AND ({nulls})", ids)


def _set_aside_unreadable_model_config(conn: sqlite3.Connection, created: Sequence[str]) -> None:
    """A later Hermes reads `model_config` with json_extract, which fails on text that is not JSON for
    every session listed: such a value goes to the session's extra data (original_model_config)."""
    for ids in _chunks(created):
        marks = ",".join("?" * len(ids))
        bad = conn.execute(f"SELECT id, model_config FROM sessions WHERE id IN ({marks}) AND model_config IS NOT NULL "
                           "AND NOT json_valid(model_config)", ids).fetchall()
        if bad:
            extras.put_session_extras(conn, [(sid, {**extras.session_extra(conn, sid), "original_model_config": text})
                                             for sid, text in bad])
            conn.executemany("UPDATE sessions SET model_config = NULL WHERE id = ?", [(sid,) for sid, _ in bad])
