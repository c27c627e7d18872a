"""The import writer: one refused session never takes the rest of its batch with it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hermes_state_tools import SessionDB
from hermes_state_tools.ingest.copies.stored import fingerprint, fingerprint_of, load_existing
from hermes_state_tools.ingest.planning.prepared import Prepared
from hermes_state_tools.ingest.planning.units import Unit
from hermes_state_tools.ingest.writing.rows import CHUNK_TEXT, ROWS_PER_INSERT
from hermes_state_tools.ingest.writing.writer import write_batch


def _prepared(session_id: str, model: object) -> Prepared:
    row = {"id": session_id, "source": "cli", "started_at": 1.0, "ended_at": 2.0, "end_reason": "imported",
           "model": model}
    rows = ((session_id, "user", "hello", None, None, None, 1.5, None, None, None, None, None),)
    return Prepared(session_id=session_id, create=True, row=row, session_extra={}, rows=rows, message_extras=(),
                    tool_calls=0, duplicates=0, fingerprint=None, retimed=(),
                    unit=Unit(session_id, [], (), 0.0))


def test_a_session_sqlite_refuses_is_reported_and_the_others_are_written(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as db:
        batch = (_prepared("good-1", "m"), _prepared("bad", object()), _prepared("good-2", "m"))
        result = db._writer.run(lambda conn: write_batch(conn, batch))
        assert {s["id"] for s in db.search_sessions()} == {"good-1", "good-2"}
        assert db.message_count() == 2 and len(db.search_messages("hello")) == 2
    bad = next(item for item in result.written if item.session_id == "bad")
    assert [(p.kind, p.failure) for p in bad.problems] == [("not_stored", True)]
    assert (bad.stored, bad.created, bad.messages) == (False, False, 0)
    assert result.stale == ()


def test_a_session_changed_since_it_was_planned_comes_back_stale_and_unwritten(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as db:
        planned = _prepared("s1", "m")  # planned while s1 did not exist
        db.create_session("s1", "cli")  # another process creates it before the write
        result = db._writer.run(lambda conn: write_batch(conn, (planned,)))
        assert result.written == () and result.stale == (planned.unit,)
        assert db.message_count() == 0


def test_a_plan_remembers_the_fingerprint_the_writer_checks(tmp_path: Path) -> None:
    # The reader takes a plan's fingerprint from the rows it planned against (one snapshot); the
    # writer asks the database. Both must agree for every kind of session, or plans would be
    # made again for nothing (or, worse, not made again when they should be).
    with SessionDB(tmp_path / "state.db") as db:
        db.create_session("empty", "cli")
        db.create_session("busy", "cli")
        for n in range(3):
            db.append_message("busy", "user", f"m{n}")
        db.create_session("pruned", "cli")
        db.append_message("pruned", "user", "old")
        db.append_message("pruned", "user", "new")
        db._conn.execute("DELETE FROM messages WHERE content = 'new'")  # the newest row gone: max id drops
        for session_id in ("empty", "busy", "pruned", "absent"):
            conn = db._conn
            assert fingerprint_of(load_existing(conn, session_id)) == fingerprint(conn, session_id), session_id


def _many(session_id: str, count: int, surrogate_at: int | None = None, pad: int = 0) -> Prepared:
    """A session of `count` messages in rows of both widths (7 and 12 columns), in runs of odd lengths
    (`pad`: characters added to each text)."""
    rows = []
    for n in range(count):
        text = "cut \ud83d" if n == surrogate_at else f"message {n}" + "x" * pad
        row: tuple[object, ...] = (session_id, "user", text, None, None, None, float(n))
        if (n // 37) % 2:  # runs of 37 short rows and 37 full ones, so no run fills whole inserts
            row += (n, "stop", None, None, None)
        rows.append(row)
    return Prepared(session_id=session_id, create=True, row={"id": session_id, "source": "cli", "started_at": 0.0},
                    session_extra={}, rows=tuple(rows), message_extras=(), tool_calls=0, duplicates=0,
                    fingerprint=None, retimed=(), unit=Unit(session_id, [], (), 0.0))


@pytest.mark.parametrize("count, surrogate_at, pad", [
    (500, None, 0), (500, 333, 0), (81, 80, 0), (ROWS_PER_INSERT, None, 0),
    (200, 150, CHUNK_TEXT // 60),  # chunks of much text: row by row
])
def test_rows_are_written_in_order_whole_inserts_and_the_rest_alike(tmp_path: Path, count: int,
                                                                    surrogate_at: int | None, pad: int) -> None:
    # Rows go in by INSERTs of ROWS_PER_INSERT rows (row by row when a chunk holds much text) and
    # executemany for the rest of each run: the ids follow the rows' order, every column lands where
    # it belongs, and a lone surrogate anywhere is stored as U+FFFD with every other row as it was.
    item = _many("s1", count, surrogate_at, pad)
    with SessionDB(tmp_path / "state.db") as db:
        result = db._writer.run(lambda conn: write_batch(conn, (item,)))
        assert result.written[0].messages == count
        stored = [tuple(r) for r in db._conn.execute(  # type: ignore[union-attr]
            "SELECT content, timestamp, token_count, finish_reason FROM messages ORDER BY id")]
        assert db.message_count() == count and db.search_messages("message")
    expected = [("cut \ufffd" if n == surrogate_at else f"message {n}" + "x" * pad, float(n),
                 n if (n // 37) % 2 else None, "stop" if (n // 37) % 2 else None) for n in range(count)]
    assert stored == expected


def test_a_value_sqlite_cannot_bind_is_reported_with_its_rows_parameter(tmp_path: Path) -> None:
    # Rows go in 80 at a time; the report still names the parameter within the row (a dict as content
    # is the third value), not its place among the 560 of the statement.
    item = _many("s1", 200)
    rows = list(item.rows)  # type: ignore[arg-type]
    rows[150] = (*rows[150][:2], {"not": "text"}, *rows[150][3:])
    item = dataclasses.replace(item, rows=tuple(rows))
    with SessionDB(tmp_path / "state.db") as db:
        result = db._writer.run(lambda conn: write_batch(conn, (item,)))
        assert db.message_count() == 0
    (problem,) = result.written[0].problems
    assert problem.kind == "not_stored" and "parameter 3" in problem.detail, problem.detail
