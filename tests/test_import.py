"""The importer end to end through the library (`import_paths`): real legacy files into real state.db files."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from import_helpers import (
    HOME_SESSIONS,
    LEGACY,
    LEGACY_HOME,
    connect,
    content,
    fts_in_sync,
    import_json,
    interruptible,
    message_extras,
    messages,
    query,
    sessions,
    write_corpus,
    write_jsonl,
)

from hermes_state_tools import SessionDB
from hermes_state_tools.cli.base import INTERRUPTED
from hermes_state_tools.importers import LegacyMessage, LegacySession, read_paths
from hermes_state_tools.ingest import ImportStats, import_paths
from hermes_state_tools.store.sqldump import dump_sql

LOCAL_ZONE = "America/Sao_Paulo"  # UTC-3 all year: "local time" differs from UTC on any test machine
MIRROR = "Nightly backup finished: 12.4 GB, 0 errors."
DISK = "20260310_184211_a1c4e9b2"  # in the index, as a JSONL and as a snapshot
OPS = "20260519_140233_c0ffee12"  # discord, epoch timestamps, message ids
EMPTY = "20260401_090000_deadbeef"  # a 0-byte transcript with an index entry
SHAREGPT = "20260205_221130_7d2e1a"
MONGOLIA = "20260214_101502_3f9a2c7e"
CAFE = "20260302_081530_5be07d11"  # cp1252, CRLF, compressed (no times on the first two lines)


@pytest.fixture
def local_zone() -> Iterator[ZoneInfo]:
    """Run the test with this process's local time zone set to LOCAL_ZONE."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = LOCAL_ZONE
    time.tzset()
    try:
        yield ZoneInfo(LOCAL_ZONE)
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
def home(db_path: Path, local_zone: ZoneInfo) -> tuple[Path, ImportStats]:
    """fixtures/legacy-home imported once into a new database."""
    return db_path, import_paths(db_path, [LEGACY_HOME])


def at(text: str, zone: str = LOCAL_ZONE) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).timestamp()


def view(message: LegacyMessage | dict[str, Any]) -> tuple[Any, ...]:
    """The columns a reader's message and a stored row must agree on."""
    if isinstance(message, LegacyMessage):
        return (message.role, message.content, message.tool_call_id, message.tool_calls, message.tool_name,
                message.finish_reason, message.reasoning)
    calls = json.loads(message["tool_calls"]) if message["tool_calls"] else None
    return (message["role"], message["content"], message["tool_call_id"], calls, message["tool_name"],
            message["finish_reason"], message["reasoning"])


def identity(message: tuple[Any, ...]) -> tuple[Any, ...]:
    """What makes a copy the same message: a tool result by its call id (snapshots cut its text short)."""
    return ("tool", message[2]) if message[0] == "tool" else (*message[:2], message[3])


def reader_copies() -> dict[str, list[LegacySession]]:
    copies: dict[str, list[LegacySession]] = {}
    for record in read_paths([LEGACY_HOME]):
        if isinstance(record, LegacySession) and record.messages:
            copies.setdefault(record.session_id, []).append(record)
    return copies


def file_times(path: Path) -> list[Any]:
    """The recorded `timestamp` of each message line of a JSONL file (None where it has none)."""
    times = []
    for raw in path.read_bytes().splitlines():
        try:
            record = json.loads(raw)
        except UnicodeDecodeError:
            record = json.loads(raw.decode("cp1252"))
        except ValueError:
            continue  # blank and truncated lines hold no message
        if record.get("role") != "session_meta":
            times.append(record.get("timestamp"))
    return times


def epoch(value: Any) -> float | None:
    if value is None:
        return None
    return float(value) if isinstance(value, (int, float)) else at(value)


def problems(stats: ImportStats) -> list[tuple[str, int | None, str, bool]]:
    found = [(Path(p.file).name, p.line, p.kind, p.failure) for p in stats.problems]
    return sorted(found, key=lambda p: (p[0], p[1] or 0, p[2]))


def counts(stats: ImportStats) -> tuple[int, ...]:
    return (stats.sessions_created, stats.sessions_updated, stats.messages_imported,
            stats.messages_skipped_duplicate, stats.files_read)


def dump(db: Path) -> str:
    conn = connect(db)
    try:
        return dump_sql(conn)
    finally:
        conn.close()


# -- fixtures/legacy-home ----------------------------------------------------------------------


def test_legacy_home_report_counts(home):
    _, stats = home
    assert counts(stats) == (5, 0, 26, 4, 8)  # the snapshot's 4 messages are the JSONL's
    assert problems(stats) == [
        (f"{CAFE}.jsonl", 1, "decoded_cp1252", False),
        (f"{DISK}.jsonl", 8, "blank_line", False),
        (f"{DISK}.jsonl", 11, "truncated_line", True),
        (f"{EMPTY}.jsonl", None, "empty_file", False),
        ("sessions.json", None, "no_messages", False),  # its entry of the empty transcript: no session made
    ]
    assert stats.failed


def test_every_message_of_every_transcript_is_stored_once(home):
    db, _ = home
    copies = reader_copies()
    assert set(copies) == set(sessions(db))
    for session_id, found in copies.items():
        stored = [view(m) for m in messages(db, session_id)]
        fullest = max(found, key=lambda c: len(c.messages))
        assert stored == [view(m) for m in fullest.messages], session_id
        for copy in found:  # every other copy's messages are among the stored ones, once each
            for message in copy.messages:
                assert [identity(s) for s in stored].count(identity(view(message))) == 1, (copy.file, message)
    assert sum(len(messages(db, s)) for s in copies) == 26


def test_sessions_take_source_user_and_tokens_from_the_index(home):
    db, _ = home
    rows = sessions(db)
    assert {sid: (r["source"], r["user_id"]) for sid, r in rows.items()} == {
        SHAREGPT: ("cli", None),
        MONGOLIA: ("unknown", None),
        CAFE: ("unknown", None),
        DISK: ("telegram", "5551234567"),
        OPS: ("discord", "2290000000000000002"),
    }
    disk = rows[DISK]
    assert (disk["model"], disk["input_tokens"], disk["output_tokens"]) == ("anthropic/claude-opus-4.6", 18234, 2210)
    assert disk["system_prompt"].startswith("You are Hermes Agent")  # only the snapshot has it
    assert disk["started_at"] == at("2026-03-10T18:42:11.402913")  # the index's created_at
    assert rows[SHAREGPT]["model"] == "anthropic/claude-sonnet-4"
    extra = json.loads(query(db, "SELECT data FROM hst_session_extra WHERE session_id = ?", (OPS,))[0]["data"])
    assert (extra["display_name"], extra["origin"]["chat_topic"]) == ("#ops", "on-call chatter")


def test_jsonl_and_snapshot_copies_of_one_session_merge(home):
    db, _ = home
    stored = messages(db, DISK)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant", "assistant", "user", "user",
                                           "assistant"]
    tool = stored[2]["content"]
    assert len(tool) > 15000 and not tool.endswith('..."}')  # the JSONL's full output, not the snapshot's cut
    assert sessions(db)[DISK]["message_count"] == 8


def test_empty_transcript_with_an_index_entry_is_reported_not_made(home):
    db, stats = home
    assert EMPTY not in sessions(db) and messages(db, EMPTY) == []
    [said] = [p for p in stats.problems if p.kind == "no_messages"]
    assert said.file.endswith("sessions.json") and EMPTY in said.detail and not said.failure


def test_mirror_flag_message_id_and_raw_sharegpt_value_are_kept_as_extra_data(home):
    db, _ = home
    disk = {m["content"]: message_extras(db, DISK).get(m["id"]) for m in messages(db, DISK)
            if isinstance(m["content"], str)}
    assert disk[MIRROR] == {"mirror": True, "mirror_source": "cron"}
    assert disk["Can you check disk usage on the box?"] is None
    ops = message_extras(db, OPS)
    assert [ops.get(m["id"]) for m in messages(db, OPS) if m["role"] == "user"] == [
        {"message_id": "1305551234567890123"}, {"message_id": "1305551299999999999"}]
    raw = [message_extras(db, SHAREGPT).get(m["id"], {}).get("sharegpt_value") for m in messages(db, SHAREGPT)]
    assert "<tool_call>" in raw[1] and "<tool_response>" in raw[2]


def test_timestamps_keep_file_order_and_the_recorded_values(home):
    db, _ = home
    for session_id in sessions(db):
        stored = [m["timestamp"] for m in messages(db, session_id)]
        assert all(b > a for a, b in pairwise(stored)), session_id
    for session_id in (MONGOLIA, CAFE, DISK, OPS):
        recorded = [epoch(t) for t in file_times(HOME_SESSIONS / f"{session_id}.jsonl")]
        stored = [m["timestamp"] for m in messages(db, session_id)]
        assert len(stored) == len(recorded)
        for index, (want, got) in enumerate(zip(recorded, stored, strict=True)):
            if want is None:
                continue
            assert want <= got < want + 1e-3, (session_id, index)  # a shared turn time is nudged by 1 µs
            if index == 0 or stored[index - 1] < want:
                assert got == want, (session_id, index)
    assert messages(db, OPS)[0]["timestamp"] == 1779199360.5561  # an epoch float, as recorded
    assert messages(db, MONGOLIA)[0]["timestamp"] == at("2026-02-14T10:15:09.884120")  # naive ISO: local time


def test_tz_option_reads_naive_times_in_that_zone(tmp_path, local_zone):
    import_paths(tmp_path / "local.db", [LEGACY_HOME])
    import_paths(tmp_path / "tokyo.db", [LEGACY_HOME], tz=ZoneInfo("Asia/Tokyo"))
    local, tokyo = (messages(tmp_path / f"{name}.db", MONGOLIA)[0]["timestamp"] for name in ("local", "tokyo"))
    assert tokyo == at("2026-02-14T10:15:09.884120", "Asia/Tokyo")
    assert local - tokyo == 12 * 3600  # São Paulo is UTC-3, Tokyo UTC+9
    for name in ("local", "tokyo"):  # epoch values do not depend on a zone
        assert messages(tmp_path / f"{name}.db", OPS)[0]["timestamp"] == 1779199360.5561


def test_tool_names_are_recovered_from_the_assistant_call(home):
    db, _ = home
    line = json.loads((HOME_SESSIONS / f"{DISK}.jsonl").read_text("utf-8").splitlines()[3])
    assert line["role"] == "tool" and "name" not in line and "tool_name" not in line
    for session_id in (DISK, SHAREGPT, OPS):
        assert [m["tool_name"] for m in messages(db, session_id) if m["role"] == "tool"] == ["terminal"]


def test_created_sessions_end_at_their_last_message_with_true_counters(home):
    db, _ = home
    for session_id, row in sessions(db).items():
        stored = messages(db, session_id)
        calls = sum(len(json.loads(m["tool_calls"])) for m in stored if m["tool_calls"] and m["role"] != "tool")
        assert (row["message_count"], row["tool_call_count"]) == (len(stored), calls), session_id
        assert row["ended_at"] == (stored[-1]["timestamp"] if stored else row["started_at"]), session_id
        assert row["end_reason"] == "imported"
    assert sessions(db)[DISK]["tool_call_count"] == 1


def test_search_finds_the_imported_text(home):
    db, _ = home
    assert fts_in_sync(db)
    with SessionDB(db) as store:
        for words, session_id in (("Ulaanbaatar", MONGOLIA), ("Tati", CAFE), ("Nightly backup", DISK),
                                  ("staging deploy", OPS), ("kernel", SHAREGPT)):
            assert {r["session_id"] for r in store.search_messages(words)} == {session_id}, words
    matched = query(db, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'Mongolia'")
    assert len(matched) == 1


def test_second_run_imports_nothing_and_changes_nothing(home):
    db, first = home
    before = dump(db)
    second = import_paths(db, [LEGACY_HOME])
    assert counts(second) == (0, 0, 0, 30, 8)
    assert dump(db) == before
    assert problems(second) == problems(first) and second.failed  # the bad records are still not stored


def test_overlapping_paths_read_each_file_once(db_path, local_zone):
    stats = import_paths(db_path, [LEGACY_HOME, HOME_SESSIONS, HOME_SESSIONS / f"{DISK}.jsonl"])
    assert counts(stats) == (5, 0, 26, 4, 8)


def test_snapshots_and_save_files_import_once_with_stable_ids(db_path):
    folder = LEGACY / "snapshots"
    first = import_paths(db_path, [folder])
    assert counts(first)[:3] == (5, 0, 8)
    assert {"saved_20260301_101010", "saved_inner", "mismatch"} <= set(sessions(db_path))
    [mismatch] = [p for p in first.problems if p.kind == "session_id_mismatch"]
    assert Path(mismatch.file).name == "session_mismatch.json"
    extra = query(db_path, "SELECT data FROM hst_session_extra WHERE session_id = 'mismatch'")[0]["data"]
    assert json.loads(extra)["snapshot_session_id"] == "20260220_100000_aaaaaa"
    assert counts(import_paths(db_path, [folder]))[:3] == (0, 0, 0)


def test_extra_data_stays_with_its_message_after_hermes_deleted_the_newest_ones(db_path):
    with SessionDB(db_path) as store:  # AUTOINCREMENT now continues above MAX(id)
        store.create_session("deleted", "cli")
        for i in range(3):
            store.append_message("deleted", "user", f"gone {i}")
        store.delete_session("deleted")
    import_paths(db_path, [HOME_SESSIONS / f"{DISK}.jsonl"])
    stored = {m["id"]: m["content"] for m in messages(db_path, DISK)}
    extras = message_extras(db_path, DISK)
    assert set(extras) <= set(stored)
    assert {stored[i]: data for i, data in extras.items()} == {MIRROR: {"mirror": True, "mirror_source": "cron"}}


# -- merging with what the database already holds ---------------------------------------------

MERGED = "20260301_100000_abcdef12"
TURNS = [("user", "one"), ("assistant", "two"), ("user", "three"), ("assistant", "four"), ("user", "five"),
         ("assistant", "six")]


def write_copies(folder: Path) -> Path:
    """The full JSONL of MERGED, an index entry for it and an older snapshot (its first four messages)."""
    write_jsonl(folder / f"{MERGED}.jsonl", [
        {"role": "session_meta", "model": "model-from-file", "platform": "telegram",
         "timestamp": "2026-03-01T10:00:00"},
        *({"role": role, "content": text, "timestamp": f"2026-03-01T10:00:0{i}"}
          for i, (role, text) in enumerate(TURNS)),
    ])
    index = {"agent:main:telegram:dm:9": {"session_id": MERGED, "platform": "telegram", "created_at":
                                           "2026-03-01T10:00:00", "origin": {"user_id": "u-9"}}}
    (folder / "sessions.json").write_text(json.dumps(index))
    snapshot = {"session_id": MERGED, "model": "model-from-snapshot", "system_prompt": "from the snapshot",
                "messages": [{"role": role, "content": text} for role, text in TURNS[:4]]}
    (folder / f"session_{MERGED}.json").write_text(json.dumps(snapshot))
    return folder


@pytest.mark.parametrize("part", [slice(4, 6), slice(2, 4)], ids=["latest-part", "middle-part"])
@pytest.mark.parametrize("ended", [False, True], ids=["open", "ended"])
def test_session_hermes_already_wrote_gains_only_what_it_lacks(tmp_path, db_path, part, ended):
    with SessionDB(db_path) as store:
        store.create_session(MERGED, "cli", system_prompt="written by Hermes")
        for role, text in TURNS[part]:
            store.append_message(MERGED, role, text)
        if ended:
            store.end_session(MERGED, "user_exit")
    before = sessions(db_path)[MERGED]
    kept = {m["id"]: m["timestamp"] for m in messages(db_path, MERGED)}

    stats = import_paths(db_path, [write_copies(tmp_path / "files")])

    assert counts(stats) == (0, 1, 4, 2 + 4, 3) and not stats.failed
    stored = messages(db_path, MERGED)
    assert [(m["role"], m["content"]) for m in stored] == TURNS  # (timestamp, id) order is the file order
    assert {m["id"]: m["timestamp"] for m in stored if m["id"] in kept} == kept
    row = sessions(db_path)[MERGED]
    assert (row["model"], row["user_id"]) == ("model-from-file", "u-9")  # NULL fields filled
    assert (row["source"], row["system_prompt"], row["started_at"]) == (
        "cli", "written by Hermes", before["started_at"])  # values already there kept
    assert (row["ended_at"], row["end_reason"]) == (before["ended_at"], before["end_reason"])
    assert (row["ended_at"] is None) is not ended
    assert row["message_count"] == 6
    assert import_paths(db_path, [tmp_path / "files"]).messages_imported == 0


def test_either_copy_may_be_the_longer_one(tmp_path, db_path):
    write_jsonl(tmp_path / f"{MERGED}.jsonl", [
        {"role": role, "content": text, "timestamp": f"2026-03-01T10:00:0{i}"} for i, (role, text) in
        enumerate(TURNS[:4])])
    snapshot = {"last_updated": "2026-03-01T10:05:00", "messages": [{"role": r, "content": t} for r, t in TURNS]}
    (tmp_path / f"session_{MERGED}.json").write_text(json.dumps(snapshot))
    stats = import_paths(db_path, [tmp_path])
    assert counts(stats) == (1, 0, 6, 4, 2)
    stored = messages(db_path, MERGED)
    assert [(m["role"], m["content"]) for m in stored] == TURNS
    assert stored[3]["timestamp"] == datetime(2026, 3, 1, 10, 0, 3).timestamp()  # the JSONL's time
    assert stored[3]["timestamp"] < stored[4]["timestamp"] < stored[5]["timestamp"]


def test_a_message_really_repeated_is_kept_twice(tmp_path, db_path):
    said = [("user", "yes"), ("assistant", "Are you sure?"), ("user", "yes"), ("assistant", "Done.")]
    write_jsonl(tmp_path / "repeat.jsonl", [{"role": r, "content": t} for r, t in said])
    stats = import_paths(db_path, [tmp_path / "repeat.jsonl", LEGACY / "jsonl" / "real_repeat.jsonl"])
    assert counts(stats) == (2, 0, 7, 0, 2) and stats.problems == []
    assert [(m["role"], m["content"]) for m in messages(db_path, "repeat")] == said
    assert [m["content"] for m in messages(db_path, "real_repeat")] == ["yes", "yes", "Okay, doing it."]
    with SessionDB(db_path) as store:  # Hermes holds the first turn: the file adds the second "yes"
        store.create_session("live", "cli")
        for role, text in said[:2]:
            store.append_message("live", role, text)
    write_jsonl(tmp_path / "again" / "live.jsonl", [{"role": r, "content": t} for r, t in said])
    assert counts(import_paths(db_path, [tmp_path / "again"]))[1:4] == (1, 2, 2)
    assert [(m["role"], m["content"]) for m in messages(db_path, "live")] == said


def test_a_re_appended_history_block_is_imported_once_and_counted(db_path):
    path = LEGACY / "jsonl" / "duplicate_block.jsonl"
    stats = import_paths(db_path, [path])
    assert counts(stats) == (1, 0, 6, 10, 1)
    assert problems(stats) == [(path.name, 5, "duplicate_block", False), (path.name, 11, "duplicate_block", False)]
    assert [m["content"] for m in messages(db_path, "duplicate_block")] == [
        "hello", "Hi! How can I help?", "what's 2+2?", "4", "thanks", "Any time."]
    assert counts(import_paths(db_path, [path])) == (0, 0, 0, 16, 1)


# -- killed imports and a concurrent Hermes ----------------------------------------------------


def import_command(db: Path, folder: Path) -> list[str]:
    return [sys.executable, "-m", "hermes_state_tools", "--db", str(db), "import-jsonl", str(folder), "--no-progress",
            "--json"]


def assert_consistent(db: Path, written: dict[str, list[dict[str, Any]]]) -> int:
    """Whatever a kill left: a sound file, an FTS index in sync, and only whole sessions. Returns how many."""
    if not db.exists() or not db.stat().st_size:
        return 0
    conn = connect(db)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sessions'").fetchone():
            return 0
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = dict(conn.execute("SELECT session_id, COUNT(*) FROM messages GROUP BY session_id").fetchall())
        rows = conn.execute("SELECT id, message_count FROM sessions").fetchall()
    finally:
        conn.close()
    assert fts_in_sync(db)
    for session_id, message_count in rows:
        assert stored.get(session_id, 0) == message_count == len(written[session_id]) - 1, session_id
    return len(rows)


def live_group_members(group: int) -> list[int]:
    """Processes of a process group that are still running (zombies excluded), from /proc."""
    found: list[int] = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        try:
            state, _, pgrp = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, IndexError, ValueError):
            continue
        if entry.name.isdigit() and int(pgrp) == group and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def wait_until_group_gone(group: int, seconds: float = 10) -> None:
    """A killed import leaves no helper behind (its reader process would otherwise run on, or hang)."""
    deadline = time.monotonic() + seconds
    while (live := live_group_members(group)) and time.monotonic() < deadline:
        time.sleep(0.02)
    if live:
        os.killpg(group, signal.SIGKILL)  # leave nothing running behind a failed test
    assert not live, f"processes {live} outlived the killed import"


@dataclass(frozen=True)
class Corpus:
    folder: Path
    written: dict[str, list[dict[str, Any]]]
    clean: Path  # the database one uninterrupted run makes
    seconds: float  # how long that run took, process start to exit


def make_corpus(folder: Path, count: int, size: int) -> Corpus:
    written = write_corpus(folder / "corpus", count, size)
    started = time.monotonic()
    clean = subprocess.run(import_command(folder / "clean.db", folder / "corpus"), capture_output=True)
    assert clean.returncode == 0, clean.stderr
    return Corpus(folder / "corpus", written, folder / "clean.db", time.monotonic() - started)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """300 transcripts (36,000 messages: long enough for kills to land mid-import) and their clean import."""
    return make_corpus(tmp_path_factory.mktemp("corpus"), 300, 120)


def finish_and_compare(db: Path, corpus: Corpus, already: int) -> None:
    """Run the import to the end (in this process): the database must be the one a single clean run makes."""
    code, report = import_json(db, corpus.folder)
    assert code == 0, report
    assert report["sessions_created"] == len(corpus.written) - already
    assert content(db) == content(corpus.clean)  # message ids included


def kill_and_resume(db: Path, corpus: Corpus, kills: int, seed: int) -> None:
    rng, seen = random.Random(seed), []
    scratch = db.parent / "tmp"  # the import's TMPDIR: where its reader keeps staging files
    scratch.mkdir()
    SessionDB(db).close()  # an existing store: batches land in it one by one (a new file is built aside whole)
    for _ in range(kills):
        process = subprocess.Popen(import_command(db, corpus.folder), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True,  # its own process group
                                   env={**os.environ, "TMPDIR": str(scratch)})
        time.sleep(rng.uniform(0.05, 0.9 * corpus.seconds))  # anywhere in a run (its length measured here)
        process.kill()  # SIGKILL: no cleanup of any kind
        process.wait()
        seen.append(assert_consistent(db, corpus.written))
        wait_until_group_gone(process.pid)
        assert ours(scratch) == []  # the orphaned reader removed its staging files
    assert any(0 < n < len(corpus.written) for n in seen), seen  # some kills did land in the middle
    finish_and_compare(db, corpus, seen[-1])


def test_import_killed_at_random_points_then_rerun_equals_one_clean_run(tmp_path, corpus):
    kill_and_resume(tmp_path / "killed.db", corpus, kills=4, seed=11)


@pytest.mark.soak
def test_import_killed_many_times_then_rerun_equals_one_clean_run(tmp_path):
    kill_and_resume(tmp_path / "killed.db", make_corpus(tmp_path, 1000, 150), kills=25, seed=12)


DIE_IN_TRANSACTION = r"""
import os, sys
from hermes_state_tools.ingest import run

assert hasattr(run, "write_batch"), "the import no longer writes through run.write_batch: update this test"
original, written, die_at = run.write_batch, [], int(sys.argv[1])

def write_then_die(conn, *args, **kwargs):
    result = original(conn, *args, **kwargs)  # every row of the batch is in, COMMIT has not run yet
    written.append(len(result.written))
    if len(written) == die_at:
        os.kill(os.getpid(), 9)
    return result

run.write_batch = write_then_die
sys.argv = ["hermes-state", *sys.argv[2:]]
from hermes_state_tools.cli import main
main()
"""


@pytest.mark.parametrize("batch", [1, 3])
def test_import_killed_inside_a_write_transaction_keeps_only_whole_batches(tmp_path, corpus, batch):
    db = tmp_path / "killed.db"
    SessionDB(db).close()  # an existing store, written batch by batch (test_fresh_import.py: a new file)
    arguments = import_command(db, corpus.folder)[3:]
    with (tmp_path / "stderr").open("wb") as stderr:
        killed = subprocess.Popen([sys.executable, "-c", DIE_IN_TRANSACTION, str(batch), *arguments],
                                  stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
        killed.wait(timeout=120)
    assert killed.returncode == -9, (tmp_path / "stderr").read_text()
    wait_until_group_gone(killed.pid)
    kept = assert_consistent(db, corpus.written)
    assert (kept == 0) is (batch == 1) and kept < len(corpus.written)
    finish_and_compare(db, corpus, kept)


LIVE_WRITER = r"""
import json, sys, time, traceback
from pathlib import Path
from hermes_state_tools import SessionDB
from hermes_state_tools.tables import messages, sessions

db_path, shared, folder = sys.argv[1], sys.argv[2], Path(sys.argv[3])
pending = json.loads((folder / "mirror.json").read_text())  # [session id, first turn], last ones first
result = {"appends": [], "mirrored": [], "error": None}


def start_session(conn, session_id, turn):
    # Hermes starting a conversation the import also has on file: one transaction, like a real turn
    if sessions.exists(conn, session_id):
        return False
    sessions.create(conn, session_id, "telegram")
    for role, content in turn:
        messages.append(conn, session_id, role, content)
    return True


try:
    with SessionDB(db_path) as db:
        (folder / "ready").touch()
        i = 0
        while not (folder / "stop").exists():
            for session in ("hermes_own", shared):
                wall, started = time.time(), time.perf_counter()
                db.append_message(session, "user", f"live {session} {i}")
                result["appends"].append([session, i, wall, time.perf_counter() - started])
            if pending and i % 3 == 0:
                session_id, turn = pending.pop()
                if db._writer.run(lambda conn: start_session(conn, session_id, turn)):
                    result["mirrored"].append(session_id)
            i += 1
            time.sleep(0.003)
except BaseException:
    result["error"] = traceback.format_exc()
(folder / "result.json").write_text(json.dumps(result))
"""


def ours(folder: Path) -> list[Path]:
    """What the import left in its TMPDIR, without SQLite's own temporary files: SQLite creates an
    `etilqs_*` file and unlinks it at once, so a SIGKILL between the two can leave one behind."""
    return [p for p in folder.iterdir() if not p.name.startswith("etilqs_")]


def wait_for(path: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def import_beside_a_live_writer(tmp_path: Path, db_path: Path, count: int, size: int, *,
                                longest_wait: float | None = None) -> None:
    """Import a corpus while Hermes, in another process, appends to its own session and to one the import
    merges into, and starts sessions the import also has on file (from the last one back)."""
    written = write_corpus(tmp_path / "corpus", count, size, big=True)
    shared = sorted(written)[count // 2]
    mirror = [[sid, [[r["role"], r["content"]] for r in written[sid][1:3]]] for sid in sorted(written) if sid != shared]
    (tmp_path / "mirror.json").write_text(json.dumps(mirror))
    with SessionDB(db_path) as store:
        store.create_session("hermes_own", "cli")
        store.create_session(shared, "telegram")
    writer = subprocess.Popen([sys.executable, "-c", LIVE_WRITER, str(db_path), shared, str(tmp_path)])
    try:
        wait_for(tmp_path / "ready")
        started = time.time()
        imported = subprocess.run(import_command(db_path, tmp_path / "corpus"), capture_output=True, timeout=300)
        finished = time.time()
        time.sleep(0.05)
    finally:
        (tmp_path / "stop").touch()
        writer.wait(timeout=60)
    result = json.loads((tmp_path / "result.json").read_text())

    assert result["error"] is None and writer.returncode == 0
    assert imported.returncode == 0, imported.stderr
    report, mirrored = json.loads(imported.stdout), result["mirrored"]
    file_messages = sum(len(records) - 1 for records in written.values())
    assert 0 < len(mirrored) < count - 1  # Hermes started some sessions before the import reached them
    assert (report["sessions_created"], report["sessions_updated"]) == (count - 1 - len(mirrored), 1 + len(mirrored))
    assert (report["messages_imported"], report["messages_skipped_duplicate"]) == (
        file_messages - 2 * len(mirrored), 2 * len(mirrored))
    appends = result["appends"]
    assert sum(started <= wall <= finished for _, _, wall, _ in appends) >= 20  # they really overlapped
    if longest_wait is not None:  # a wall-clock bound: only in the soak runs (a busy machine stretches any wait)
        assert max(seconds for *_, seconds in appends) < longest_wait
    for session in ("hermes_own", shared):
        live = [f"live {session} {i}" for name, i, _, _ in appends if name == session]
        stored = [m["content"] for m in messages(db_path, session)]
        assert [c for c in stored if c.startswith("live ")] == live
        assert sessions(db_path)[session]["message_count"] == len(stored)
    for session_id, records in written.items():  # every message on file once, in file order
        stored = [m["content"] for m in messages(db_path, session_id) if not m["content"].startswith("live ")]
        assert stored == [r["content"] for r in records[1:]], session_id
    assert fts_in_sync(db_path)


def test_a_concurrent_hermes_writer_loses_nothing(tmp_path, db_path):
    import_beside_a_live_writer(tmp_path, db_path, 300, 60)


@pytest.mark.soak
def test_a_concurrent_hermes_writer_beside_a_large_import_never_waits_long(tmp_path, db_path):
    # The wait includes the writer's own commit fsync, which ext4 makes wait behind the import's
    # written pages: 0.8-1.2 s on this machine's disk (the stop-15 code alike); the lock time is far less.
    import_beside_a_live_writer(tmp_path, db_path, 1500, 120, longest_wait=2.0)


def test_ctrl_c_stops_the_import_cleanly(tmp_path, corpus):
    # SIGINT to the whole process group, as a terminal's Ctrl-C sends it: the importer says so in
    # one line (and in JSON), its reader leaves no traceback and no staging files, and a re-run
    # finishes the job.
    db, scratch = tmp_path / "state.db", tmp_path / "tmp"
    scratch.mkdir()
    SessionDB(db).close()  # an existing store keeps the batches committed (test_fresh_import.py: a new file)
    process = subprocess.Popen(import_command(db, corpus.folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, env={**os.environ, "TMPDIR": str(scratch)},
                               preexec_fn=interruptible)
    wal = db.with_name(db.name + "-wal")
    while not (wal.exists() and wal.stat().st_size > 2**18):  # its first batches are in: it is mid-import
        assert process.poll() is None, "the import ended before it could be interrupted"
        time.sleep(0.005)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=60)
    wait_until_group_gone(process.pid)
    assert process.returncode == 1, err
    assert json.loads(out) == {"ok": False, "error": INTERRUPTED}
    assert b"Traceback" not in err and err.strip().splitlines()[-1] == f"hermes-state: {INTERRUPTED}".encode()
    assert list(scratch.iterdir()) == []
    kept = assert_consistent(db, corpus.written)
    finish_and_compare(db, corpus, kept)


def test_an_import_into_an_existing_file_proves_it_sound_once(tmp_path, monkeypatch):
    # The import checks the file before reading any transcript; opening it to write then trusts that
    # proof instead of running quick_check a second time (about 0.1 s per 50 MB of store).
    from hermes_state_tools.store import opening

    calls = []
    real = opening.damage_found
    monkeypatch.setattr(opening, "damage_found", lambda conn, *full: calls.append(1) or real(conn, *full))
    db = tmp_path / "state.db"
    SessionDB(db).close()
    calls.clear()
    write_corpus(tmp_path / "sessions", 3, 4)
    stats = import_paths(db, [tmp_path / "sessions"])
    assert stats.sessions_created == 3 and not stats.failed
    assert len(calls) == 1
    # A library caller opening the store itself is still checked (it proved nothing before).
    with SessionDB(db):
        pass
    assert len(calls) == 2
