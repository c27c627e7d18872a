"""Messages merged into a stored session keep the file's order even where the stored times leave no room."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from hermes_state_tools import SessionDB
from hermes_state_tools.ingest import ImportStats, import_paths

SID = "20260101_000000_aaaaaaaa"


def _stored(path: Path, contents: list[str], times: list[float]) -> None:
    with SessionDB(path) as db:
        db.create_session(SID, "cli")
        ids = [db.append_message(SID, "user", text) for text in contents]
        for message_id, stamp in zip(ids, times, strict=True):
            db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (stamp, message_id))


@pytest.mark.parametrize("times", [[1000.0, 1000.0], [1000.0, 1000.000001], [1000.0, 1000.0000002]])
def test_inserted_messages_sit_between_stored_rows_with_no_room(tmp_path: Path, times: list[float]) -> None:
    db_path = tmp_path / "state.db"
    _stored(db_path, ["first", "last"], times)
    wanted = ["first", "a", "b", "c", "d", "e", "last"]
    (tmp_path / f"{SID}.jsonl").write_text("".join(json.dumps({"role": "user", "content": t}) + "\n" for t in wanted))

    dry = import_paths(db_path, [tmp_path / f"{SID}.jsonl"], dry_run=True)
    stats = import_paths(db_path, [tmp_path / f"{SID}.jsonl"])

    with SessionDB(db_path) as db:
        messages = db.get_messages(SID)
    assert [m["content"] for m in messages] == wanted
    stamps = [m["timestamp"] for m in messages]
    assert all(b > a for a, b in pairwise(stamps))
    assert stats.messages_imported == 5 and stats.messages_skipped_duplicate == 2
    assert ("retimed" in [p.kind for p in stats.problems]) is (times[0] == times[1])  # no room at all: moved
    assert [p.detail for p in dry.problems] == [p.detail for p in stats.problems]  # the dry run says it too
    assert stamps[0] == times[0]  # the row before the inserts keeps its time


def test_stored_ties_without_inserts_between_them_are_left_alone(tmp_path: Path) -> None:
    db_path = tmp_path / "state.db"
    _stored(db_path, ["one", "two", "three"], [5.0, 5.0, 5.0])
    lines = ["one", "two", "three", "four"]
    (tmp_path / f"{SID}.jsonl").write_text("".join(json.dumps({"role": "user", "content": t}) + "\n" for t in lines))

    stats = import_paths(db_path, [tmp_path / f"{SID}.jsonl"])

    with SessionDB(db_path) as db:
        messages = db.get_messages(SID)
    assert [m["content"] for m in messages] == lines
    assert [m["timestamp"] for m in messages[:3]] == [5.0, 5.0, 5.0]
    assert "retimed" not in [p.kind for p in stats.problems]


def _export_lines(path: Path, links: list[tuple[str, str | None]]) -> None:
    from hermes_state_tools.core.export_format import export_line

    path.write_bytes(b"".join(
        export_line({"id": sid, "source": "cli", "started_at": 1.0, "parent_session_id": parent}, [], {}, [])
        for sid, parent in links))


def test_parent_links_that_would_close_a_cycle_are_refused(tmp_path: Path) -> None:
    _export_lines(tmp_path / "e.jsonl", [("A", "B"), ("B", "A"), ("C", "D")])
    stats = import_paths(tmp_path / "state.db", [tmp_path / "e.jsonl"])
    assert sorted((p.kind, p.file) for p in stats.problems) == [("missing_parent", "session C"),
                                                               ("parent_cycle", "session A")]
    with SessionDB(tmp_path / "state.db") as db:
        assert {s["id"]: s["parent_session_id"] for s in db.search_sessions()} == {"A": None, "B": "A", "C": None}


def test_a_re_run_never_makes_the_link_the_first_run_refused(tmp_path: Path) -> None:
    _export_lines(tmp_path / "e.jsonl", [("A", "B"), ("B", "A")])
    import_paths(tmp_path / "state.db", [tmp_path / "e.jsonl"])
    again = import_paths(tmp_path / "state.db", [tmp_path / "e.jsonl"])
    assert (again.sessions_created, again.sessions_updated, again.problems) == (0, 0, [])
    with SessionDB(tmp_path / "state.db") as db:
        assert {s["id"]: s["parent_session_id"] for s in db.search_sessions()} == {"A": None, "B": "A"}


def test_a_link_into_a_stored_lineage_that_would_close_a_cycle_is_refused(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as db:
        db.create_session("B", "cli")
        db.create_session("A", "cli", parent_session_id="B")
    _export_lines(tmp_path / "e.jsonl", [("B", "A")])  # an older copy that says B came from A
    stats = import_paths(tmp_path / "state.db", [tmp_path / "e.jsonl"])
    assert [(p.kind, p.file) for p in stats.problems] == [("parent_cycle", "session B")]
    with SessionDB(tmp_path / "state.db") as db:
        assert {s["id"]: s["parent_session_id"] for s in db.search_sessions()} == {"A": "B", "B": None}


def test_a_later_import_never_relinks_what_it_did_not_write(tmp_path: Path) -> None:
    _export_lines(tmp_path / "e.jsonl", [("A", "B"), ("B", None)])
    import_paths(tmp_path / "state.db", [tmp_path / "e.jsonl"])
    with SessionDB(tmp_path / "state.db") as db:
        assert db.get_session("A")["parent_session_id"] == "B"
        db._conn.execute("UPDATE sessions SET parent_session_id = NULL WHERE id = 'A'")  # a person unlinked it
    other = tmp_path / "other"
    other.mkdir()
    (other / "20260101_000000_bbbbbbbb.jsonl").write_text(json.dumps({"role": "user", "content": "hi"}) + "\n")
    import_paths(tmp_path / "state.db", [other])
    with SessionDB(tmp_path / "state.db") as db:
        assert db.get_session("A")["parent_session_id"] is None


def test_dry_run_counts_match_a_real_run_when_a_session_comes_back_in_a_save_file(tmp_path: Path) -> None:
    saved = tmp_path / "sessions" / "saved"
    saved.mkdir(parents=True)
    lines = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    (tmp_path / "sessions" / f"{SID}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (saved / "hermes_conversation_20260101_000500.json").write_text(json.dumps(
        {"session_id": SID, "model": "m", "session_start": "2026-01-01T00:00:00",
         "messages": [*lines, {"role": "user", "content": "c"}]}))

    def counts(stats):
        return (stats.sessions_created, stats.sessions_updated, stats.messages_imported,
                stats.messages_skipped_duplicate)

    dry = import_paths(tmp_path / "state.db", [tmp_path], dry_run=True)
    assert not (tmp_path / "state.db").exists()
    real = import_paths(tmp_path / "state.db", [tmp_path])
    assert counts(dry) == counts(real) == (1, 1, 3, 2)


def test_dry_run_counts_the_fields_a_save_file_adds_to_messages_the_run_inserts(tmp_path: Path) -> None:
    """The JSONL's new messages lack what the save file knows (reasoning, finish_reason): the real run
    fills them in the rows it just wrote, and the dry run plans the save against those rows as read back."""
    saved = tmp_path / "sessions" / "saved"
    saved.mkdir(parents=True)
    lines = [{"role": "user", "content": "a", "timestamp": "2026-01-01T00:00:01"},
             {"role": "assistant", "content": "b", "timestamp": "2026-01-01T00:00:02"}]
    (tmp_path / "sessions" / f"{SID}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (saved / "hermes_conversation_20260101_000500.json").write_text(json.dumps(
        {"session_id": SID, "model": "m", "session_start": "2026-01-01T00:00:00",
         "messages": [lines[0], {"role": "assistant", "content": "b", "reasoning": "why", "finish_reason": "stop"}]}))
    for existing in (False, True):
        db = tmp_path / f"state-{existing}.db"
        if existing:  # a session already stored: its new rows come from this run too
            with SessionDB(db) as store:
                store.create_session(SID, "cli")

        def counts(stats):
            return (stats.sessions_created, stats.sessions_updated, stats.messages_imported,
                    stats.messages_skipped_duplicate, stats.messages_enriched)

        dry = import_paths(db, [tmp_path / "sessions"], dry_run=True)
        real = import_paths(db, [tmp_path / "sessions"])
        assert counts(dry) == counts(real), existing
        with SessionDB(db) as store:
            assert [(m["reasoning"], m["finish_reason"]) for m in store.get_messages(SID)] == [
                (None, None), ("why", "stop")]


def _jsonl(path: Path, contents: list[str], first: int = 0) -> None:
    path.write_text("".join(json.dumps({"role": "user" if n % 2 == 0 else "assistant", "content": text,
                                        "timestamp": f"2026-01-01T00:{first + n:02d}:00"}) + "\n"
                            for n, text in enumerate(contents)))


def test_an_imported_session_ends_at_the_last_message_a_later_import_adds(tmp_path: Path) -> None:
    early, late = tmp_path / "early", tmp_path / "late"
    early.mkdir()
    late.mkdir()
    _jsonl(early / f"{SID}.jsonl", ["a", "b"])
    _jsonl(late / f"{SID}.jsonl", ["a", "b", "c", "d"])  # the same session, copied later
    import_paths(tmp_path / "state.db", [early], tz=timezone.utc)
    stats = import_paths(tmp_path / "state.db", [late], tz=timezone.utc)
    assert stats.messages_imported == 2
    with SessionDB(tmp_path / "state.db") as db:
        session, messages = db.get_session(SID), db.get_messages(SID)
    assert session["end_reason"] == "imported" and session["ended_at"] == messages[-1]["timestamp"]
    assert session["ended_at"] == datetime(2026, 1, 1, 0, 3, tzinfo=timezone.utc).timestamp()


def test_a_session_hermes_ended_keeps_its_end_when_an_import_adds_to_it(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as db:
        db.create_session(SID, "cli")
        db.end_session(SID, "user_exit")
        ended = db.get_session(SID)["ended_at"]
    _jsonl(tmp_path / f"{SID}.jsonl", ["a", "b"], first=0)
    import_paths(tmp_path / "state.db", [tmp_path / f"{SID}.jsonl"])
    with SessionDB(tmp_path / "state.db") as db:
        session = db.get_session(SID)
        assert (session["ended_at"], session["end_reason"]) == (ended, "user_exit")
        assert len(db.get_messages(SID)) == 2


def test_a_short_reply_said_twice_is_matched_with_the_stored_one_of_its_time(tmp_path: Path) -> None:
    """The database holds only the latest turn of an old session (an "ok"); the transcript holds the
    whole history, where "ok" was also said before. The stored "ok" is the later one: the history
    goes in before it, at its own times, and no stored row moves."""
    db_path = tmp_path / "state.db"
    late = datetime(2026, 1, 1, 0, 10, tzinfo=timezone.utc).timestamp()
    _stored(db_path, ["ok"], [late])
    lines = [("user", "ok", "01:00"), ("assistant", "noted", "02:00"), ("user", "ok", "10:00")]
    (tmp_path / f"{SID}.jsonl").write_text("".join(
        json.dumps({"role": role, "content": text, "timestamp": f"2026-01-01T00:{at}"}) + "\n"
        for role, text, at in lines))
    stats = import_paths(db_path, [tmp_path / f"{SID}.jsonl"], tz=timezone.utc)
    with SessionDB(db_path) as db:
        stored = db.get_messages(SID)
    assert [(m["role"], m["content"]) for m in stored] == [(role, text) for role, text, _ in lines]
    assert [m["timestamp"] for m in stored] == [late - 540, late - 480, late]
    assert stats.messages_imported == 2 and "retimed" not in [p.kind for p in stats.problems]


def _turns(path: Path, turns: list[tuple[str, str, str]]) -> None:
    """A transcript as the gateway wrote it: each (question, reply, time) one turn, both lines at its time."""
    path.write_text("".join(json.dumps({"role": role, "content": text, "timestamp": f"2026-01-01T{at}"}) + "\n"
                            for question, reply, at in turns
                            for role, text in (("user", question), ("assistant", reply))))


def _clock(clock: str) -> float:
    return datetime.fromisoformat(f"2026-01-01T{clock}+00:00").timestamp()


def _rows_imported(tmp_path: Path, began: float, rows: list[tuple[str, str, float]], lines: list[dict[str, Any]]
                   ) -> tuple[list[str], ImportStats]:
    """`rows` (role, content, time) stored as Hermes appended them to the session that began at `began`,
    then the transcript `lines` imported: the session's texts in order, and the import's stats."""
    db_path = tmp_path / "state.db"
    with SessionDB(db_path) as db:
        db.create_session(SID, "telegram")
        db._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (began, SID))
        for role, content, at in rows:
            message_id = db.append_message(SID, role, content)
            db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (at, message_id))
    (tmp_path / f"{SID}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    stats = import_paths(db_path, [tmp_path / f"{SID}.jsonl"], tz=timezone.utc)
    with SessionDB(db_path) as db:
        return [m["content"] for m in db.get_messages(SID)], stats


def _turns_imported(tmp_path: Path, stored: list[tuple[str, str, str]], transcript: list[tuple[str, str, str]]
                    ) -> tuple[list[str], ImportStats]:
    """The `stored` turns appended as Hermes does (the reply a second after its question) to the session
    that began with the first turn of either, then the `transcript` of turns (both lines dated when the
    turn ended) imported."""
    rows = [(role, text, _clock(clock) + offset) for question, reply, clock in stored
            for offset, (role, text) in enumerate((("user", question), ("assistant", reply)))]
    lines = [{"role": role, "content": text, "timestamp": f"2026-01-01T{clock}"}
             for question, reply, clock in transcript for role, text in (("user", question), ("assistant", reply))]
    return _rows_imported(tmp_path, min(_clock(clock) for *_, clock in stored + transcript), rows, lines)


def test_a_kept_copy_of_an_earlier_turn_keeps_its_short_reply_when_the_database_holds_a_later_turn(
        tmp_path: Path) -> None:
    """The database holds only the latest turn, a kept backup of the transcript only the first; both end
    with "Thanks!". The backup's reply is dated before the stored question, so it cannot be the stored
    reply to it: it is the earlier reply, and goes in (it was dropped as already stored)."""
    stored, stats = _turns_imported(tmp_path, [("second question", "Thanks!", "10:05:00")],
                                    [("first question", "Thanks!", "10:00:00")])
    assert stored == ["first question", "Thanks!", "second question", "Thanks!"]
    assert stats.messages_imported == 2


def test_a_reply_dated_at_its_turns_end_is_still_the_stored_reply_after_an_unmatched_question(
        tmp_path: Path) -> None:
    """The gateway dates a whole turn when it ends, so a transcript's reply is dated after the stored
    question of its turn, however the two copies of the question differ: the reply is the stored one."""
    stored, stats = _turns_imported(tmp_path, [("deploy it", "Deployed.", "10:00:00")],
                                    [("deploy it now", "Deployed.", "10:00:40")])
    assert stored.count("Deployed.") == 1 and stats.messages_imported == 1


def test_a_kept_copy_of_a_turn_the_database_lacks_keeps_its_reply_that_a_later_stored_turn_repeats(
        tmp_path: Path) -> None:
    """The database lacks a turn (a failed write, an /undo) that a kept copy ends with, and the next stored
    turn ends with the same "Sure.": the copy's is dated minutes before the stored one, so it is not it,
    though it would end the run of messages the two share. (A repeated question is still matched by
    content: /retry stores the question again, alone, at the time of the retry.)"""
    history = [("hi there", "Hello!", "10:00:00"), ("what time is it", "10:05", "10:01:00")]
    stored, stats = _turns_imported(tmp_path, [*history, ("tell me more", "Sure.", "10:09:00")],
                                    [*history, ("go on", "Sure.", "10:03:00")])
    assert stored == ["hi there", "Hello!", "what time is it", "10:05", "go on", "Sure.", "tell me more", "Sure."]
    assert stats.messages_imported == 2


def test_rows_a_rewrite_dated_late_still_match_a_copy_from_before_it(tmp_path: Path) -> None:
    """/undo (or /compress) clears the session and appends it again, at the time of the rewrite: a copy
    from before holds the same messages at their old times, and they are the stored ones. The undone
    turn's "Sure." is not the "Sure." said live after the rewrite."""
    turns = [("hi there", "Hello!"), ("ok", "Done."), ("tell me a joke", "Why did..."), ("go on", "Sure.")]
    began, rewrite = _clock("10:00:00"), _clock("11:00:00")
    rows = [(role, text, rewrite + n / 1000) for n, (role, text) in enumerate(
        (role, text) for question, reply in turns[:3] for role, text in (("user", question), ("assistant", reply)))]
    rows += [("user", "and now?", rewrite + 120), ("assistant", "Sure.", rewrite + 125)]
    lines = [{"role": role, "content": text, "timestamp": f"2026-01-01T10:0{n}:00"}
             for n, (question, reply) in enumerate(turns) for role, text in (("user", question), ("assistant", reply))]
    stored, stats = _rows_imported(tmp_path, began, rows, lines)
    assert stored == ["hi there", "Hello!", "ok", "Done.", "tell me a joke", "Why did...", "go on", "Sure.",
                      "and now?", "Sure."]
    assert stats.messages_imported == 2


def test_the_one_turn_an_undo_left_matches_a_copy_from_before_it(tmp_path: Path) -> None:
    """/undo of a two-turn chat re-appends the first turn at the time of the rewrite, its two rows a
    moment apart; a transcript from before dates them an hour earlier. They are the stored ones."""
    rewrite = _clock("11:00:00")
    rows = [("user", "hi there", rewrite), ("assistant", "Hello! How can I help?", rewrite + 0.002)]
    lines = [{"role": role, "content": text, "timestamp": "2026-01-01T10:00:00"}
             for role, text, _at in rows] + [{"role": "user", "content": "tell me a joke",
                                               "timestamp": "2026-01-01T10:05:00"},
                                              {"role": "assistant", "content": "Why did...",
                                               "timestamp": "2026-01-01T10:05:00"}]
    stored, stats = _rows_imported(tmp_path, _clock("10:00:00"), rows, lines)
    assert stored == ["hi there", "Hello! How can I help?", "tell me a joke", "Why did..."]
    assert stats.messages_imported == 2 and stats.messages_skipped_duplicate == 2


def test_files_read_in_another_time_zone_still_match_the_stored_rows(tmp_path: Path) -> None:
    """Transcripts written where the clock said 06:00 and read as UTC five hours early: every paired
    message is dated late by the same hours, a run no coincidence makes; nothing comes in twice."""
    began = _clock("00:00:00")
    turns = [("ok", "Deploying."), ("status?", "Done."), ("ok", "Bye.")]
    rows = [(role, text, _clock(f"06:0{n}:00") + offset) for n, (question, reply) in enumerate(turns)
            for offset, (role, text) in enumerate((("user", question), ("assistant", reply)))]
    lines = [{"role": role, "content": text, "timestamp": f"2026-01-01T01:0{n}:05"}
             for n, (question, reply) in enumerate(turns) for role, text in (("user", question), ("assistant", reply))]
    stored, stats = _rows_imported(tmp_path, began, rows, lines)
    assert stored == [text for question, reply in turns for text in (question, reply)]
    assert stats.messages_imported == 0


def test_one_exchange_dated_an_hour_early_is_still_the_stored_one(tmp_path: Path) -> None:
    """The repeated hour of a daylight-saving fall-back, or a machine that changed zones mid-session: one
    exchange of the copy is dated an hour before the stored rows. A question and its reply side by side,
    both late: the copy's clock, not a coincidence (that pairs a short reply alone)."""
    rows = [("user", "remind me at 9", _clock("02:20:00")), ("assistant", "Done, reminder set.", _clock("02:20:07"))]
    lines = [{"role": role, "content": text, "timestamp": "2026-01-01T01:20:07"} for role, text, _at in rows]
    stored, stats = _rows_imported(tmp_path, _clock("00:00:00"), rows, lines)
    assert stored == ["remind me at 9", "Done, reminder set."] and stats.messages_imported == 0


def test_a_tool_result_names_itself_and_time_never_parts_it_from_its_stored_row(tmp_path: Path) -> None:
    """A transcript that dates a turn where it began, and a tool that ran for minutes: the stored result is
    late against that dating, and it is the same result all the same (its call id says so)."""
    with SessionDB(tmp_path / "state.db") as db:
        db.create_session(SID, "telegram")
        db._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (_clock("09:00:00"), SID))
        message_id = db.append_message(SID, "tool", "412 passed", tool_call_id="call_1", tool_name="terminal")
        db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (_clock("10:04:00"), message_id))
    (tmp_path / f"{SID}.jsonl").write_text(json.dumps(
        {"role": "tool", "content": "412 passed", "tool_call_id": "call_1", "timestamp": "2026-01-01T10:00:00"}) + "\n")
    stats = import_paths(tmp_path / "state.db", [tmp_path / f"{SID}.jsonl"], tz=timezone.utc)
    with SessionDB(tmp_path / "state.db") as db:
        assert [m["content"] for m in db.get_messages(SID)] == ["412 passed"]
    assert stats.messages_imported == 0


def test_the_same_command_run_in_two_turns_is_two_calls_by_their_ids(tmp_path: Path) -> None:
    """An untimed snapshot of the first turn and a database holding only a later one that runs the same
    command: the calls' ids differ, so the snapshot's call is not the stored one (it was dropped, and
    the stored call's result followed the snapshot's)."""
    def call(call_id: str) -> list[dict[str, Any]]:
        return [{"id": call_id, "type": "function",
                 "function": {"name": "terminal", "arguments": '{"command": "git status"}'}}]

    rows = [("user", "and now?", _clock("11:00:00")), ("assistant", call("call_CCC"), _clock("11:00:02"))]
    with SessionDB(tmp_path / "state.db") as db:
        db.create_session(SID, "telegram")
        for role, content, at in rows:
            message_id = db.append_message(SID, role, None if role == "assistant" else content,
                                           tool_calls=content if role == "assistant" else None)
            db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (at, message_id))
        db.append_message(SID, "tool", "1 file modified", tool_call_id="call_CCC", tool_name="terminal")
    (tmp_path / f"session_{SID}.json").write_text(json.dumps({"session_id": SID, "messages": [
        {"role": "user", "content": "what changed?"},
        {"role": "assistant", "content": "", "tool_calls": call("call_AAA")},
        {"role": "tool", "content": "clean", "tool_call_id": "call_AAA"}]}))
    import_paths(tmp_path / "state.db", [tmp_path / f"session_{SID}.json"])
    with SessionDB(tmp_path / "state.db") as db:
        stored = [(m["role"], m["tool_call_id"] or (m["tool_calls"] or [{}])[0].get("id"))
                  for m in db.get_messages(SID)]
    assert stored == [("user", None), ("assistant", "call_AAA"), ("tool", "call_AAA"),
                      ("user", None), ("assistant", "call_CCC"), ("tool", "call_CCC")]


def test_a_freed_stored_message_pairs_again_with_the_copys_message_of_its_time(tmp_path: Path) -> None:
    """A kept backup of the first turns goes in first; then the full transcript aligns its first of two
    thumbs-up with the stored one (it follows the backup's messages): time undoes that pair, and the
    stored thumbs-up pairs again with the transcript's second, of its own time. Before, it came in twice."""
    turns = [("question one", "answer one"), ("question two", "answer two"), ("\U0001f44d", "answer three"),
             ("question four", "answer four"), ("\U0001f44d", "answer five")]
    began = _clock("10:00:00")
    lines = [{"role": role, "content": text, "timestamp": f"2026-01-01T10:{10 * n:02d}:00"}
             for n, (question, reply) in enumerate(turns) for role, text in (("user", question), ("assistant", reply))]
    with SessionDB(tmp_path / "state.db") as db:
        db.create_session(SID, "telegram")
        db._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (began, SID))
        for role, text in (("user", "\U0001f44d"), ("assistant", "answer five")):
            message_id = db.append_message(SID, role, text)
            db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (_clock("10:40:00"), message_id))
    home = tmp_path / "home"
    for folder, kept in (("sessions", lines), ("backup", lines[:4])):
        (home / folder).mkdir(parents=True)
        (home / folder / f"{SID}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in kept))
    stats = import_paths(tmp_path / "state.db", [home], tz=timezone.utc)
    with SessionDB(tmp_path / "state.db") as db:
        assert [m["content"] for m in db.get_messages(SID)] == [line["content"] for line in lines]
    assert stats.messages_imported == 8


def test_an_exchange_said_twice_stays_twice_when_the_database_holds_only_the_latest_turn(tmp_path: Path) -> None:
    """An untimed snapshot repeats an exchange; the database holds only the session's latest turn, so
    it cannot say how often the exchange was said (an inflated snapshot is judged only against timed
    copies that start where it starts)."""
    db_path = tmp_path / "state.db"
    with SessionDB(db_path) as db:
        db.create_session(SID, "cli")
        db.append_message(SID, "user", "continue")
        db.append_message(SID, "assistant", "Done.")
    said = ["migrate the tables", "Step 1 of 3 ready.", "continue", "Done.", "continue", "Done."]
    (tmp_path / f"session_{SID}.json").write_text(json.dumps({"session_id": SID, "messages": [
        {"role": "user" if n % 2 == 0 else "assistant", "content": text} for n, text in enumerate(said)]}))
    stats = import_paths(db_path, [tmp_path / f"session_{SID}.json"])
    with SessionDB(db_path) as db:
        assert [m["content"] for m in db.get_messages(SID)] == said
    assert stats.messages_imported == 4


def _snapshot_imported(tmp_path: Path, rows: list[tuple[str, str, float]], said: list[str],
                       session_start: str, last_updated: str) -> tuple[list[str], ImportStats]:
    """`rows` stored as Hermes appended them to the session that began at 10:00, then its untimed
    snapshot (`said`, question and reply in turn) saved at `last_updated` imported."""
    snapshot = tmp_path / f"session_{SID}.json"
    snapshot.write_text(json.dumps({
        "session_id": SID, "platform": "cli", "session_start": f"2026-01-01T{session_start}",
        "last_updated": f"2026-01-01T{last_updated}",
        "messages": [{"role": "user" if n % 2 == 0 else "assistant", "content": text} for n, text in enumerate(said)]}))
    db_path = tmp_path / "state.db"
    with SessionDB(db_path) as db:
        db.create_session(SID, "cli")
        db._conn.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (_clock("10:00:00"), SID))
        for role, content, at in rows:
            message_id = db.append_message(SID, role, content)
            db._conn.execute("UPDATE messages SET timestamp = ? WHERE id = ?", (at, message_id))
    stats = import_paths(db_path, [snapshot], tz=timezone.utc)
    with SessionDB(db_path) as db:
        return [m["content"] for m in db.get_messages(SID)], stats


def test_a_snapshot_saved_before_the_stored_turn_keeps_its_short_reply_that_turn_repeats(tmp_path: Path) -> None:
    """The snapshot was saved at 10:04 and the database holds only a turn stored at 10:09 (the rows before
    it lost): its "Sure." cannot be in the snapshot, so the snapshot's "Sure." is an earlier one."""
    rows = [("user", "tell me more", _clock("10:09:00")), ("assistant", "Sure.", _clock("10:09:02"))]
    stored, stats = _snapshot_imported(tmp_path, rows, ["hi there", "Hello!", "go on", "Sure."],
                                       "10:00:01", "10:04:00")
    assert stored == ["hi there", "Hello!", "go on", "Sure.", "tell me more", "Sure."]
    assert stats.messages_imported == 4


def test_a_snapshot_saved_after_the_stored_turn_holds_its_reply(tmp_path: Path) -> None:
    rows = [("user", "tell me more", _clock("10:09:00")), ("assistant", "Sure.", _clock("10:09:02"))]
    stored, stats = _snapshot_imported(tmp_path, rows, ["hi there", "Hello!", "go on", "Sure."],
                                       "10:00:01", "10:10:00")
    assert stored == ["hi there", "Hello!", "go on", "tell me more", "Sure."]
    assert stats.messages_imported == 3


def test_a_save_time_that_never_moved_on_from_the_start_is_no_save_time(tmp_path: Path) -> None:
    # One turn whose reply took 90 s; the snapshot's last_updated is its session_start: the stored reply
    # came after it, and was imported again as an earlier one.
    rows = [("user", "summarise the report", _clock("10:00:05")), ("assistant", "Sure.", _clock("10:01:35"))]
    stored, stats = _snapshot_imported(tmp_path, rows, ["summarise the report", "Sure."], "10:00:01", "10:00:01")
    assert stored == ["summarise the report", "Sure."] and stats.messages_imported == 0


@pytest.mark.parametrize(("session_start", "last_updated"), [
    ("10:00:01", "10:00:01"),  # a save time that never moved on: stored rows it shares lie after it in a row
    ("13:00:01", "13:04:00"),  # files read three hours off their zone: the session starts do not agree
])
def test_a_snapshot_whose_save_time_cannot_be_trusted_is_matched_by_content(
        tmp_path: Path, session_start: str, last_updated: str) -> None:
    rows = [(role, text, _clock("10:09:00") + n) for n, (role, text) in enumerate(
        [("user", "hi there"), ("assistant", "Hello!"), ("user", "go on now"), ("assistant", "Sure.")])]
    stored, stats = _snapshot_imported(tmp_path, rows, ["hi there", "Hello!", "go on", "Sure."],
                                       session_start, last_updated)
    assert stored == ["hi there", "Hello!", "go on", "go on now", "Sure."]
    assert stats.messages_imported == 1


def test_a_question_the_copy_asked_before_another_one_is_not_the_stored_later_one(tmp_path: Path) -> None:
    """The database holds only the latest turn, "and?"; a kept transcript of the earlier turns starts with
    an "and?" too, then asks another question, still before the stored "and?". /retry sends only the
    last question again, so the stored one is not the transcript's first: both are kept."""
    stored, stats = _turns_imported(tmp_path, [("and?", "Here is the rest.", "10:14:00")],
                                    [("and?", "First answer.", "10:00:00"), ("question two", "Second.", "10:09:00")])
    assert stored == ["and?", "First answer.", "question two", "Second.", "and?", "Here is the rest."]
    assert stats.messages_imported == 4


def test_the_last_question_sent_again_by_retry_is_the_stored_one(tmp_path: Path) -> None:
    """/retry appends the last question again, alone, at the time of the retry: the transcript's copy of
    it, dated minutes earlier, is the stored one."""
    stored, stats = _turns_imported(tmp_path, [("and?", "A better answer.", "10:20:00")],
                                    [("hi there", "Hello!", "10:00:00"), ("and?", "First answer.", "10:05:00")])
    assert stored.count("and?") == 1 and stats.messages_imported == 3
