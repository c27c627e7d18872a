"""The import writer: one refused session never takes the rest of its batch with it."""

from __future__ import annotations

from pathlib import Path

from hermes_state_tools import SessionDB
from hermes_state_tools.ingest.existing import fingerprint, fingerprint_of, load_existing
from hermes_state_tools.ingest.prepare import Prepared
from hermes_state_tools.ingest.units import Unit
from hermes_state_tools.ingest.writer import write_batch


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
        assert result.written == () and result.stale == (planned,)
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
