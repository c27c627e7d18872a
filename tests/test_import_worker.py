"""The import's reader runs in a child process; it must work from any caller and never outlive it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from import_helpers import content, fts_in_sync, write_jsonl

from hermes_state_tools import SessionDB
from hermes_state_tools.errors import ImportReaderError, NotAHermesDatabaseError
from hermes_state_tools.importers import discover
from hermes_state_tools.ingest import import_paths, run
from hermes_state_tools.ingest.planning.batches import BATCH_MESSAGES, FIRST_BATCH_SHARE, prepared_batches
from hermes_state_tools.ingest.planning.prepared import StagedRows
from hermes_state_tools.ingest.planning.units import ReadLog
from hermes_state_tools.ingest.reader.channel import READ_AHEAD
from hermes_state_tools.ingest.reader.remote import remote_batches
from hermes_state_tools.ingest.run import PARALLEL_FROM_FILES
from hermes_state_tools.ingest.writing.staging import attached, stage_batch


def _corpus(folder: Path, sessions: int) -> None:
    folder.mkdir()
    for n in range(sessions):
        lines = [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"answer {n}"}]
        (folder / f"20260101_{n:06d}_{n:08x}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_a_script_without_a_main_guard_can_import(tmp_path: Path) -> None:
    # multiprocessing's spawn would re-run this unguarded script in the child; the reader child must not.
    _corpus(tmp_path / "sessions", PARALLEL_FROM_FILES + 6)
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""
        from pathlib import Path
        from hermes_state_tools.ingest import import_paths
        stats = import_paths(Path({str(tmp_path / "state.db")!r}), [Path({str(tmp_path / "sessions")!r})])
        print(stats.sessions_created, stats.messages_imported, stats.files_read)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(PARALLEL_FROM_FILES + 6), str(2 * (PARALLEL_FROM_FILES + 6)),
                                   str(PARALLEL_FROM_FILES + 6)]


# -- the reader process and its staging files ---------------------------------------------------


def _varied_corpus(folder: Path, sessions: int) -> None:
    """Transcripts with what the rows' two shapes and the staging path must carry: tool rows without
    names, token counts and reasoning (full rows), multimodal content, non-ASCII text, a lone surrogate."""
    folder.mkdir()
    for n in range(sessions):
        lines = [
            {"role": "session_meta", "platform": "telegram", "model": "m", "timestamp": "2026-01-01T10:00:00"},
            {"role": "user", "content": f"question {n} café 你好 🙂", "timestamp": "2026-01-01T10:00:01"},
            {"role": "assistant", "content": "", "timestamp": "2026-01-01T10:00:02",
             "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]},
            {"role": "tool", "content": "x" * (n * 50), "tool_call_id": f"c{n}", "timestamp": "2026-01-01T10:00:03"},
            {"role": "assistant", "content": [{"type": "text", "text": f"part {n}"}], "token_count": n,
             "finish_reason": "stop", "reasoning": "because", "timestamp": "2026-01-01T10:00:04"},
        ]
        text = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
        if n == 3:
            text += '{"role": "user", "content": "broken \\ud800 half", "timestamp": "2026-01-01T10:00:05"}\n'
        (folder / f"20260101_{n:06d}_{n:08x}.jsonl").write_text(text, encoding="utf-8")
    # Another copy of sessions 60 and 61 with one more message each, in a file of its own: the same
    # session twice in one batch, so the writer plans each second copy again against the first.
    write_jsonl(folder / "exported.jsonl", [
        {"format": "hermes-state-export/1", "session": {"id": f"20260101_{n:06d}_{n:08x}", "source": "telegram"},
         "messages": [{"role": "user", "content": f"question {n} café 你好 🙂", "timestamp": 1767261601.0},
                      {"role": "user", "content": f"a later word {n}", "timestamp": 1767261700.0}]}
        for n in (60, 61)  # in the reader's second batch, with their first copies
    ])


def _report(stats) -> list[tuple]:
    return sorted((p.file, p.line, p.kind, p.detail) for p in stats.problems)


def test_the_reader_process_stores_exactly_what_an_in_process_import_stores(tmp_path, monkeypatch):
    _varied_corpus(tmp_path / "sessions", PARALLEL_FROM_FILES + 6)
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the reader's staging folder goes here
    # Session 60 is already stored with an earlier message: its two copies in one batch then both
    # merge into it (the second sees the first's rows).
    write_jsonl(tmp_path / "before" / "x.jsonl", [{"format": "hermes-state-export/1", "messages": [
        {"role": "user", "content": "earlier", "timestamp": 1767261000.0}],
        "session": {"id": "20260101_000060_0000003c", "source": "cli"}}])
    for name in ("staged.db", "local.db"):
        assert import_paths(tmp_path / name, [tmp_path / "before"]).messages_imported == 1
    staged = import_paths(tmp_path / "staged.db", [tmp_path / "sessions"])
    monkeypatch.setattr(run, "PARALLEL_FROM_FILES", 10**9)
    local = import_paths(tmp_path / "local.db", [tmp_path / "sessions"])
    assert content(tmp_path / "staged.db") == content(tmp_path / "local.db")
    assert _report(staged) == _report(local)
    assert [p.kind for p in staged.problems] == ["lone_surrogate"]
    assert staged.messages_imported == local.messages_imported == 4 * (PARALLEL_FROM_FILES + 6) + 1 + 2
    assert fts_in_sync(tmp_path / "staged.db")
    assert sorted(tmp_path.iterdir()) == [tmp_path / n for n in ("before", "local.db", "sessions", "staged.db")]


def _slow_writer(scratch: Path) -> None:
    """A writer slower than the reader: it waits until two staged files are queued (then the reader
    has run ahead as far as it may), at most a second (the last batches have nothing behind them)."""
    deadline = time.monotonic() + 1.0
    while sum(path.is_file() for path in scratch.rglob("*")) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # a little longer: room to run further ahead, which must stop at READ_AHEAD files


def test_batches_arrive_staged_and_the_reader_never_runs_far_ahead(tmp_path, monkeypatch):
    # Sessions with a 1 MiB tool output: four fill a batch (BATCH_BYTES), so 40 make 10 batches.
    big = "y" * 2**20
    write_jsonl(tmp_path / "sessions" / "20260101_000000_00000000.jsonl", [{"role": "user", "content": "hi"}])
    for n in range(1, 40):
        write_jsonl(tmp_path / "sessions" / f"20260101_{n:06d}_{n:08x}.jsonl",
                    [{"role": "user", "content": f"run {n}"}, {"role": "tool", "content": big}])
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    files, _ = discover([tmp_path / "sessions"])
    sizes, most, staged = [], 0, 0
    for number, batch in enumerate(remote_batches(tmp_path / "absent.db", files, None, None, ReadLog())):
        if batch.staging is None:  # the writer was waiting for it: its rows came in the pipe
            assert batch.creates is None and all(isinstance(item.rows, tuple) for item in batch.items)
        else:  # new sessions staged whole: a block of them, no plan each
            assert batch.staging.is_file() and batch.creates is not None and batch.items == ()
            staged += 1
        sizes.append(len(batch.items) + (len(batch.creates.counts) if batch.creates else 0))
        assert number > 0 or batch.staging is None  # nothing is queued before the first: never staged
        _slow_writer(tmp_path / "tmp")  # the reader gets every chance to run ahead
        if batch.staging is not None:
            most = max(most, len(list(batch.staging.parent.iterdir())))
            batch.staging.unlink()  # what the writer does once the batch is committed
    assert sum(sizes) == 40 and len(sizes) >= 2 * READ_AHEAD
    assert staged >= len(sizes) // 2  # behind a slow writer the reader stages (it has the time)
    assert 2 <= most <= READ_AHEAD  # staged ahead, but never more than READ_AHEAD files
    assert list((tmp_path / "tmp").iterdir()) == []  # the staging folder went with the reader


def test_a_batch_that_cannot_be_staged_keeps_its_rows_in_memory(tmp_path):
    _varied_corpus(tmp_path / "sessions", 3)
    files, _ = discover([tmp_path / "sessions"])
    (items,) = prepared_batches(None, files, None, None, ReadLog())
    rows = [item.rows for item in items]
    assert stage_batch(tmp_path / "no such folder" / "batch.db", items) is None
    assert [item.rows for item in items] == rows and all(isinstance(r, tuple) for r in rows)
    staged = stage_batch(tmp_path / "batch.db", items)
    assert staged is not None and [item.rows for item in items] == rows  # the plans given are never changed
    assert [item.message_count for item in staged] == [len(r) for r in rows]
    assert all(isinstance(item.rows, StagedRows) for item in staged)


def test_a_missing_staging_file_fails_the_batch_with_a_clear_error(tmp_path):
    db = SessionDB(tmp_path / "state.db")
    try:
        with pytest.raises(ImportReaderError, match=r"staging file .* is gone"), attached(db._conn, tmp_path / "x.db"):
            pass
    finally:
        db.close()
    assert not (tmp_path / "x.db").exists()


def test_the_first_batch_is_small_so_the_writer_starts_early(tmp_path):
    for n in range(120):
        write_jsonl(tmp_path / "sessions" / f"20260101_{n:06d}_{n:08x}.jsonl",
                    [{"role": "user" if i % 2 else "assistant", "content": f"m{i}"} for i in range(10)])
    files, _ = discover([tmp_path / "sessions"])
    sizes = [len(items) for items in prepared_batches(None, files, None, None, ReadLog())]
    first = BATCH_MESSAGES // FIRST_BATCH_SHARE // 10  # sessions of 10 messages
    assert sizes == [first, 120 - first]


def test_an_import_where_no_reader_process_can_start_reads_in_process(tmp_path, monkeypatch):
    _corpus(tmp_path / "sessions", PARALLEL_FROM_FILES + 1)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    stats = import_paths(tmp_path / "state.db", [tmp_path / "sessions"])
    assert (stats.sessions_created, stats.messages_imported, stats.problems) == (PARALLEL_FROM_FILES + 1,
                                                                                2 * (PARALLEL_FROM_FILES + 1), [])


def _run_script(tmp_path: Path, code: str, cwd: Path, env: dict[str, str] | None = None) -> list[str]:
    script = tmp_path / "caller.py"
    script.write_text(textwrap.dedent(code))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout.split()


IMPORT_AND_COUNT = """
    import sys
    from pathlib import Path
    from hermes_state_tools.ingest import import_paths
    stats = import_paths(Path(sys.argv[0]).parent / "state.db", [Path(sys.argv[0]).parent / "sessions"], tz=TZ)
    print(stats.sessions_created, stats.messages_imported, len(stats.problems))
"""


@pytest.mark.parametrize("setting", ["a package folder in the working directory", "a tzinfo of the caller's own",
                                     "a sitecustomize that prints"])
def test_the_reader_process_copes_with_what_the_caller_brings(tmp_path, setting):
    _corpus(tmp_path / "sessions", PARALLEL_FROM_FILES + 2)
    expected = [str(PARALLEL_FROM_FILES + 2), str(2 * (PARALLEL_FROM_FILES + 2)), "0"]
    work, env, code = tmp_path / "work", None, IMPORT_AND_COUNT.replace("TZ", "None")
    work.mkdir()
    if setting.startswith("a package"):
        # `python -m` would put this first on the reader's path, in place of the real package.
        (work / "importers").mkdir()
        (work / "importers" / "__init__.py").write_text("raise ImportError('the wrong importers')\n")
    elif setting.startswith("a tzinfo"):
        code = textwrap.dedent("""
            from datetime import timedelta, tzinfo
            class Plus2(tzinfo):  # defined in the script: a reader process could not rebuild it
                def utcoffset(self, moment): return timedelta(hours=2)
                def dst(self, moment): return timedelta(0)
                def tzname(self, moment): return "+02"
        """) + textwrap.dedent(IMPORT_AND_COUNT).replace("TZ", "Plus2()")
    else:
        (work / "sitecustomize.py").write_text("print('hello from sitecustomize')\n")
        env = {**os.environ, "PYTHONPATH": str(work)}
    assert _run_script(tmp_path, code, work, env)[-3:] == expected


def test_a_lock_retry_reports_each_problem_once(tmp_path, monkeypatch):
    # Two exported sessions claim one title: the second is renamed, a problem reported once, even
    # when the batch's first attempt was rolled back on a lock and run again.
    write_jsonl(tmp_path / "sessions" / "export.jsonl", [
        {"format": "hermes-state-export/1", "session": {"id": sid, "source": "cli", "started_at": 100.0 + n,
                                                        "title": "Same title"},
         "messages": [{"role": "user", "content": f"m{n}", "timestamp": 100.5 + n}]}
        for n, sid in enumerate(("first", "second"))
    ])
    attempts = []
    original = run.write_batch

    def locked_once(conn, *args):
        written = original(conn, *args)
        attempts.append(len(written.written))
        if len(attempts) == 1:
            raise sqlite3.OperationalError("database is locked")  # as a busy Hermes would make it
        return written

    monkeypatch.setattr(run, "write_batch", locked_once)
    stats = import_paths(tmp_path / "state.db", [tmp_path / "sessions"])
    assert attempts == [2, 2]
    assert [p.kind for p in stats.problems] == ["title_renamed"]
    assert stats.sessions_created == 2


def test_a_batch_whose_staging_fails_half_way_reports_nothing_twice(tmp_path):
    _varied_corpus(tmp_path / "sessions", 5)
    files, _ = discover([tmp_path / "sessions"])
    (items,) = prepared_batches(None, files, None, None, ReadLog())
    bad = replace(items[4], rows=(*items[4].rows, (*items[4].rows[0][:6], {"not": "bindable"})))  # refused
    items = (*items[:4], bad)
    before = [item.problems for item in items]
    assert stage_batch(tmp_path / "batch.db", items) is None  # session 3's surrogate was met first
    assert [item.problems for item in items] == before
    assert not (tmp_path / "batch.db").exists()


def test_a_failed_import_leaves_no_reader_behind_even_while_its_error_is_kept(tmp_path, monkeypatch):
    # A caller that keeps the exception keeps its traceback, and with it the batch generator, alive:
    # the import must close the reader itself, not leave that to garbage collection.
    _corpus(tmp_path / "sessions", 120)  # a small first batch, then more
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    calls = []
    original = run.write_batch

    def fail_on_the_second(conn, *args):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("the disk went away")
        return original(conn, *args)

    monkeypatch.setattr(run, "write_batch", fail_on_the_second)
    with pytest.raises(RuntimeError) as kept:
        import_paths(tmp_path / "state.db", [tmp_path / "sessions"])
    assert kept.value is not None and len(calls) == 2
    assert list(scratch.iterdir()) == []  # the reader stopped and took its staging folder with it


def _children() -> set[int]:
    """This process's living child processes (Linux: from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_reader_started_while_searching_is_stopped_when_the_import_fails_before_reading(tmp_path):
    # The reader starts as soon as PARALLEL_FROM_FILES files are found; an import that then cannot
    # create its store (here: the folder for it is a file) must not leave that process behind.
    _corpus(tmp_path / "sessions", run.PARALLEL_FROM_FILES + 5)
    (tmp_path / "blocked").write_text("a file, not a folder")
    before = _children()
    with pytest.raises(OSError):
        import_paths(tmp_path / "blocked" / "state.db", [tmp_path / "sessions"])
    assert _children() == before


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("case", ["name too long", "few files", "dry run", "not a database"])
def test_a_reader_given_beforehand_is_stopped_however_the_import_ends(tmp_path, monkeypatch, case):
    # import-jsonl of a folder starts the reader before the import's modules load (ingest/reader/launch.py)
    # and hands it to import_paths, which must stop it on every way out, the first look at --db included.
    from hermes_state_tools.ingest.reader.launch import finding_reader

    _corpus(tmp_path / "sessions", 3 if case == "few files" else run.PARALLEL_FROM_FILES + 5)
    db = tmp_path / ("x" * 300 + ".db" if case == "name too long" else "state.db")
    if case == "not a database":
        db.write_text("not SQLite")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # where a reader that read on stages
    (tmp_path / "tmp").mkdir()
    before = _children()
    reader = finding_reader(db, [tmp_path / "sessions"], None, None)
    assert reader is not None
    try:
        import_paths(db, [tmp_path / "sessions"], reader=reader, dry_run=case == "dry run")
    except (OSError, NotAHermesDatabaseError):
        assert case in ("name too long", "not a database")
    assert reader.process.poll() is not None
    assert _children() == before
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing staged is left behind


def test_the_reader_collects_cycles_itself_with_the_collector_off(tmp_path, monkeypatch):
    # The reader process turns the cyclic collector off (its rows hold no cycles, and collections
    # started by their allocation cost it ~4%) and collects once every COLLECT_EVERY batches instead.
    import gc
    import pickle
    import threading

    from hermes_state_tools.ingest.planning import batches as prepare
    from hermes_state_tools.ingest.reader import process as reader_child
    from hermes_state_tools.ingest.reader.channel import ACK, Read, receive

    _corpus(tmp_path / "sessions", 2 * reader_child.COLLECT_EVERY + 4)
    monkeypatch.setattr(prepare, "BATCH_SESSIONS", 1)  # a batch a session
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    files, _ = discover([tmp_path / "sessions"])
    inbox_r, inbox_w = os.pipe()
    out_r, out_w = os.pipe()
    collections: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    was_enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(count)
    try:
        with os.fdopen(inbox_r, "rb") as inbox, os.fdopen(out_w, "wb") as out:
            serving = threading.Thread(target=reader_child.serve, args=(inbox, out))
            serving.start()
            with os.fdopen(inbox_w, "wb") as to_reader, os.fdopen(out_r, "rb") as from_reader:
                pickle.dump(Read(None, [os.fspath(f) for f in files], None, None), to_reader)
                to_reader.flush()
                kinds = []
                while (message := receive(from_reader, first=not kinds))[0] not in ("done", "error"):
                    kinds.append(message[0])
                    if message[0] == "batch":
                        to_reader.write(ACK)
                        to_reader.flush()
            serving.join(timeout=60)
    finally:
        gc.callbacks.remove(count)
        if was_enabled:
            gc.enable()
    assert message[0] == "done", message[1]
    batches = kinds.count("batch")
    assert batches == len(files)
    assert collections == [2] * (batches // reader_child.COLLECT_EVERY)  # full collections, on schedule


# -- a reader asked to find the files itself (launch.finding_reader, the CLI's way) ----------------


def _with_and_without_a_finding_reader(tmp_path: Path, before: Callable[[Path], None] | None = None,
                                       meanwhile: Callable[[Path], None] | None = None) -> None:
    """Import the varied corpus (plus a stray file the search notices) into two files, one with a
    reader asked beforehand to find the files and one without; the two must be the same."""
    from hermes_state_tools.ingest.reader.launch import finding_reader

    _varied_corpus(tmp_path / "sessions", PARALLEL_FROM_FILES + 6)
    (tmp_path / "sessions" / "payload_1.jsonl").write_text("{}\n")  # a log of API payloads: a notice
    stats = {}
    for name, asked in (("asked.db", True), ("plain.db", False)):
        db = tmp_path / name
        if before is not None:
            before(db)
        reader = finding_reader(db, [tmp_path / "sessions"], None, "cli") if asked else None
        assert asked == (reader is not None)
        if meanwhile is not None:
            meanwhile(db)
        stats[name] = import_paths(db, [tmp_path / "sessions"], source="cli", reader=reader)
        if reader is not None:
            assert reader.process.poll() is not None
    assert content(tmp_path / "asked.db") == content(tmp_path / "plain.db")
    assert _report(stats["asked.db"]) == _report(stats["plain.db"])
    assert {"skipped_file", "lone_surrogate"} <= {p.kind for p in stats["asked.db"].problems}
    assert stats["asked.db"].files_read == stats["plain.db"].files_read == PARALLEL_FROM_FILES + 7
    assert fts_in_sync(tmp_path / "asked.db")


def _stored_earlier(db: Path) -> None:
    write_jsonl(db.parent / f"{db.name}-before" / "x.jsonl", [{"format": "hermes-state-export/1", "messages": [
        {"role": "user", "content": "earlier", "timestamp": 1767261000.0}],
        "session": {"id": "20260101_000060_0000003c", "source": "cli"}}])
    assert import_paths(db, [db.parent / f"{db.name}-before"]).messages_imported == 1


def test_a_reader_that_finds_the_files_reads_a_first_import_at_once_with_the_same_result(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    _with_and_without_a_finding_reader(tmp_path)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_reader_that_finds_the_files_waits_to_plan_against_an_existing_database(tmp_path):
    _with_and_without_a_finding_reader(tmp_path, before=_stored_earlier)


def test_a_database_that_appears_after_the_reader_looked_is_planned_against(tmp_path):
    # The reader found no database and read on, planned against none; the import then finds one (another
    # process made it meanwhile): that reader is of no use, and the files are planned against what is stored.
    _with_and_without_a_finding_reader(tmp_path, meanwhile=_stored_earlier)


def test_a_reader_asked_for_other_paths_or_that_fails_to_find_is_not_used(tmp_path):
    from hermes_state_tools.ingest.reader.launch import finding_reader

    _corpus(tmp_path / "sessions", PARALLEL_FROM_FILES + 2)
    _corpus(tmp_path / "other", 3)
    before = _children()
    for n, case in enumerate(("other paths", "killed")):
        db = tmp_path / f"{n}.db"
        paths = [tmp_path / ("other" if case == "other paths" else "sessions")]
        reader = finding_reader(db, paths, None, None)
        assert reader is not None
        if case == "killed":
            reader.process.kill()
            reader.process.wait()
        stats = import_paths(db, [tmp_path / "sessions"], reader=reader)
        assert (stats.sessions_created, stats.files_read) == (PARALLEL_FROM_FILES + 2, PARALLEL_FROM_FILES + 2)
        assert reader.process.poll() is not None
    assert _children() == before


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_command_line_starts_the_reader_early_and_an_untaken_one_is_stopped_at_exit(tmp_path):
    from hermes_state_tools.ingest.reader import launch

    cases = ((["--db", "x.db", "import-jsonl", "folder"], True), (["import-jsonl", "--dry-run", "f"], False),
             (["import-jsonl", "--help"], False), (["status"], False))
    for args, started in cases:
        launch.start_early(args)
        reader = launch.take_early()
        assert (reader is not None) == started, args
        if reader is not None:
            launch.stop_reader(reader)
    launch.start_early(["import-jsonl", "one-file.jsonl"])  # a command that turns out to read no folder
    started = launch._early[0]
    launch.stop_early()
    assert launch.take_early() is None and started.poll() is not None
    # A process that started one and never gave it work (the command was not an import after all):
    script = ("from hermes_state_tools.ingest.reader import launch; launch.start_early(['import-jsonl']); "
              "print(launch._early[0].pid)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    pid = int(done.stdout)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reader is forked on Linux only")
def test_a_forked_reader_imports_the_same_and_holds_none_of_the_callers_files(tmp_path, monkeypatch):
    import threading

    from hermes_state_tools.ingest.reader import launch

    if threading.active_count() != 1:
        pytest.skip("a fork is only made while one thread runs")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    _varied_corpus(tmp_path / "sessions", PARALLEL_FROM_FILES + 6)
    held_r, held_w = os.pipe()  # a caller's file: the reader must not keep it open
    try:
        launch.start_early(["import-jsonl", str(tmp_path / "sessions")])
        reader = launch.finding_reader(tmp_path / "forked.db", [tmp_path / "sessions"], None, None)
        assert reader is not None and isinstance(reader.process, launch._Forked)
        os.close(held_w)
        held_w = -1
        assert os.read(held_r, 1) == b""  # end of file: no other process holds the write end
        forked = import_paths(tmp_path / "forked.db", [tmp_path / "sessions"], reader=reader)
    finally:
        os.close(held_r)
        if held_w != -1:
            os.close(held_w)
    assert reader.process.returncode == 0
    monkeypatch.setattr(run, "PARALLEL_FROM_FILES", 10**9)
    local = import_paths(tmp_path / "local.db", [tmp_path / "sessions"])
    assert content(tmp_path / "forked.db") == content(tmp_path / "local.db")
    assert _report(forked) == _report(local)
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reader is forked on Linux only")
def test_a_forked_reader_is_waited_for_with_a_time_limit_and_killed():
    import threading

    from hermes_state_tools.ingest.reader import launch

    if threading.active_count() != 1:
        pytest.skip("a fork is only made while one thread runs")
    child = launch._fork_reader()
    assert child is not None and child.poll() is None  # waiting for its request
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.05)
    child.kill()
    assert child.wait(timeout=30) == -9 and child.poll() == -9
    launch.stop_reader(child)  # stopping one that has ended is harmless
