"""kill -9 at random moments during backup, upgrade (its backup), restore and recover: afterwards
nothing invalid is left (no half DEST, no journal, no empty .bak; every database file present
verifies) and the re-run succeeds and clears the temporary files of the killed run."""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import hermes_state, raw_scalar
from page_damage import build_db, damage, listing
from schema_fixtures import load_fixture

from hermes_state_tools import SessionDB
from hermes_state_tools.core.paths import file_identity

ROOT = Path(__file__).resolve().parent.parent


def _command(*args: object) -> list[str]:
    return [sys.executable, "-m", "hermes_state_tools", *map(str, args), "--no-progress"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HERMES_HOME": "/nonexistent"}


def run(*args: object) -> subprocess.CompletedProcess[str]:
    """A command run to its end, in this process (as the program runs it): only the killed runs need
    a process of their own."""
    return hermes_state(*args, "--no-progress", env={"HERMES_HOME": "/nonexistent"})


def run_process(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_command(*args), capture_output=True, text=True, timeout=300, env=_env(),
                          stdin=subprocess.DEVNULL)


def run_killed(delay: float, *args: object) -> int:
    """Start the command, SIGKILL it after `delay` seconds (if still running); its return code."""
    proc = subprocess.Popen(_command(*args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(),
                            stdin=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    return proc.wait()


def duration(*args: object) -> float:
    """How long a whole run of the process that run_killed kills takes."""
    started = time.monotonic()
    assert run_process(*args).returncode in (0, 1)
    return time.monotonic() - started


def sound(path: Path) -> bool:
    """The file (with its -wal, read through a copy) passes integrity_check and holds Hermes tables."""
    scratch = path.with_name(path.name + ".verify")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        shutil.copyfile(path, scratch / "db")
        wal = path.with_name(path.name + "-wal")
        if wal.exists():
            shutil.copyfile(wal, scratch / "db-wal")
        conn = sqlite3.connect(scratch / "db")
        try:
            ok = conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            return ok and conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] >= 0
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def assert_nothing_invalid(folder: Path, damaged: str | None = None) -> None:
    for name in listing(folder):
        path = folder / name
        if name == damaged or "hermes-tmp" in name or name.endswith(("-wal", "-shm")) or path.is_dir():
            continue  # a clearly named temporary file of the killed run, or a sidecar
        assert not name.endswith("-journal"), name
        assert path.stat().st_size > 0, f"{name} is empty"
        assert sound(path), f"{name} does not verify"


def assert_no_temps(folder: Path) -> None:
    assert [n for n in listing(folder) if "hermes-tmp" in n or n.endswith("-journal")] == []


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Big enough (about 6 MB) that a backup takes a while to kill into."""
    return build_db(tmp_path_factory.mktemp("big") / "state.db", sessions=300, per_session=25, size=500)


def _kill_backup(big: Path, tmp_path: Path, fraction: float, full: float) -> None:
    shutil.copyfile(big, tmp_path / "state.db")
    dest = tmp_path / "copy.db"
    run_killed(fraction * full, "--db", tmp_path / "state.db", "backup", dest)
    assert_nothing_invalid(tmp_path)
    if not dest.exists():
        assert run("--db", tmp_path / "state.db", "backup", dest).returncode == 0
    assert sound(dest) and run("--db", dest, "check").returncode == 0
    # killed after DEST was linked but before its temporary name was dropped: the next run clears it
    assert run("--db", tmp_path / "state.db", "backup", tmp_path / "again.db").returncode == 0
    assert_no_temps(tmp_path)


def _kill_upgrade(tmp_path: Path, fraction: float, full: float, name: str) -> None:
    path = load_fixture(name, tmp_path)
    run_killed(fraction * full, "--db", path, "upgrade")
    assert_nothing_invalid(tmp_path)
    assert run("--db", path, "upgrade").returncode == 0
    assert sound(path) and run("--db", path, "status").returncode == 0
    assert_no_temps(tmp_path)
    assert all(sound(tmp_path / n) for n in listing(tmp_path) if ".bak-" in n)


def _kill_restore(big: Path, tmp_path: Path, fraction: float, full: float) -> None:
    db, backup = tmp_path / "state.db", tmp_path / "old.db"
    build_db(db, sessions=5, per_session=3)
    shutil.copyfile(big, backup)
    run_killed(fraction * full, "--db", db, "restore", backup, "--yes")
    assert_nothing_invalid(tmp_path)
    assert run("--db", db, "restore", backup, "--yes").returncode == 0
    assert sound(db) and run("--db", db, "check").returncode == 0
    assert_no_temps(tmp_path)


def _kill_recover(big: Path, tmp_path: Path, fraction: float, full: float) -> None:
    src = tmp_path / "state.db"
    shutil.copyfile(big, src)
    damage(src, "messages")
    dest = tmp_path / "out.db"
    run_killed(fraction * full, "--db", src, "recover", dest)
    assert_nothing_invalid(tmp_path, damaged="state.db")
    if not dest.exists():
        assert run("--db", src, "recover", dest).returncode == 1
    assert run("--db", dest, "check").returncode == 0
    assert run("--db", src, "recover", tmp_path / "again.db").returncode == 1  # clears a killed run's temp
    assert_no_temps(tmp_path)


@pytest.fixture(scope="module")
def timings(big: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    """How long each full run takes here, to kill at a fraction of it."""
    work = tmp_path_factory.mktemp("timing")
    out = {"backup": duration("--db", big, "backup", work / "b.db")}
    out["restore"] = out["backup"] * 1.5
    damaged = work / "d.db"
    shutil.copyfile(big, damaged)
    damage(damaged, "messages")
    out["recover"] = duration("--db", damaged, "recover", work / "r.db")
    out["upgrade"] = duration("--db", load_fixture("v1", work), "upgrade")
    return out


FRACTIONS = (0.6,)  # more moments, at random, in the soak run


@pytest.mark.parametrize("fraction", FRACTIONS)
def test_a_killed_backup_leaves_no_half_destination(big, tmp_path, timings, fraction):
    _kill_backup(big, tmp_path, fraction, timings["backup"])


@pytest.mark.parametrize("fraction", FRACTIONS)
def test_a_killed_upgrade_leaves_no_empty_backup(tmp_path, timings, fraction):
    _kill_upgrade(tmp_path, fraction, timings["upgrade"], "v1")


@pytest.mark.parametrize("fraction", FRACTIONS)
def test_a_killed_restore_leaves_a_valid_database(big, tmp_path, timings, fraction):
    _kill_restore(big, tmp_path, fraction, timings["restore"])


@pytest.mark.parametrize("fraction", FRACTIONS)
def test_a_killed_recover_leaves_no_half_destination(big, tmp_path, timings, fraction):
    _kill_recover(big, tmp_path, fraction, timings["recover"])


@pytest.mark.soak
@pytest.mark.parametrize("seed", range(15))
def test_soak_kills_at_random_moments(big, tmp_path, timings, seed):
    rnd = random.Random(seed)
    for step, kind in enumerate(("backup", "upgrade", "restore", "recover")):
        work = tmp_path / f"{kind}-{step}"
        work.mkdir()
        fraction = rnd.uniform(0.0, 1.2)
        if kind == "backup":
            _kill_backup(big, work, fraction, timings["backup"])
        elif kind == "upgrade":
            _kill_upgrade(work, fraction, timings["upgrade"], rnd.choice(["v1", "v3", "v5"]))
        elif kind == "restore":
            _kill_restore(big, work, fraction, timings["restore"])
        else:
            _kill_recover(big, work, fraction, timings["recover"])


def _commit_left_in_wal(db: Path) -> None:
    """Commit the session 'only-in-the-wal' and leave it in the -wal, as a crashed Hermes leaves it (a
    clean close would checkpoint it)."""
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO sessions (id, source, started_at) VALUES ('only-in-the-wal', 'cli', 1.0)")
    saved = db.with_name(db.name + ".saved-wal")
    shutil.copyfile(f"{db}-wal", saved)
    writer.close()
    shutil.move(saved, f"{db}-wal")


def test_a_swap_killed_between_its_renames_gets_its_wal_back_on_the_next_run(tmp_path):
    """The one moment a kill can leave the database without its WAL: moved aside, new file not yet in."""
    db = build_db(tmp_path / "state.db", sessions=5, per_session=3)
    _commit_left_in_wal(db)
    keep = tmp_path / "state.db.pre-repair-20260101T000000Z"
    (tmp_path / "state.db.hermes-tmp-swap-999999").write_text(keep.name)  # pid 999999: not running
    os.link(db, keep)
    os.rename(f"{db}-wal", f"{keep}-wal")
    assert run("--db", db, "vacuum").returncode == 0  # any writing command finishes the swap first
    assert listing(tmp_path) == ["state.db"]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM sessions WHERE id = 'only-in-the-wal'").fetchone() == (1,)
    finally:
        conn.close()


def _killed_swap(tmp_path: Path) -> tuple[Path, Path]:
    """A database whose committed row 'only-in-the-wal' is in its -wal, caught by a swap killed between
    its renames: the intent written (this tool's format), the WAL moved aside under the kept name."""
    db = build_db(tmp_path / "state.db", sessions=5, per_session=3)
    _commit_left_in_wal(db)
    keep = tmp_path / "state.db.pre-restore-20260101T000000Z"
    identity = " ".join(map(str, file_identity(db) or ()))
    (tmp_path / "state.db.hermes-tmp-swap-999999").write_text(f"{keep.name}\n{identity}")
    os.link(db, keep)
    os.rename(f"{db}-wal", f"{keep}-wal")
    return db, keep


def _sessions_named(db: Path, like: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM sessions WHERE id LIKE ?", (like,)).fetchone()[0])
    finally:
        conn.close()


def test_a_killed_swap_whose_file_nobody_wrote_gets_its_wal_back(tmp_path):
    db, _keep = _killed_swap(tmp_path)
    assert run("--db", db, "vacuum").returncode == 0
    assert listing(tmp_path) == ["state.db"] and _sessions_named(db, "only-in-the-wal") == 1


def test_a_killed_swap_whose_file_was_written_since_never_replays_the_old_wal_onto_it(tmp_path):
    """Hermes opened the file left without its WAL, wrote and checkpointed: the moved WAL no longer fits
    it. Put back, SQLite replayed it over Hermes' pages (the file was destroyed); it is kept unapplied."""
    db, keep = _killed_swap(tmp_path)
    with SessionDB(db) as hermes:
        for n in range(60):
            hermes.create_session(f"after-{n}", "cli")
            hermes.append_message(f"after-{n}", "user", "written after the killed swap " * 20)
    assert run("--db", db, "vacuum").returncode == 0
    assert sound(db) and _sessions_named(db, "after-%") == 60
    assert listing(tmp_path) == ["state.db", f"{keep.name}-wal-unapplied"]


def test_a_killed_swap_whose_file_a_writer_holds_in_its_wal_drops_the_kept_name(tmp_path):
    """Hermes wrote into the file left without its WAL and holds the commit in a new -wal (the main file
    unchanged): the moved WAL cannot go back, and the kept name, a second name of the live file, would
    have it replayed into the live file by whoever opened that name. It goes; the WAL is kept unapplied."""
    db, keep = _killed_swap(tmp_path)
    hermes = sqlite3.connect(db, isolation_level=None)
    hermes.execute("PRAGMA wal_autocheckpoint=0")
    hermes.execute("INSERT INTO sessions (id, source, started_at) VALUES ('hermes-live', 'cli', 2.0)")
    assert run("--db", db, "status").returncode == 0  # a read: finishes nothing
    from hermes_state_tools.store.files import remove_stale_temps  # what every writing command does first

    remove_stale_temps(tmp_path)
    hermes.close()
    assert not keep.exists() and (tmp_path / f"{keep.name}-wal-unapplied").exists()
    assert sound(db) and _sessions_named(db, "hermes-live") == 1


def test_an_empty_swap_intent_is_dropped_and_the_command_runs(tmp_path):
    """A full disk (or a kill) as the intent was written leaves it empty: it names nothing to undo."""
    db = build_db(tmp_path / "state.db", sessions=5, per_session=3)
    (tmp_path / "state.db.hermes-tmp-swap-999999").write_text("")
    done = run("--db", db, "vacuum")
    assert done.returncode == 0, done.stderr
    assert listing(tmp_path) == ["state.db"]


def test_a_restore_folds_the_old_files_wal_into_the_copy_it_keeps(tmp_path):
    """The swap folds a sound WAL into the old file first: at no moment is the database its main file
    without its latest commits, and the kept copy holds them without a -wal."""
    db = build_db(tmp_path / "state.db", sessions=5, per_session=3)
    _commit_left_in_wal(db)
    backup = build_db(tmp_path / "old.db", sessions=2, per_session=1)
    assert run("--db", db, "restore", backup, "--yes").returncode == 0
    kept = [name for name in listing(tmp_path) if ".pre-restore-" in name]
    assert len(kept) == 1 and not kept[0].endswith("-wal")
    assert _sessions_named(tmp_path / kept[0], "only-in-the-wal") == 1


def test_an_import_killed_after_placing_its_new_file_leaves_a_link_the_next_import_removes(tmp_path):
    """A build placed by hard link and killed before it unlinked its temporary name: the database is
    whole, and the second name (the same bytes) goes with the next import into it."""
    db = build_db(tmp_path / "state.db", sessions=5, per_session=3)
    os.link(db, tmp_path / "state.db.hermes-tmp-import-999999")  # pid 999999: not running
    home = tmp_path / "sessions"
    home.mkdir()
    (home / "20260301_090000_3f9a2c7e.jsonl").write_text('{"role": "user", "content": "hello"}\n')
    assert run("--db", db, "import-jsonl", home).returncode == 0
    assert listing(tmp_path) == ["sessions", "state.db"]
    assert rows_of(db) == 5 * 3 + 1


def rows_of(db: Path) -> int:
    return int(raw_scalar(db, "SELECT COUNT(*) FROM messages"))
