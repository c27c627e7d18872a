"""Files today's Hermes made itself (schema 22, 26, 31; fixtures/hermes-late, made with Hermes' own
`SessionDB` by scripts/make_late_fixtures.py): every read command answers on them, shows what Hermes'
own API shows (the JSON beside each dump), finds no damage and writes nothing; every writing command
exits 3 and leaves the file's bytes as they were."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from built_files import copy_built
from helpers import file_digests, hermes_state

from hermes_state_tools.store.sqldump import load_sql

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "hermes-late"
ROOT = FIXTURES.parent.parent
NAMES = [f"{kind}-v{n}" for n in (22, 26, 31) for kind in ("fresh", "v17-opened-by")]
FRESH = [name for name in NAMES if name.startswith("fresh")]


def load(name: str, folder: Path) -> Path:
    """Dump `name` loaded into `folder/<name>.db` (loaded once per process, copied: built_files)."""
    return copy_built(("late", name), lambda built: load_sql((FIXTURES / f"{name}.sql").read_text(encoding="utf-8"),
                                                             built), folder / f"{name}.db")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Each file loaded once (the read commands leave it as it is; the tests that write copy it)."""
    folder = tmp_path_factory.mktemp("late")
    return {name: (load(name, folder), json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8")))
            for name in NAMES}


def word_found(shown: dict[str, Any]) -> str:
    return next(word for word, hits in shown["search"].items() if hits)


def reads(shown: dict[str, Any]) -> list[list[str]]:
    """Every read command, on a word and a session Hermes' own API found in this file."""
    session = shown["list_sessions_rich"][0]
    return [["status"], ["check"], ["check", "--quick"], ["search", word_found(shown)],
            ["search", word_found(shown), "--all"], ["sessions", "list"], ["sessions", "list", "--all"],
            ["sessions", "show", session], ["sessions", "show", session, "--all"],
            ["sessions", "lineage", session], ["sessions", "stats"]]


def run(db: Path, *args: str) -> Any:
    done = hermes_state("--db", db, *args)
    assert "Traceback" not in done.stderr
    return done


def answer(db: Path, *args: str) -> dict[str, Any]:
    done = run(db, *args, "--json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    assert found["schema_newer"] is True
    return found


@pytest.mark.parametrize("name", NAMES)
def test_every_read_command_answers_with_one_warning_and_writes_nothing(files, name, tmp_path):
    db, shown = files[name]
    before = file_digests(db)
    commands = [*reads(shown), ["backup", str(tmp_path / "copy.db")]]
    for args in commands:
        for as_json in ([], ["--json"]):
            (tmp_path / "copy.db").unlink(missing_ok=True)
            done = run(db, *args, *as_json)
            assert done.returncode == 0, (args, as_json, done.stderr)
            warning = [line for line in done.stderr.splitlines() if line.strip()]
            assert len(warning) == 1 and "a layout this tool does not know" in warning[0], (args, done.stderr)
            if as_json:
                assert json.loads(done.stdout)["schema_newer"] is True
    for fmt in ("jsonl", "json", "md"):
        assert run(db, "export", "--format", fmt, "-o", str(tmp_path / f"out.{fmt}")).returncode == 0
    assert run(db, "browse", "--print-metadata").returncode == 0
    assert file_digests(db) == before


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("quick", [[], ["--quick"]])
def test_check_finds_no_damage_on_a_file_hermes_made(files, name, quick):
    report = answer(files[name][0], "check", *quick)
    assert report["ok"] is True and report["problems"] == []


WRITES = [["repair"], ["vacuum"], ["rebuild-fts"], ["maintain"], ["upgrade"],
          ["prune", "--older-than", "0", "--yes"], ["import-jsonl", str(ROOT / "fixtures" / "legacy-home")]]


@pytest.mark.parametrize("name", NAMES)
def test_every_writing_command_exits_3_with_one_line_and_the_bytes_unchanged(files, name, tmp_path):
    db = load(name, tmp_path)
    before = file_digests(db)
    (tmp_path / "o").mkdir()
    other = load(name.replace("fresh", "v17-opened-by") if name.startswith("fresh") else FRESH[0], tmp_path / "o")
    for args in [*WRITES, ["merge", str(other)]]:
        done = run(db, *args)
        assert done.returncode == 3, (args, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "newer than the newest layout this tool knows" in lines[0], (args, lines)
        assert file_digests(db) == before, args


@pytest.mark.parametrize("name", NAMES)
def test_status_counts_as_hermes_counts(files, name):
    db, shown = files[name]
    status = answer(db, "status")
    assert (status["sessions"], status["messages"]) == (shown["session_count"], shown["message_count"])


@pytest.mark.parametrize("name", NAMES)
def test_the_session_list_is_hermes_list_and_all_adds_what_it_hides(files, name):
    db, shown = files[name]
    listed = answer(db, "sessions", "list", "--limit", "1000")["sessions"]
    assert {s["id"] for s in listed} == set(shown["list_sessions_rich"])
    everything = answer(db, "sessions", "list", "--all", "--limit", "1000")["sessions"]
    folded = {s["lineage_root_id"] for s in everything if s.get("lineage_root_id")}
    # Hermes' list with every filter off lists a compression chain's sessions one by one; --all shows
    # the chain as its live tip, as the default list does (its root is the tip's lineage_root_id)
    assert {s["id"] for s in everything} | folded == set(shown["list_sessions_rich_all"])


@pytest.mark.parametrize("name", FRESH)
def test_archived_hidden_and_delegated_sessions_are_out_of_the_list_and_in_all(files, name):
    db, shown = files[name]
    listed = {s["id"] for s in answer(db, "sessions", "list")["sessions"]}
    everything = {s["id"] for s in answer(db, "sessions", "list", "--all")["sessions"]}
    hidden = {"20261207_096000_aaaa0008", "20261207_093500_dddd0005"}  # archived, a subagent's
    hidden |= {"20261207_099000_dddd0011"} & set(shown["made"])  # hidden (schema 26 on)
    assert not hidden & listed and hidden <= everything


@pytest.mark.parametrize("name", NAMES)
def test_search_finds_what_hermes_search_messages_finds(files, name):
    db, shown = files[name]
    for flags, key in (([], "search"), (["--all"], "search_inactive")):
        for word, hits in shown[key].items():
            done = run(db, "search", word, "--limit", "1000", "--json", *flags)
            assert done.returncode == (0 if hits else 1), (word, done.stderr)
            found = json.loads(done.stdout)["results"]
            assert sorted(r["id"] for r in found) == sorted(h[0] for h in hits), (word, flags)


@pytest.mark.parametrize("name", NAMES)
def test_a_session_shows_the_messages_hermes_get_messages_returns(files, name):
    db, shown = files[name]
    for session, messages in shown["messages"].items():
        found = answer(db, "sessions", "show", session)["messages"]
        assert [m["id"] for m in found] == [m["id"] for m in messages], session
        assert [m["content"] for m in found] == [m["content"] for m in messages], session
        everything = answer(db, "sessions", "show", session, "--all")["messages"]
        assert [m["id"] for m in everything] == shown["messages_all"][session], session


@pytest.mark.parametrize("name", NAMES)
def test_export_carries_every_column_the_file_has(files, name, tmp_path):
    db, _ = files[name]
    out = tmp_path / "out.jsonl"
    assert run(db, "export", "-o", str(out)).returncode == 0
    conn = sqlite3.connect(db)
    try:
        columns = {t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")} for t in ("sessions", "messages")}
        prompts = dict(conn.execute("SELECT id, system_prompt FROM sessions"))
        if "system_prompt_hash" in columns["sessions"]:
            prompts |= dict(conn.execute("SELECT s.id, p.prompt FROM sessions s "
                                         "JOIN system_prompts p ON p.hash = s.system_prompt_hash"))
    finally:
        conn.close()
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(prompts)
    for line in lines:
        assert columns["sessions"] <= set(line["session"])
        assert all(columns["messages"] - {"id", "session_id"} <= set(m) for m in line["messages"])
        # the system prompt a later Hermes keeps once in system_prompts, as its get_session reads it
        assert line["session"]["system_prompt"] == prompts[line["session"]["id"]]


@pytest.mark.parametrize("change", [
    "DELETE FROM system_prompts",  # no prompt kept once: each session's inline one
    "ALTER TABLE system_prompts RENAME COLUMN prompt TO body",  # a fork's table of that name
], ids=["without-rows", "other-columns"])
def test_a_system_prompts_table_hermes_does_not_read_leaves_the_inline_prompt(tmp_path, change):
    db = load("fresh-v31", tmp_path)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("UPDATE sessions SET system_prompt = 'inline prompt of ' || id")
        conn.execute(change)
        inline = dict(conn.execute("SELECT id, system_prompt FROM sessions"))
    finally:
        conn.close()
    before = file_digests(db)
    out = tmp_path / "out.jsonl"
    assert run(db, "export", "-o", str(out)).returncode == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {line["session"]["id"]: line["session"]["system_prompt"] for line in lines} == inline
    for args in (["sessions", "list"], ["search", "hidden", "--all"], ["sessions", "stats"]):
        answer(db, *args)
    assert file_digests(db) == before


def _add_children(db: Path) -> dict[str, str]:
    """Beside the two oldest top-level sessions: a /branch child (its marker), a branch child before the
    marker (its parent ended 'branched'), one started before that parent ended (no branch), and a
    reset child before its marker (on its parent's own session_key, the parent ended at a reset)."""
    with sqlite3.connect(db) as conn:
        (branched, started), (reset, reset_at) = conn.execute(
            "SELECT id, started_at FROM sessions WHERE parent_session_id IS NULL ORDER BY started_at LIMIT 2"
        ).fetchall()
        conn.execute("UPDATE sessions SET ended_at = ?, end_reason = 'branched' WHERE id = ?", (started + 10, branched))
        conn.execute("UPDATE sessions SET session_key = 'agent:main:telegram:dm:1', ended_at = ?, "
                     "end_reason = 'session_reset' WHERE id = ?", (reset_at + 10, reset))
        rows = {"marked": (branched, json.dumps({"_branched_from": branched}), started + 5, None),
                "branched": (branched, None, started + 20, None),
                "early": (branched, None, started + 1, None),
                "reset": (reset, None, reset_at + 30, "agent:main:telegram:dm:1")}
        for name, (parent, config, at, session_key) in rows.items():
            conn.execute("INSERT INTO sessions (id, source, started_at, parent_session_id, model_config, session_key) "
                         "VALUES (?, 'telegram', ?, ?, ?, ?)", (f"child_{name}", at, parent, config, session_key))
    return {name: f"child_{name}" for name in rows}


def listed(db: Path, *options: str) -> set[str]:
    return {row["id"] for row in answer_any(db, "sessions", "list", "--limit", "100", *options)["sessions"]}


def answer_any(db: Path, *args: str) -> dict[str, Any]:
    done = run(db, *args, "--json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_a_later_hermes_lists_branch_and_reset_children_as_conversations_of_their_own(tmp_path):
    db = load("fresh-v26", tmp_path)
    children = _add_children(db)
    shown = listed(db)
    assert {children["marked"], children["branched"], children["reset"]} <= shown
    assert children["early"] not in shown
    assert answer_any(db, "sessions", "list", "--limit", "100")["total"] >= len(shown)
    assert shown <= listed(db, "--all")


@pytest.mark.parametrize("dump, lists_branches", [("chain-v17.sql", True), ("chain-v10.sql", True),
                                                   ("chain-v9.sql", False), ("chain-v6.sql", False)])
def test_a_known_layout_lists_a_branch_child_from_10_and_a_reset_child_never(tmp_path, dump, lists_branches):
    db = tmp_path / "known.db"
    load_sql((ROOT / "fixtures" / "hermes" / dump).read_text(encoding="utf-8"), db)
    with sqlite3.connect(db) as conn:
        if not conn.execute("SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'session_key'").fetchone():
            conn.execute("ALTER TABLE sessions ADD COLUMN session_key TEXT")  # (from v17): the same rows go in
    children = _add_children(db)
    shown = listed(db)
    assert (children["marked"] in shown) is lists_branches and (children["branched"] in shown) is lists_branches
    assert children["early"] not in shown and children["reset"] not in shown
    report = answer_any(db, "sessions", "list", "--limit", "100")
    assert report["total"] == len(shown)
