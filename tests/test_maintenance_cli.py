"""The maintenance and browsing commands: reports, exit codes, confirmation, refused files, help and README."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import click
import pytest
from damage import T0, build_healthy, cli, cli_json, counts, planted, raw, unchanged
from helpers import file_digests, raw_scalar
from schema_fixtures import load_fixture

from hermes_state_tools.cli import main
from hermes_state_tools.cli import maintenance as maintenance_cli
from hermes_state_tools.core import connection
from hermes_state_tools.maintenance.checks import check_file

README = Path(__file__).resolve().parent.parent / "README.md"

# Each new command with arguments that succeed on the healthy database (DEST is filled in per test).
COMMANDS: dict[str, list[str]] = {
    "check": ["check"],
    "check --quick": ["check", "--quick"],
    "repair": ["repair"],
    "repair --dry-run": ["repair", "--dry-run"],
    "rebuild-fts": ["rebuild-fts"],
    "vacuum": ["vacuum"],
    "maintain": ["maintain"],
    "backup": ["backup", "DEST"],
    "prune": ["prune", "--older-than", "30", "--yes"],
    "prune --dry-run": ["prune", "--older-than", "30", "--dry-run"],
    "sessions list": ["sessions", "list"],
    "sessions show": ["sessions", "show", "alpha"],
    "sessions lineage": ["sessions", "lineage", "beta"],
    "sessions stats": ["sessions", "stats"],
}


def args_for(name: str, tmp_path: Path) -> list[str]:
    return [str(tmp_path / "copy.db") if a == "DEST" else a for a in COMMANDS[name]]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def healthy(tmp_path: Path) -> Path:
    return build_healthy(tmp_path / "state.db")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_is_one_document_on_stdout_and_the_command_succeeds(tmp_path, healthy, name):
    code, doc = cli_json("--db", healthy, *args_for(name, tmp_path), "--no-progress")
    assert code == 0 and doc["ok"] is True


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_missing_database_is_exit_2_and_never_created(tmp_path, name):
    path = tmp_path / "nowhere" / "state.db"
    result = cli("--db", path, *args_for(name, tmp_path), "--json")
    assert result.exit_code == 2
    assert json.loads(result.stdout) == {"ok": False, "error": f"{path}: no such database file"}
    assert len(result.stderr.splitlines()) == 1 and str(path) in result.stderr
    assert not path.parent.exists() and not (tmp_path / "copy.db").exists()


READING = {"check", "check --quick", "backup", "sessions list", "sessions show", "sessions lineage",
           "sessions stats", "prune --dry-run"}


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - READING))
def test_a_newer_schema_is_exit_3_and_left_unchanged(tmp_path, name):
    path = load_fixture("trap_version_31", tmp_path)
    before = sha256(path)
    result = cli("--db", path, *args_for(name, tmp_path), "--no-progress")
    assert result.exit_code == 3
    assert len(result.stderr.splitlines()) == 1 and "version 31" in result.stderr
    assert sha256(path) == before and not path.with_name(path.name + "-wal").exists()
    assert not (tmp_path / "copy.db").exists()


@pytest.mark.parametrize("name", sorted(READING - {"prune --dry-run", "sessions show", "sessions lineage"}))
def test_a_newer_schema_is_read_with_one_warning_and_left_unchanged(tmp_path, name):
    path = load_fixture("trap_version_31", tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir()), sha256(path)
    result = cli("--db", path, *args_for(name, tmp_path), "--no-progress", "--json")
    assert result.exit_code in (0, 1), result.stderr  # check may find problems in the fixture
    assert result.stderr.count("warning") == 1 and "version 31" in result.stderr
    assert json.loads(result.stdout)["schema_newer"] is True
    after = sorted(p.name for p in tmp_path.iterdir() if p.name != "copy.db"), sha256(path)
    assert after == before


# -- check, repair, rebuild-fts, vacuum, maintain ----------------------------------

def test_check_reports_problems_with_exit_1_and_human_lines(tmp_path):
    path = planted(tmp_path, "missing_parent")
    result = cli("--db", path, "check")
    assert result.exit_code == 1
    assert "missing_parent: session delta names parent 'vanished', which does not exist" in result.stdout


def test_rebuild_fts_resyncs_the_index(tmp_path):
    path = planted(tmp_path, "fts_changed")
    code, doc = cli_json("--db", path, "rebuild-fts")
    assert code == 0 and (doc["messages_indexed"], doc["recreated"]) == (8, [])
    assert check_file(path) == []


def test_rebuild_fts_recreates_a_missing_fts_table(tmp_path):
    path = planted(tmp_path, "missing_fts_table")
    assert cli_json("--db", path, "rebuild-fts")[1]["recreated"] == ["table messages_fts"]
    assert check_file(path) == []
    assert "staging" in cli("--db", path, "search", "staging").stdout


def _bloat(path: Path) -> None:
    """Write and delete a lot of text so the file holds many free pages."""
    big = "x" * 4000
    raw(path, *[f"INSERT INTO messages (session_id, role, content, timestamp) VALUES ('delta', 'user', "
                f"'{big} {n}', {T0})" for n in range(300)], "DELETE FROM messages WHERE length(content) > 3000")


def test_vacuum_reports_the_bytes_it_gave_back(healthy):
    _bloat(healthy)
    code, doc = cli_json("--db", healthy, "vacuum")
    assert code == 0 and doc["vacuumed"] and doc["optimized"]
    assert doc["bytes_after"] < doc["bytes_before"] // 4
    assert doc["bytes_after"] == healthy.stat().st_size
    assert check_file(healthy) == []


def test_vacuum_works_while_another_connection_reads(healthy):
    reader = sqlite3.connect(str(healthy), isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 8
        assert cli("--db", healthy, "vacuum").exit_code == 0
        assert reader.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 8
    finally:
        reader.close()


def test_maintain_on_a_healthy_database_only_optimizes(healthy):
    code, doc = cli_json("--db", healthy, "maintain")
    assert code == 0
    assert {"ok", "check", "repairs", "optimized", "vacuumed", "unfixed", "bytes_before", "bytes_after"} <= set(doc)
    assert doc["check"] == {"ok": True, "problems": []}
    assert (doc["repairs"], doc["optimized"], doc["vacuumed"]) == ([], True, False)


def test_maintain_repairs_and_vacuums_when_it_is_worth_it(tmp_path):
    path = planted(tmp_path, "counter_mismatch")
    _bloat(path)
    code, doc = cli_json("--db", path, "maintain")
    assert code == 0 and doc["ok"] and not doc["check"]["ok"]
    assert sorted(r["session_ids"][0] for r in doc["repairs"]) == ["delta", "gamma"]
    assert doc["vacuumed"] and doc["bytes_after"] < doc["bytes_before"]
    assert check_file(path) == []


def test_maintain_leaves_a_damaged_file_alone_and_exits_65(tmp_path):
    path = planted(tmp_path, "integrity")
    raw(path, "UPDATE sessions SET message_count = 99 WHERE id = 'gamma'")
    raw(path, "PRAGMA wal_checkpoint(TRUNCATE)")
    before = sha256(path)
    code, doc = cli_json("--db", path, "maintain")
    assert code == 65 and not doc["ok"] and doc["damaged"] and "nothing was written" in doc["note"]
    assert {p["kind"] for p in doc["unfixed"]} == {"integrity", "counter_mismatch"}
    assert (doc["repairs"], doc["optimized"], doc["vacuumed"]) == ([], False, False)
    assert sha256(path) == before


@pytest.mark.parametrize("name", ["repair", "rebuild-fts", "vacuum", "maintain", "prune"])
def test_a_database_locked_past_the_retries_is_exit_75_and_unchanged(tmp_path, monkeypatch, name):
    monkeypatch.setattr(connection, "_BUSY_TIMEOUT_S", 0.01)
    monkeypatch.setattr(connection, "_WRITE_MAX_RETRIES", 2)
    path = planted(tmp_path, "counter_mismatch")
    writer = sqlite3.connect(str(path), isolation_level=None)  # another process holding the write lock
    try:
        writer.execute("BEGIN IMMEDIATE")
        before = file_digests(path)
        result = cli("--db", path, *args_for(name, tmp_path))
        assert result.exit_code == 75 and "locked" in result.stderr
        # first it says why it is quiet, once however many writes wait; then the one error line
        waiting, error = result.stderr.splitlines()
        assert waiting.startswith("hermes-state: waiting for the database: another process is writing")
        assert "locked" in error and file_digests(path) == before
    finally:
        writer.close()


# -- backup -----------------------------------------------------------------------

def test_backup_copies_and_reports(tmp_path, healthy):
    dest = tmp_path / "backups" / "copy.db"
    dest.parent.mkdir()
    code, doc = cli_json("--db", healthy, "backup", dest)
    assert code == 0
    assert (doc["path"], doc["sessions"], doc["messages"], doc["bytes"]) == (str(dest), 4, 8, dest.stat().st_size)
    assert counts(dest) == (4, 8) and check_file(dest) == []


def test_backup_refuses_an_existing_destination(tmp_path, healthy):
    dest = tmp_path / "copy.db"
    dest.write_bytes(b"precious")
    result = cli("--db", healthy, "backup", dest)
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and "destination exists" in result.stderr
    assert dest.read_bytes() == b"precious"


def test_backup_keep_onto_a_file_is_one_line_naming_it(tmp_path, healthy):
    # It said "<the database>: [Errno 17] File exists: '<DEST>'": the wrong file, and Python's words.
    dest = tmp_path / "copy.db"
    dest.write_bytes(b"precious")
    result = cli("--db", healthy, "backup", dest, "--keep", "2")
    assert result.exit_code == 2
    expected = f"{dest}: --keep needs DEST to be a folder for dated backups; this is a file"
    assert result.stderr == f"hermes-state: {expected}\n"
    assert dest.read_bytes() == b"precious" and sorted(p.name for p in tmp_path.iterdir()) == ["copy.db", "state.db"]


@pytest.mark.parametrize("command", ["backup", "recover"])
def test_backup_and_recover_refuse_a_missing_folder_instead_of_creating_it(tmp_path, healthy, command):
    # recover created every missing folder of DEST (a typo made a tree); backup and export refuse.
    dest = tmp_path / "typo" / "deeper" / "copy.db"
    result = cli("--db", healthy, command, dest)
    assert result.exit_code == 2 and "does not exist (create it first)" in result.stderr
    assert not (tmp_path / "typo").exists()


# -- prune ------------------------------------------------------------------------

PRUNABLE = ["alpha", "beta", "delta"]  # ended and 200 days old; gamma is still open


def remaining(path: Path) -> list[str]:
    return [row[0] for row in sqlite3.connect(str(path)).execute("SELECT id FROM sessions ORDER BY id")]


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setattr(maintenance_cli, "stdin_is_terminal", lambda: True)


def test_prune_asks_on_a_terminal_and_deletes_when_confirmed(healthy, terminal):
    result = cli("--db", healthy, "prune", "--older-than", "30", input="y\n")
    assert result.exit_code == 0, result.stderr
    assert "Delete 3 ended sessions" in result.stderr and "7 messages" in result.stderr
    assert "alpha, beta, delta" in result.stderr
    assert result.stdout == "deleted 3 sessions and 7 messages\n"
    assert remaining(healthy) == ["gamma"]
    assert raw_scalar(healthy, "SELECT parent_session_id FROM sessions WHERE id = 'gamma'") is None


def test_prune_declined_on_a_terminal_deletes_nothing(healthy, terminal):
    before = file_digests(healthy)
    result = cli("--db", healthy, "prune", "--older-than", "30", input="n\n")
    assert result.exit_code == 1 and "nothing was deleted" in result.stderr
    assert unchanged(healthy, before)


def test_prune_without_a_terminal_needs_yes(healthy):
    before = file_digests(healthy)
    result = cli("--db", healthy, "prune", "--older-than", "30", "--json")
    assert result.exit_code == 2 and "--yes" in result.stderr and len(result.stderr.splitlines()) == 1
    assert json.loads(result.stdout)["ok"] is False
    assert unchanged(healthy, before)


def test_prune_with_yes_reports_the_contract_keys(healthy):
    code, doc = cli_json("--db", healthy, "prune", "--older-than", "30", "--yes")
    assert code == 0
    assert (doc["sessions_deleted"], doc["messages_deleted"], doc["dry_run"]) == (3, 7, False)
    assert sorted(doc["session_ids"]) == PRUNABLE and remaining(healthy) == ["gamma"]
    assert check_file(healthy) == []


def test_prune_dry_run_reports_without_deleting(healthy):
    before = file_digests(healthy)
    code, doc = cli_json("--db", healthy, "prune", "--older-than", "30", "--dry-run")
    assert (code, doc["sessions_deleted"], doc["messages_deleted"], doc["dry_run"]) == (0, 3, 7, True)
    assert unchanged(healthy, before)


@pytest.mark.parametrize(("options", "deleted"), [(["--source", "discord"], ["delta"]), (["--older-than", "300"], [])])
def test_prune_filters_by_source_and_age(healthy, options, deleted):
    args = ["--older-than", "30", *options] if "--older-than" not in options else options
    code, doc = cli_json("--db", healthy, "prune", *args, "--yes")
    assert code == 0 and doc["session_ids"] == deleted
    assert remaining(healthy) == sorted({"alpha", "beta", "gamma", "delta"} - set(deleted))


def test_prune_of_a_source_no_session_has_says_so_and_deletes_nothing(healthy):
    # A typo in a nightly job would otherwise delete nothing every night without a word; it is no
    # error (a source whose sessions were all pruned has none either): exit 0, with a note.
    before = file_digests(healthy)
    code, doc = cli_json("--db", healthy, "prune", "--older-than", "30", "--source", "telegrm", "--yes")
    assert (code, doc["sessions_deleted"], doc["ok"]) == (0, 0, True)
    assert doc["notices"] == ["no session has source 'telegrm' (known sources: cli, discord, telegram)"]
    assert unchanged(healthy, before)
    result = cli("--db", healthy, "prune", "--older-than", "30", "--source", "telegrm", "--dry-run")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["would delete 0 sessions and 0 messages",
                                          "note: no session has source 'telegrm' (known sources: "
                                          "cli, discord, telegram)"]
    code, doc = cli_json("--db", healthy, "prune", "--older-than", "30", "--source", "discord", "--dry-run")
    assert doc["notices"] == [] and doc["session_ids"] == ["delta"]


# -- sessions ---------------------------------------------------------------------

def test_sessions_list_shows_top_level_conversations_newest_first(healthy):
    doc = cli_json("--db", healthy, "sessions", "list")[1]
    assert [(s["id"], s["preview"]) for s in doc["sessions"]] == [("delta", "disk usage report"),
                                                                  ("alpha", "deploy the staging box")]
    assert [s["id"] for s in cli_json("--db", healthy, "sessions", "list", "--source", "cli")[1]["sessions"]] == [
        "alpha"]
    human = cli("--db", healthy, "sessions", "list", "--limit", "1").stdout.splitlines()
    assert human[0].split() == ["id", "started", "last", "active", "source", "msgs", "title", "·", "preview"]
    assert len(human) == 3 and human[1].startswith("delta ") and "Delta" in human[1]
    assert human[2] == "1 of 2 sessions"


def test_sessions_show_takes_a_unique_prefix(healthy):
    doc = cli_json("--db", healthy, "sessions", "show", "del")[1]
    assert doc["session"]["id"] == "delta"
    assert [m["content"] for m in doc["messages"]] == ["disk usage report", "91 percent full"]
    assert "tool calls: terminal, terminal" in cli("--db", healthy, "sessions", "show", "delta").stdout


@pytest.mark.parametrize(("given", "says"), [("nope", "no session"), ("alp", "matches 2 sessions")])
@pytest.mark.parametrize("command", ["show", "lineage"])
def test_an_unknown_or_ambiguous_id_is_exit_2_with_one_line(healthy, command, given, says):
    raw(healthy, f"INSERT INTO sessions (id, source, started_at) VALUES ('alpine', 'cli', {T0})")
    result = cli("--db", healthy, "sessions", command, given)
    assert result.exit_code == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and says in result.stderr and repr(given) in result.stderr


def test_sessions_lineage_walks_up_and_down(healthy):
    doc = cli_json("--db", healthy, "sessions", "lineage", "beta")[1]
    assert [a["id"] for a in doc["ancestors"]] == ["alpha"]
    assert [(d["id"], d["depth"]) for d in doc["descendants"]] == [("gamma", 1)]
    assert doc["session"]["id"] == "beta" and doc["cycle"] is False
    human = cli("--db", healthy, "sessions", "lineage", "alpha").stdout.splitlines()
    assert [line.split()[0] for line in human] == ["*", "beta", "gamma"] and human[2].startswith("    gamma")


def test_sessions_lineage_survives_a_cycle_and_a_missing_parent(tmp_path):
    path = planted(tmp_path, "lineage_cycle")
    code, doc = cli_json("--db", path, "sessions", "lineage", "alpha")
    assert code == 0 and doc["cycle"] is True
    assert [a["id"] for a in doc["ancestors"]] == ["gamma", "beta"]
    raw(path, "UPDATE sessions SET parent_session_id = 'vanished' WHERE id = 'delta'")
    doc = cli_json("--db", path, "sessions", "lineage", "delta")[1]
    assert doc["ancestors"] == [{"id": "vanished", "missing": True}] and doc["cycle"] is False


def test_sessions_stats_totals_by_model_and_source(healthy):
    doc = cli_json("--db", healthy, "sessions", "stats")[1]
    totals = doc["totals"]
    assert (totals["sessions"], totals["messages"], totals["input_tokens"], totals["output_tokens"]) == (4, 8, 400, 40)
    assert totals["estimated_cost_usd"] == pytest.approx(2.0) and totals["actual_cost_usd"] is None
    by_source = {g["source"]: (g["sessions"], g["messages"]) for g in doc["by_source"]}
    assert by_source == {"cli": (2, 4), "telegram": (1, 2), "discord": (1, 2)}
    assert {g["model"]: g["sessions"] for g in doc["by_model"]} == {"model-cli": 2, "model-telegram": 1,
                                                                     "model-discord": 1}
    assert "cache_read_tokens" in doc["by_model"][0]
    assert "model-cli" in cli("--db", healthy, "sessions", "stats").stdout


def test_sessions_stats_reads_an_old_schema(tmp_path):
    code, doc = cli_json("--db", load_fixture("v1", tmp_path), "sessions", "stats")
    assert code == 0 and doc["totals"]["cache_read_tokens"] == 0 and doc["totals"]["sessions"] == 10


# -- help and README --------------------------------------------------------------

def all_commands(group: click.Group = main, prefix: str = "") -> dict[str, click.Command]:
    """Every command and group below `main`, by its full name ('sessions list'), the ones that load
    lazily included (`group.commands` holds only those loaded so far)."""
    found: dict[str, click.Command] = {}
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        found[prefix + name] = command
        if isinstance(command, click.Group):
            found.update(all_commands(command, f"{prefix}{name} "))
    return found


def test_the_walk_sees_the_sessions_subcommands():
    assert {"sessions list", "sessions show", "sessions lineage", "sessions stats", "check", "prune"} <= set(
        all_commands())


@pytest.mark.parametrize("name", sorted(all_commands()))
def test_every_command_has_help_with_an_example(name):
    command = all_commands()[name]
    assert command.help and command.help.strip().splitlines()[0].strip()
    assert "Examples:" in command.help and f"hermes-state {name.split()[0]}" in command.help
    if not isinstance(command, click.Group):
        assert "--no-progress" in [opt for param in command.params for opt in param.opts]


def test_every_command_appears_in_the_readme():
    text = README.read_text("utf-8")
    missing = [name for name in all_commands()
               if not re.search(rf"(`|hermes-state (--db \S+ )?){re.escape(name)}(?![\w-])", text)]
    assert missing == []


# -- real processes: exit codes and the stdout/stderr split -----------------------

def run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_state_tools", *map(str, args)], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_exit_codes_in_real_processes(tmp_path, healthy):
    assert run("--db", healthy, "check", "--no-progress").returncode == 0
    damaged = planted(tmp_path / "damaged", "lineage_cycle")
    done = run("--db", damaged, "check", "--json")
    assert done.returncode == 1 and json.loads(done.stdout)["problems"][0]["kind"] == "lineage_cycle"
    missing = run("--db", tmp_path / "missing.db", "sessions", "stats")
    assert (missing.returncode, missing.stdout, len(missing.stderr.splitlines())) == (2, "", 1)
    newer = run("--db", load_fixture("trap_version_31", tmp_path), "maintain")
    assert newer.returncode == 3 and "Traceback" not in newer.stderr
    refused = run("--db", healthy, "prune", "--older-than", "1")
    assert refused.returncode == 2 and refused.stdout == "" and "--yes" in refused.stderr
    assert remaining(healthy) == ["alpha", "beta", "delta", "gamma"]


def test_maintain_drops_extra_data_that_sessions_deleted_by_hermes_left_behind(tmp_path):
    # Import the sample home (its snapshots and index give sessions and messages extra data), then
    # delete sessions the way Hermes does: it knows no hst_ tables, so their rows stay behind.
    path = tmp_path / "state.db"
    assert cli("--db", path, "import-jsonl", Path(__file__).parent.parent / "fixtures" / "legacy-home",
               "--no-progress").exit_code == 1  # the sample's truncated line
    with sqlite3.connect(path) as conn:
        owners = [r[0] for r in conn.execute("SELECT session_id FROM hst_session_extra UNION "
                                             "SELECT session_id FROM hst_message_extra ORDER BY 1")]
    conn.close()
    gone, kept = owners[0], owners[1:]
    assert kept, "the sample needs two sessions with extra data"
    raw(path, f"DELETE FROM messages WHERE session_id = '{gone}'")
    raw(path, f"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = '{gone}'")
    raw(path, f"DELETE FROM sessions WHERE id = '{gone}'")
    extra_rows = ("SELECT (SELECT COUNT(*) FROM hst_session_extra WHERE session_id = ?1) + "
                  "(SELECT COUNT(*) FROM hst_message_extra WHERE session_id = ?1)")
    orphans, others = raw_scalar(path, extra_rows, (gone,)), sum(raw_scalar(path, extra_rows, (s,)) for s in kept)
    code, doc = cli_json("--db", path, "maintain")
    assert code == 0 and doc["extra_rows_dropped"] == orphans > 0
    assert raw_scalar(path, extra_rows, (gone,)) == 0
    assert sum(raw_scalar(path, extra_rows, (s,)) for s in kept) == others
    assert cli_json("--db", path, "maintain")[1]["extra_rows_dropped"] == 0
    assert "extra data" not in cli("--db", path, "maintain").stdout  # said only when there was some


def test_a_long_index_rebuild_is_refused_while_another_process_has_the_database_open(healthy, monkeypatch):
    """A rebuild of the search index holds the write lock throughout: past LONG_LOCK_BYTES, a running
    Hermes' appends would time out while it runs, so with the file open elsewhere it is refused (75)."""
    from hermes_state_tools.store import opening

    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(healthy)!r}); c.execute('SELECT COUNT(*) FROM sessions').fetchone()\n"
        "print('open', flush=True); time.sleep(60)")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        assert cli("--db", healthy, "rebuild-fts").exit_code == 0  # a small file: the lock is short
        monkeypatch.setattr(opening, "LONG_LOCK_BYTES", 0)
        before = file_digests(healthy)
        result = cli("--db", healthy, "rebuild-fts")
        assert result.exit_code == 75 and "stop Hermes" in result.stderr, result.stderr
        assert unchanged(healthy, before)
    finally:
        holder.kill()
        holder.wait()
    assert cli("--db", healthy, "rebuild-fts").exit_code == 0  # nobody else has it open
