"""The fast path for plain transcripts (importers/jsonl.py:read_plain, ingest/planning/prepared.py:plain_plan, the
writer's runs of plain creates) changes nothing: for every file it takes, the plan equals the careful
reader's; a file the careful reader has anything to say about is never taken; whole imports through
the CLI give the same rows and report either way. More examples: pytest -m soak tests/test_plain.py."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import tempfile
from datetime import timezone, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from import_helpers import cli, content, fts_in_sync, query
from plain_corpus import BREAKERS, DrawPick, any_transcript, seeded_corpus, transcript_bytes

from hermes_state_tools import SessionDB
from hermes_state_tools.core.records import Problem
from hermes_state_tools.importers.jsonl import read_plain
from hermes_state_tools.ingest import import_paths, run
from hermes_state_tools.ingest.planning import units
from hermes_state_tools.ingest.planning.batches import Batch, StagedCreates
from hermes_state_tools.ingest.planning.prepared import Prepared, prepare
from hermes_state_tools.ingest.planning.units import ReadLog, Unit, UnitReader
from hermes_state_tools.ingest.stats import ImportTally
from hermes_state_tools.ingest.writing import writer
from hermes_state_tools.ingest.writing.staging import insert_staged_sessions, stage_batch
from hermes_state_tools.ingest.writing.writer import _insert_sessions as insert_sessions

SID = "20260301_100000_abcdef01"
TZS: list[tzinfo | None] = [None, ZoneInfo("Asia/Tokyo"), ZoneInfo("America/New_York"), timezone.utc]
SOURCES = [None, "telegram"]


def _route(path: Path, tz: tzinfo | None, source: str | None,
           stored: set[str] | None) -> tuple[list[Unit], list[Prepared | None], ReadLog]:
    log = ReadLog()
    found = list(UnitReader([path], tz, source, log, stored=stored).units())
    return found, [prepare(None, unit) for unit in found], log


def _same_plans(fast: list[Prepared | None], careful: list[Prepared | None]) -> None:
    assert len(fast) == len(careful)
    for one, other in zip(fast, careful, strict=True):
        if one is None or other is None:
            assert one is other
            continue
        for name in (f.name for f in dataclasses.fields(Prepared)):
            assert getattr(one, name) == getattr(other, name), name
        assert one.plain_create == other.plain_create
        assert one == other


def check_file(data: bytes, tz: tzinfo | None, source: str | None, name: str = f"{SID}.jsonl") -> bool:
    """Both routes over one file; returns whether the fast one took it."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        plain = read_plain(path, str(path), tz, source)
        fast_units, fast, fast_log = _route(path, tz, source, stored=set())
        careful_units, careful, careful_log = _route(path, tz, source, stored=None)
    assert all(u.plain is None for u in careful_units)
    assert [u.plain is not None for u in fast_units] == ([True] if plain is not None else [False] * len(fast_units))
    # (a) the plan is the same whichever route read the file (and so is everything the read logged)
    _same_plans(fast, careful)
    assert fast_log == careful_log
    # (b) a file the careful reader reports anything for is never taken by the fast path
    if careful_log.problems or any(p is not None and p.problems for p in careful):
        assert plain is None, [p.kind for p in careful_log.problems]
    return plain is not None


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(TZS), st.sampled_from(SOURCES))
def test_the_fast_path_plans_what_the_careful_reader_plans(data: st.DataObject, tz: tzinfo | None,
                                                           source: str | None) -> None:
    check_file(any_transcript(DrawPick(data)), tz, source)


@pytest.mark.soak
@settings(max_examples=examples(3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(TZS), st.sampled_from(SOURCES))
def test_the_fast_path_plans_what_the_careful_reader_plans_soak(data: st.DataObject, tz: tzinfo | None,
                                                                source: str | None) -> None:
    check_file(any_transcript(DrawPick(data)), tz, source)


def test_the_generated_files_exercise_both_routes() -> None:
    # Without this the differential test could pass by never taking the fast path.
    taken = [check_file(data, None, None) for data in seeded_corpus(7, 120).values()]
    assert 30 < sum(taken) < 110


class _Seeded:
    """A Pick that replays fixed answers (the first of every choice, a fixed number otherwise)."""

    def choice(self, seq: list[Any]) -> Any:
        return seq[0]

    def randint(self, a: int, b: int) -> int:
        return min(b, a + 2)

    def random(self) -> float:
        return 0.5


# What the fast path leaves to the careful reader (the careful reader repairs or reports it, or reads
# it as another format); a CRLF line end and a timestamp spelled any way parse alike in both.
_CAREFUL = [b for b in BREAKERS if b != "crlf"]


@pytest.mark.parametrize("breaker", _CAREFUL)
def test_what_the_fast_path_leaves_to_the_careful_reader(breaker: str) -> None:
    data = transcript_bytes(_Seeded(), breaker)
    assert not check_file(data, None, None), breaker


def test_a_plain_file_is_taken_with_crlf_line_ends_too() -> None:
    data = transcript_bytes(_Seeded())
    assert check_file(data, None, None)
    assert check_file(data.replace(b"\n", b"\r\n"), None, None)


def _lines(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


@pytest.mark.parametrize("records, taken", [
    # times strictly increasing, however spelled: taken
    ([{"role": "user", "content": "a", "timestamp": "2026-03-01T10:00:00"},
      {"role": "assistant", "content": "b", "timestamp": 1772359300},
      {"role": "user", "content": "c", "timestamp": "2026-03-01T12:00:00+02:00"}], False),
    ([{"role": "user", "content": "a", "timestamp": "2026-03-01T10:00:00+00:00"},
      {"role": "assistant", "content": "b", "timestamp": "2026-03-01T10:00:01Z"}], True),
    # equal, backwards, missing: the careful path places them
    ([{"role": "user", "content": "a", "timestamp": 5.0}, {"role": "assistant", "content": "b", "timestamp": 5.0}],
     False),
    ([{"role": "user", "content": "a", "timestamp": 6.0}, {"role": "assistant", "content": "b", "timestamp": 5.0}],
     False),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "timestamp": 5.0}], False),
    # session_meta alone: nothing to plan; a meta that contradicts an earlier one is kept whole either way
    ([{"role": "session_meta", "model": "m", "timestamp": 1.0}], False),
    ([{"role": "session_meta", "model": "m"}, {"role": "user", "content": "a", "timestamp": 5.0},
      {"role": "session_meta", "model": "n", "platform": "local"}], True),
    # a session_meta first line that also says it is an export record: the careful reader reads it as one
    ([{"role": "session_meta", "format": "hermes-state-export/1"}, {"role": "user", "content": "a", "timestamp": 5.0}],
     False),
])
def test_edge_files(records: list[dict[str, Any]], taken: bool) -> None:
    # The first case: a naive time in one zone and an offset time can land out of order (New York).
    assert check_file(_lines(*records), ZoneInfo("America/New_York"), None) is taken


# An integer past 64 bits, which orjson reads as a float without a word (the careful reader keeps
# every digit), in each place a plain line can hold a number.
_WIDE = 2**64 + 1


@pytest.mark.parametrize("where", ["reasoning_details", "codex_reasoning_items", "tool_calls", "content", "timestamp",
                                   "meta", "first_line"])
def test_an_integer_orjson_would_widen_sends_the_file_to_the_careful_reader(where: str) -> None:
    line: dict[str, Any] = {"role": "assistant", "content": "a", "timestamp": "2026-03-01T10:00:01+00:00"}
    meta: dict[str, Any] = {"role": "session_meta", "platform": "cli"}
    if where == "tool_calls":
        line["tool_calls"] = [{"id": "c1", "type": "function", "function": {"name": "x", "limits": [1, _WIDE]}}]
    elif where == "content":
        line["content"] = [{"type": "text", "text": "t", "n": _WIDE}]
    elif where == "timestamp":
        line["timestamp"] = _WIDE
    elif where == "meta":
        meta["budget"] = _WIDE
    elif where != "first_line":
        line[where] = {"n": [_WIDE]}
    first = {"role": "user", "content": "q", "timestamp": "2026-03-01T10:00:00+00:00"}
    if where == "first_line":
        first["reasoning_details"] = _WIDE
    data = _lines(first, meta, line)
    assert not check_file(data, None, None)
    assert check_file(data.replace(str(_WIDE).encode(), b"1772359300"), None, None)  # taken without it


def test_a_file_name_that_gives_no_id_is_left_to_the_careful_reader() -> None:
    data = _lines({"role": "user", "content": "a", "timestamp": 5.0})
    assert not check_file(data, None, None, name=".jsonl")


def test_only_a_session_new_to_the_store_and_to_the_index_with_one_file_takes_the_fast_path(tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    path.write_bytes(_lines({"role": "user", "content": "a", "timestamp": 5.0}))
    index = tmp_path / "other" / "sessions.json"
    index.parent.mkdir()
    index.write_text(json.dumps({"agent:main:telegram:dm:1": {"session_id": SID, "platform": "telegram"}}))
    snapshot = tmp_path / "other" / f"session_{SID}.json"
    snapshot.write_text(json.dumps({"session_id": SID, "messages": [{"role": "user", "content": "a"}]}))

    def plain(files: list[Path], stored: set[str] | None) -> list[bool]:
        return [unit.plain is not None for unit in UnitReader(files, None, None, ReadLog(), stored=stored).units()]

    assert plain([path], set()) == [True]
    assert plain([path], {"someone-else"}) == [True]
    assert plain([path], {SID}) == [False]  # stored: planned against what the store holds
    assert plain([path], None) == [False]
    assert plain([index, path], set()) == [False]  # the index describes it: merged with the entry
    assert plain([path, snapshot], set()) == [False]  # two copies: merged


# --- whole imports through the CLI: the fast path (reader process, staged runs; or rows in memory)
# --- against the careful route (read_plain switched off) -------------------------------------------

EXPORTED = "20260301_100000_0000export"  # a plain transcript's session, also in an export file: two copies


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    for name, data in seeded_corpus(11, 84).items():
        (folder / name).write_bytes(data)
    rows = [{"role": "user", "content": "first needle zebra", "timestamp": 1772359201.0},
            {"role": "assistant", "content": "second 你好", "timestamp": 1772359202.0}]
    (folder / f"{EXPORTED}.jsonl").write_bytes(_lines(*rows))
    export = {"id": EXPORTED, "source": "cli", "started_at": 1772359200.0, "model": "gpt-5",
              "messages": [*rows, {"role": "user", "content": "third, only exported", "timestamp": 1772359203.0}]}
    (folder / "hermes-export.jsonl").write_bytes(_lines(export))
    return folder


def _careful(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file read the careful way and every session written one by one, in this process (a reader
    process would not see the switches)."""
    monkeypatch.setattr(units, "read_plain", lambda *args: None)
    monkeypatch.setattr(Prepared, "plain_create", property(lambda self: False))
    monkeypatch.setattr(run, "PARALLEL_FROM_FILES", 10**9)


def _count_runs(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many sessions rows the writer's runs of plain creates inserted, staged and from memory."""
    counts = {"staged": 0, "memory": 0}

    def staged(conn: sqlite3.Connection, rowids: list[int], with_extra: bool) -> None:
        counts["staged"] += len(rowids)
        insert_staged_sessions(conn, rowids, with_extra)

    def memory(conn: sqlite3.Connection, items: list[Prepared]) -> None:
        counts["memory"] += len(items)
        insert_sessions(conn, items)

    monkeypatch.setattr(writer, "insert_staged_sessions", staged)
    monkeypatch.setattr(writer, "_insert_sessions", memory)
    return counts


def _import(db: Path, *paths: Path) -> dict[str, Any]:
    result = cli("--db", db, "import-jsonl", *paths, "--json", "--no-progress")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    report.pop("database_created")  # which run made its file: tested in test_import_cli, not a route's result
    return report


def _sound(db: Path) -> dict[str, list[Any]]:
    """The file's rows, once SQLite and FTS5 found it sound and the index finds the imported text."""
    assert query(db, "PRAGMA integrity_check") == [{"integrity_check": "ok"}]
    assert fts_in_sync(db)
    indexed = query(db, "SELECT count(*) AS n FROM messages_fts WHERE messages_fts MATCH 'zebra'")[0]["n"]
    # Counted in Python: SQLite's LIKE stops at the NUL that opens a list of parts stored as text.
    texts = [row["content"] or "" for row in query(db, "SELECT content FROM messages")]
    assert indexed == sum("zebra" in text for text in texts) > 0
    return content(db)


def test_an_import_through_the_cli_is_the_same_by_either_route(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _corpus(tmp_path / "sessions")
    assert len(list(folder.iterdir())) >= run.PARALLEL_FROM_FILES + 16
    runs = _count_runs(monkeypatch)
    fast_new = _import(tmp_path / "new.db", folder)  # built aside, reader process (staging while the writer lags)
    in_runs = sum(runs.values())
    assert fast_new["sessions_created"] - 5 <= in_runs < fast_new["sessions_created"]  # the exported one is not
    SessionDB(tmp_path / "empty.db").close()
    fast_empty = _import(tmp_path / "empty.db", folder)
    assert sum(runs.values()) == 2 * in_runs
    with monkeypatch.context() as patch:
        patch.setattr(run, "PARALLEL_FROM_FILES", 10**9)  # read in this process: rows in memory, in runs too
        fast_memory = _import(tmp_path / "memory.db", folder)
    assert sum(runs.values()) == 3 * in_runs
    with monkeypatch.context() as patch:
        _careful(patch)
        careful = _import(tmp_path / "careful.db", folder)
    assert careful["sessions_created"] > 60 and careful["problems"]
    assert fast_new == fast_empty == fast_memory == careful
    expected = _sound(tmp_path / "careful.db")
    for name in ("new.db", "empty.db", "memory.db"):
        assert _sound(tmp_path / name) == expected, name  # message ids included
    both = query(tmp_path / "new.db", "SELECT content FROM messages WHERE session_id = ? ORDER BY id", (EXPORTED,))
    assert [row["content"] for row in both] == ["first needle zebra", "second 你好", "third, only exported"]


def test_sessions_already_stored_take_the_careful_route_and_the_rest_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _corpus(tmp_path / "sessions")
    first = sorted(folder.iterdir())[::4]

    def twice(db: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        return _import(db, *first), _import(db, folder)

    fast = twice(tmp_path / "fast.db")
    with monkeypatch.context() as patch:
        _careful(patch)
        careful = twice(tmp_path / "careful.db")
    assert fast == careful
    assert careful[1]["sessions_updated"] > 0 or careful[1]["messages_skipped_duplicate"] > 0
    assert _sound(tmp_path / "fast.db") == _sound(tmp_path / "careful.db")


# --- the writer's runs of plain creates ------------------------------------------------------------

META = {"role": "session_meta", "model": "gpt-5", "platform": "telegram", "tools": [{"name": "terminal"}]}


def _plain_files(folder: Path, count: int = 3) -> list[Path]:
    folder.mkdir()
    paths = []
    for n in range(count):
        path = folder / f"20260301_10000{n}_plain{n:03d}.jsonl"
        path.write_bytes(_lines(META, {"role": "user", "content": f"question {n} zebra", "timestamp": 1772359200.0 + n},
                                {"role": "assistant", "content": f"answer {n}", "timestamp": 1772359201.5 + n}))
        paths.append(path)
    return paths


def _plans(paths: list[Path]) -> tuple[Prepared, ...]:
    found = list(UnitReader(paths, None, None, ReadLog(), stored=set()).units())
    assert all(unit.plain is not None for unit in found)
    plans = tuple(p for unit in found if (p := prepare(None, unit)) is not None)
    assert all(p.plain_create for p in plans)
    return plans


def _batch(tmp_path: Path, items: tuple[Prepared, ...], staged: bool | str) -> Batch:
    """The batch as the reader sends it: rows in memory (False), staged with their plans (True), or
    staged whole, as a block of creates with no plan ("block")."""
    if not staged:
        return Batch(items)
    staged_items = stage_batch(tmp_path / "staging.db", items)
    assert staged_items is not None and all(p.staged_session is not None for p in staged_items)
    block = StagedCreates.of(staged_items)
    if staged == "block":
        assert block is not None
        return Batch((), tmp_path / "staging.db", block)
    return Batch(staged_items, tmp_path / "staging.db")


def _write(db: SessionDB, batch: Batch) -> dict[str, Any]:
    """Write one batch as an import does (stale sessions planned again and written after)."""
    stats = ImportTally()
    run._write_one(db, batch, stats, run._replanner(None, None), [])
    return stats.report().as_dict()


def _messages_by_session(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    found: dict[str, list[tuple[Any, ...]]] = {}
    for row in query(db, "SELECT * FROM messages ORDER BY timestamp, id"):
        found.setdefault(row.pop("session_id"), []).append(tuple(v for k, v in row.items() if k != "id"))
    return found


@pytest.mark.parametrize("staged", ["block", True, False])
def test_a_plain_create_another_process_created_meanwhile_is_planned_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, staged: bool | str) -> None:
    paths = _plain_files(tmp_path / "sessions")
    taken = paths[1].stem
    batch = _batch(tmp_path, _plans(paths), staged)  # planned while the store had none of them

    def elsewhere(path: Path) -> None:
        SessionDB(path).close()
        other = sqlite3.connect(path)  # another connection, between planning and writing
        with other:
            other.execute("INSERT INTO sessions (id, source, started_at, message_count) VALUES (?, 'cli', ?, 1)",
                          (taken, 1772359100.0))
            other.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)",
                          (taken, "said elsewhere", 1772359100.5))
        other.close()

    with SessionDB(tmp_path / "state.db") as db:
        elsewhere(tmp_path / "state.db")
        report = _write(db, batch)
    assert (report["sessions_created"], report["sessions_updated"], report["messages_imported"]) == (2, 1, 6)
    assert report["problems"] == [] and report["ok"]
    # What the careful route gives when the session was there before the import began.
    elsewhere(tmp_path / "careful.db")
    with monkeypatch.context() as patch:
        _careful(patch)
        careful = _import(tmp_path / "careful.db", *paths)
    assert {k: careful[k] for k in ("sessions_created", "sessions_updated", "messages_imported", "problems")} == \
        {k: report[k] for k in ("sessions_created", "sessions_updated", "messages_imported", "problems")}
    written, expected = _sound(tmp_path / "state.db"), _sound(tmp_path / "careful.db")
    assert written["sessions"] == expected["sessions"]
    assert written["hst_session_extra"] == expected["hst_session_extra"]
    # Message ids differ, legitimately: the re-planned session's rows come after the batch's others.
    assert _messages_by_session(tmp_path / "state.db") == _messages_by_session(tmp_path / "careful.db")
    # (The planner places a file's messages that match nothing stored before the stored rows, squeezed
    # under their time; the code before the fast path did the same.)
    assert [m[1] for m in _messages_by_session(tmp_path / "state.db")[taken]] == \
        ["question 1 zebra", "answer 1", "said elsewhere"]


def _refused(item: Prepared) -> Prepared:
    """A plan whose sessions row SQLite cannot take. No reader yields one for a plain create (every reader
    checks integers against 64 bits, and started_at and source are always set): this is the guard."""
    return dataclasses.replace(item, row={**item.row, "input_tokens": 2**64})


def _one_not_stored(db_path: Path, report: dict[str, Any], bad: str, good: list[str]) -> None:
    assert (report["sessions_created"], report["messages_imported"], report["failure_counts"]) == \
        (len(good), 2 * len(good), {"not_stored": 1})
    assert [p["file"] for p in report["problems"]] == [f"session {bad}"]
    assert sorted(s["id"] for s in query(db_path, "SELECT id FROM sessions")) == good
    assert sorted(_messages_by_session(db_path)) == good
    assert query(db_path, "SELECT count(*) AS n FROM hst_session_extra")[0]["n"] == len(good)
    _sound(db_path)


@pytest.mark.parametrize("staged", [True, False])
def test_a_value_sqlite_refuses_fails_that_session_alone(tmp_path: Path, staged: bool) -> None:
    items = list(_plans(_plain_files(tmp_path / "sessions")))
    items[1] = _refused(items[1])
    if staged:
        # The staging file refuses it too: the batch travels in memory instead of crashing the reader.
        assert stage_batch(tmp_path / "staging.db", tuple(items)) is None
        assert not (tmp_path / "staging.db").exists()
    with SessionDB(tmp_path / "state.db") as db:
        report = _write(db, Batch(tuple(items)))
    _one_not_stored(tmp_path / "state.db", report, items[1].session_id, [items[0].session_id, items[2].session_id])


@pytest.mark.parametrize("where", ["staged_session_row", "session_row_in_memory"])
def test_a_run_of_plain_creates_sqlite_refuses_falls_back_to_one_by_one(tmp_path: Path, where: str) -> None:
    items = _plans(_plain_files(tmp_path / "sessions", 4))
    bad = items[2].session_id
    if where == "staged_session_row":
        # started_at NULL: the staging table takes it, the store's NOT NULL refuses the run's INSERT ... SELECT
        items = tuple(dataclasses.replace(p, row={**p.row, "started_at": None}) if p.session_id == bad else p
                      for p in items)
        batch = _batch(tmp_path, items, staged=True)
    else:
        # staged rows whose sessions rows travel in memory (one executemany for the run)
        batch = _batch(tmp_path, items, staged=True)
        batch = Batch(tuple(dataclasses.replace(_refused(p) if p.session_id == bad else p, staged_session=None)
                            for p in batch.items), batch.staging)
    with SessionDB(tmp_path / "state.db") as db:
        report = _write(db, batch)
    _one_not_stored(tmp_path / "state.db", report, bad, sorted(p.session_id for p in items if p.session_id != bad))
    # The good sessions' rows are the ones their files hold, in order (the failed one's staged rows skipped).
    by_session = _messages_by_session(tmp_path / "state.db")
    assert [m[1] for m in by_session[items[3].session_id]] == ["question 3 zebra", "answer 3"]


@pytest.mark.parametrize("staged", [True, False])
def test_two_copies_of_one_new_session_in_one_batch(tmp_path: Path, staged: bool) -> None:
    paths = _plain_files(tmp_path / "sessions", 2)
    first, second = _plans(paths)
    again = prepare(None, next(iter(UnitReader([paths[0]], None, None, ReadLog(), stored=set()).units())))
    assert again == first
    batch = _batch(tmp_path, (first, second, again), staged)
    if staged:  # a block holds each session once: its plans travel instead
        assert StagedCreates.of(batch.items) is None
    with SessionDB(tmp_path / "state.db") as db:
        report = _write(db, batch)
    assert (report["sessions_created"], report["sessions_updated"], report["messages_imported"],
            report["messages_skipped_duplicate"], report["problems"]) == (2, 0, 4, 2, [])
    assert [m[1] for m in _messages_by_session(tmp_path / "state.db")[first.session_id]] == \
        ["question 0 zebra", "answer 0"]
    _sound(tmp_path / "state.db")


def test_a_block_sqlite_refuses_is_planned_again_and_each_session_written_alone(tmp_path: Path) -> None:
    paths = _plain_files(tmp_path / "sessions", 4)
    bad = paths[2].stem
    batch = _batch(tmp_path, _plans(paths), "block")
    with SessionDB(tmp_path / "state.db") as db:
        assert db._conn is not None
        db._conn.execute(f"CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.sessions WHEN NEW.id = '{bad}' "
                         "BEGIN SELECT RAISE(ABORT, 'refused'); END")
        report = _write(db, batch)
    # The block's one statement failed: every session was read again and went the per-session way,
    # where the refused one fails alone.
    _one_not_stored(tmp_path / "state.db", report, bad, sorted(p.stem for p in paths if p.stem != bad))
    assert not (tmp_path / "staging.db").exists()


def test_only_a_batch_of_staged_plain_creates_becomes_a_block(tmp_path: Path) -> None:
    items = _plans(_plain_files(tmp_path / "sessions", 3))
    staged = stage_batch(tmp_path / "staging.db", items)
    assert staged is not None
    block = StagedCreates.of(staged)
    assert block is not None and [shell[0] for shell in block.shells] == [p.session_id for p in items]
    assert block.counts == (2, 2, 2) and block.unit(1) == items[1].unit
    assert Batch((), tmp_path / "staging.db", block).messages == Batch(staged).messages == 6
    assert StagedCreates.of(items) is None  # rows in memory
    noted = dataclasses.replace(staged[1], problems=(Problem("f", None, "retimed", "x"),))
    assert StagedCreates.of((staged[0], noted, staged[2])) is None  # a problem to report travels with its plan
    assert StagedCreates.of(staged[1:]) is None  # rowids that do not start at 1


def test_a_run_of_sessions_rows_in_memory_keeps_each_value_in_its_column(tmp_path: Path) -> None:
    # Two plans whose rows name the same columns in another order: one statement for the run must still
    # put each value under its own name.
    first, second = _plans(_plain_files(tmp_path / "sessions", 2))
    first = dataclasses.replace(first, row={**first.row, "model": "m-one", "system_prompt": None})
    # The same names with model and system_prompt swapped in order (both may hold any text or NULL, so a
    # misplaced value would be stored without a word).
    swapped = {("system_prompt" if k == "model" else "model" if k == "system_prompt" else k): None
               for k in first.row}
    second = dataclasses.replace(second, row={k: {**second.row, "model": "m-two", "system_prompt": None}[k]
                                               for k in swapped})
    assert list(first.row) != list(second.row) and set(first.row) == set(second.row)
    with SessionDB(tmp_path / "state.db") as db:
        report = _write(db, Batch((first, second)))
    assert report["sessions_created"] == 2 and report["problems"] == []
    stored = {s["id"]: s for s in query(tmp_path / "state.db", "SELECT * FROM sessions")}
    for plan, model in ((first, "m-one"), (second, "m-two")):
        row = stored[plan.session_id]
        assert (row["model"], row["system_prompt"], row["source"], row["started_at"], row["message_count"]) == \
            (model, None, plan.row["source"], plan.row["started_at"], plan.message_count)
    _sound(tmp_path / "state.db")


def test_a_file_the_fast_reader_trips_on_is_read_and_reported_by_the_careful_one(tmp_path: Path) -> None:
    # A line nested deeper than Python's recursion limit: orjson parses it, checking it fails. The
    # file must come back as the careful reader's report entry, never stop the import of the others
    # (with this many files the reader process reads them).
    folder = tmp_path / "sessions"
    _plain_files(folder, 70)
    deep = "[" * 1000 + "]" * 1000
    (folder / "20260301_100000_deadbeef.jsonl").write_text(
        '{"role": "user", "content": "x", "timestamp": 1772000000, "reasoning_details": ' + deep + "}\n")
    db = tmp_path / "state.db"
    stats = import_paths(db, [folder])
    assert stats.sessions_created == 70
    assert [(p.file.endswith("deadbeef.jsonl"), p.kind, p.failure) for p in stats.problems] == \
        [(True, "reader_error", True)]
    _sound(db)
