"""What a newcomer meets: help layout, quiet closed pipes, clear refusals, readable sessions, tables
that fit, no colour on a pipe, validated search options, and the grammar of the reports."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_state_tools import SessionDB
from hermes_state_tools.cli import main, render
from hermes_state_tools.cli.maintenance import _human_repair
from hermes_state_tools.tables import extras

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[")
LONG_OUTPUT = "\n".join(f"line {n:03d} of the build log" for n in range(1, 301))


def cli(*args: object, env: dict[str, str] | None = None, input: str | None = None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env, input=input)


def run(*args: object, **kwargs) -> subprocess.CompletedProcess[bytes]:
    """The real program, as a person runs it."""
    return subprocess.run([sys.executable, "-m", "hermes_state_tools", *map(str, args)], cwd=ROOT,
                          capture_output=True, timeout=120, **kwargs)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("20260519_140233_c0ffee12", "discord", model="m1")
        db.append_message("20260519_140233_c0ffee12", "user", "is the staging deploy green?")
        db.append_message("20260519_140233_c0ffee12", "tool", json.dumps({"output": LONG_OUTPUT, "exit_code": 0}),
                          tool_name="terminal")
        mirrored = db.append_message("20260519_140233_c0ffee12", "assistant", "Nightly backup finished.")
        db.create_session("20260520_090000_abad1dea", "telegram")
        db.set_session_title("20260520_090000_abad1dea", "周末计划 🏔️ #2")
        db.append_message("20260520_090000_abad1dea", "user", "周末去爬山吗？ " * 20)
        db.create_session("20260521_100000_0badcafe", "cli")
        db.set_session_title("20260521_100000_0badcafe", "plain title")
        db.append_message("20260521_100000_0badcafe", "user", "disk usage is high")
        with db._conn:
            extras.ensure_tables(db._conn)
            extras.put_message_extras(db._conn, [(mirrored, "20260519_140233_c0ffee12",
                                                  {"mirror": True, "mirror_source": "cron"})])
    return path


# -- help ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [[], ["sessions"]])
def test_a_group_without_its_command_prints_clicks_multi_line_help(args: list[str]) -> None:
    result = run(*args)
    assert result.returncode == 2 and result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert lines[0].startswith("Usage: hermes-state") and len(lines) > 10
    assert max(len(line) for line in lines) <= 100 and "Commands:" in lines


def test_root_help_lists_every_command_whole_with_exit_codes_and_hermes_home() -> None:
    text = cli("--help", env={"COLUMNS": "80"}).stdout
    commands = text.split("Commands:", 1)[1]
    assert "…" not in commands and "..." not in commands
    for code in ("65", "70", "74", "75"):
        assert re.search(rf"^\s+{code}\s+\S", text, re.MULTILINE)
    assert "$HERMES_HOME/state.db" in text and "_HERMES_STATE_COMPLETE=bash_source" in text


@pytest.mark.parametrize("columns", ["50", "60", "80", "100"])
def test_option_names_are_never_broken_at_a_hyphen(columns: str) -> None:
    for command in (["upgrade"], ["export"], ["sessions", "show"], ["search"], ["prune"]):
        text = cli(*command, "--help", env={"COLUMNS": columns}).stdout
        assert not re.search(r"-\n", text), (command, text)


def test_format_and_limit_have_help() -> None:
    assert "re-importable" in cli("export", "--help").stdout.split("Options:", 1)[1].split("--format", 1)[1]
    for command in (["sessions", "list"], ["search"]):
        after = cli(*command, "--help").stdout.split("Options:", 1)[1].split("--limit", 1)[1]
        assert re.match(r" INTEGER RANGE\s+\S", after) and "Show at most" in after


def test_help_command_prints_the_commands_help() -> None:
    assert cli("help", "sessions", "show").stdout == cli("sessions", "show", "--help").stdout
    assert cli("help").stdout == cli("--help").stdout
    result = cli("help", "nosuch")
    assert result.exit_code == 2 and "no command 'nosuch'" in result.stderr


def test_search_help_says_what_works_for_cjk() -> None:
    text = cli("search", "--help").stdout
    assert "東京 nginx" in text and '"東京の天気"' in text and "--" in text and "OR" in text


# -- pipes, refusals, --db -------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["jsonl", "json", "md"])
def test_a_reader_that_stops_early_ends_the_export_quietly(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "big.db"
    with SessionDB(path) as db:
        for n in range(300):
            db.create_session(f"s{n:04d}", "cli")
            db.append_message(f"s{n:04d}", "user", "x" * 2000)
    proc = subprocess.Popen([sys.executable, "-m", "hermes_state_tools", "--db", str(path), "export",
                             "--format", fmt], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.read(10)
    proc.stdout.close()  # what `| head -c 10` does
    stderr = proc.stderr.read() if proc.stderr else b""
    assert proc.wait(timeout=60) == 0 and stderr == b""


def test_export_has_no_json_and_says_so(store: Path) -> None:
    result = cli("--db", store, "export", "--json")
    assert result.exit_code == 2 and result.stdout == ""
    assert "export has no --json: it writes data, not a report (use --format json" in result.stderr
    assert "go after the command" not in result.stderr
    assert "go after the command" in cli("--json", "status").stderr


def test_export_and_backup_refuse_a_missing_folder(tmp_path: Path, store: Path) -> None:
    for args in (["export", "-o", tmp_path / "nope" / "x.jsonl"], ["backup", tmp_path / "nope" / "x.db"]):
        result = cli("--db", store, *args)
        assert result.exit_code == 2
        assert f"folder {tmp_path / 'nope'} does not exist" in result.stderr
        assert len(result.stderr.splitlines()) == 1
        assert not (tmp_path / "nope").exists()


def test_backup_into_a_folder_writes_a_dated_file_there(tmp_path: Path, store: Path) -> None:
    folder = tmp_path / "backups"
    folder.mkdir()
    result = cli("--db", store, "backup", f"{folder}/", "--json")
    assert result.exit_code == 0, result.output
    [made] = list(folder.iterdir())
    assert re.fullmatch(r"state\.db\.bak-\d{8}T\d{6}Z", made.name)
    assert json.loads(result.stdout)["path"] == str(made)


def test_db_may_come_after_the_command(store: Path) -> None:
    result = cli("status", "--db", store, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["path"] == str(store)
    assert json.loads(cli("sessions", "list", "--json", "--db", store).stdout)["total"] == 3
    # After `sessions` too: it was "No such option '--db'".
    result = cli("sessions", "--db", store, "list", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["total"] == 3


# -- search ----------------------------------------------------------------------------------------

def test_a_query_may_start_with_a_hyphen(store: Path) -> None:
    with SessionDB(store) as db:
        db.append_message("20260521_100000_0badcafe", "user", "run make -build now")
    for args in (["-build"], ["--", "-build"], ["-build", "--limit", "5"]):
        result = cli("--db", store, "search", "--json", *args)
        assert result.exit_code == 0, result.output
        # Searched as text, not taken as an option (or as NOT): the phrase "-build" is the word build.
        assert "20260521_100000_0badcafe" in [r["session_id"] for r in json.loads(result.stdout)["results"]]
    result = cli("--db", store, "search", "disk", "--limt", "3")
    assert result.exit_code == 2 and "No such option '--limt'" in result.stderr


def test_search_words_need_no_quotes(store: Path) -> None:
    quoted = json.loads(cli("--db", store, "search", "disk usage", "--json").stdout)
    assert json.loads(cli("--db", store, "search", "disk", "usage", "--json").stdout) == quoted


def test_role_and_source_are_validated(store: Path) -> None:
    result = cli("--db", store, "search", "disk", "--role", "bogus")
    assert result.exit_code == 2 and "'bogus' is not one of 'user', 'assistant', 'tool', 'system'" in result.stderr
    result = cli("--db", store, "search", "disk", "--source", "nosuch")
    assert result.exit_code == 2
    assert "no session has source 'nosuch' (known sources: cli, discord, telegram)" in result.stderr
    assert cli("--db", store, "sessions", "list", "--source", "nosuch").exit_code == 2
    assert cli("--db", store, "search", "disk", "--source", "cli", "--role", "user").exit_code == 0


def test_export_refuses_a_source_no_session_has_and_writes_no_file(store: Path, tmp_path: Path) -> None:
    # It wrote an empty export and exited 0: a typo'd --source looked like "nothing to export".
    out = tmp_path / "telegram.jsonl"
    result = cli("--db", store, "export", "--source", "telegarm", "-o", out)
    assert result.exit_code == 2 and not out.exists()
    assert result.stderr.count("\n") == 1 and "no session has source 'telegarm' (known sources: " in result.stderr
    assert cli("--db", store, "export", "--source", "telegram", "-o", out).exit_code == 0 and out.stat().st_size


def test_cjk_and_latin_in_any_order_through_the_cli(store: Path) -> None:
    with SessionDB(store) as db:
        db.append_message("20260521_100000_0badcafe", "user", "東京 の nginx が落ちた")
    for query in (["東京", "nginx"], ["nginx", "東京"], ["東京*"], ["東京", "OR", "nosuchword"]):
        doc = json.loads(cli("--db", store, "search", *query, "--json").stdout)
        assert [r["snippet"] for r in doc["results"]] == [">>>東京<<< の nginx が落ちた"] or "nginx" in query[0]
        assert len(doc["results"]) == 1


def test_no_single_letter_substring_fallback(store: Path) -> None:
    doc = json.loads(cli("--db", store, "search", "a AND OR b", "--json").stdout)
    assert doc["results"] == []


def test_search_highlight_is_markers_on_a_pipe(store: Path) -> None:
    out = cli("--db", store, "search", "disk").stdout
    assert ">>>disk<<<" in out and not ANSI.search(out)


# -- sessions --------------------------------------------------------------------------------------

def test_show_prints_real_newlines_folds_tool_output_and_marks_mirrors(store: Path) -> None:
    out = cli("--db", store, "sessions", "show", "c0ffee12").stdout
    assert "\\n" not in out and "    line 001 of the build log\n" in out
    assert "more lines (--full shows all)" in out and "line 150 of" not in out and "line 300 of" in out
    assert "assistant (mirrored from cron):" in out
    full = cli("--db", store, "sessions", "show", "c0ffee12", "--full").stdout
    assert all(f"line {n:03d} of" in full for n in range(1, 301)) and "more lines" not in full
    assert not ANSI.search(out)


def test_the_show_header_fits_80_columns_with_a_long_model_name(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("20260310_184211_a1c4e9b2", "telegram", model="anthropic/claude-opus-4.6-20260301")
        db.append_message("20260310_184211_a1c4e9b2", "user", "check disk usage")
    head = cli("--db", path, "sessions", "show", "a1c4e9b2", env={"COLUMNS": "80"}).stdout.splitlines()[:2]
    assert head == ["session 20260310_184211_a1c4e9b2  source telegram",
                    "model anthropic/claude-opus-4.6-20260301"]
    piped = cli("--db", path, "sessions", "show", "a1c4e9b2").stdout.splitlines()[0]
    assert piped == "session 20260310_184211_a1c4e9b2  source telegram  model anthropic/claude-opus-4.6-20260301"


def test_stats_fit_80_columns_in_two_tables_and_a_pipe_gets_one(store: Path) -> None:
    labels = ["sessions", "messages", "input", "output", "cache read", "cache write", "reasoning", "est. $",
              "actual $"]
    narrow = cli("--db", store, "sessions", "stats", env={"COLUMNS": "80"}).stdout.splitlines()
    assert all(render.display_width(line) <= 80 for line in narrow)
    assert all(sum(label in line for line in narrow) == 3 for label in labels)  # total, by model, by source
    piped = cli("--db", store, "sessions", "stats").stdout.splitlines()
    headers = [line for line in piped if "sessions  messages" in line]
    assert len(headers) == 3 and all(all(label in line for label in labels) for line in headers)


def test_the_pager_is_not_used_without_a_terminal(store: Path, tmp_path: Path) -> None:
    marker = tmp_path / "paged"
    env = {"PAGER": f"touch {marker}; cat"}
    result = cli("--db", store, "sessions", "show", "c0ffee12", env=env)
    assert result.exit_code == 0 and "staging deploy" in result.stdout and not marker.exists()
    piped = run("--db", store, "sessions", "show", "c0ffee12", env={**os.environ, **env})
    assert piped.returncode == 0 and b"staging deploy" in piped.stdout and not marker.exists()


def test_an_ambiguous_prefix_lists_the_matches(store: Path) -> None:
    result = cli("--db", store, "sessions", "show", "2026")
    assert result.exit_code == 2
    assert ("matches 3 sessions: 20260519_140233_c0ffee12, 20260520_090000_abad1dea, 20260521_100000_0badcafe"
            in result.stderr)
    assert json.loads(cli("--db", store, "sessions", "show", "0bad", "--json").stdout)["session"]["id"] == (
        "20260521_100000_0badcafe")
    assert "no session with id" in cli("--db", store, "sessions", "show", "ffff").stderr


def test_list_has_a_footer_and_a_total(store: Path) -> None:
    out = cli("--db", store, "sessions", "list", "--limit", "2").stdout.splitlines()
    assert out[-1] == "2 of 3 sessions"
    doc = json.loads(cli("--db", store, "sessions", "list", "--limit", "2", "--json").stdout)
    assert doc["total"] == 3 and len(doc["sessions"]) == 2


def test_a_title_stored_as_a_blob_is_listed_as_shown(store: Path) -> None:
    conn = sqlite3.connect(store)
    with conn:
        conn.execute("UPDATE sessions SET title = X'c4' WHERE id = '20260521_100000_0badcafe'")
    conn.close()
    result = cli("--db", store, "sessions", "list")
    assert result.exit_code == 0, result.stderr
    assert "b'\\xc4' · disk usage is high" in result.stdout
    assert "title: b'\\xc4'" in cli("--db", store, "sessions", "show", "0badcafe").stdout


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_the_list_fits_the_terminal_and_cjk_rows_line_up(store: Path, columns: int) -> None:
    out = cli("--db", store, "sessions", "list", env={"COLUMNS": str(columns)}).stdout.splitlines()
    rows = out[:-1]
    assert all(render.display_width(line) <= columns for line in rows) and len(rows) == 4
    assert [line.split()[0] for line in rows[1:]] == ["20260521_100000_0badcafe", "20260520_090000_abad1dea",
                                                       "20260519_140233_c0ffee12"]  # ids are never cut
    header = rows[0]
    about_at = render.display_width(header[:header.index("title · preview")])
    cjk_row = rows[2]  # the title column starts at the same screen column on a CJK/emoji title's row
    assert render.display_width(cjk_row[:cjk_row.index("周末计划")]) == about_at
    assert render.display_width(rows[1][:rows[1].index("plain title")]) == about_at


def test_lineage_goes_from_the_root_down(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("a_root", "cli")
        db.create_session("b_mid", "cli", parent_session_id="a_root")
        db.create_session("c_tip", "cli", parent_session_id="b_mid")
        db.create_session("d_child", "cli", parent_session_id="c_tip")
    out = cli("--db", path, "sessions", "lineage", "c_tip").stdout.splitlines()
    assert [line.split()[0] for line in out] == ["a_root", "b_mid", "*", "d_child"]
    assert out[1].startswith("  b_mid") and out[2].startswith("    * c_tip") and out[3].startswith("      d_child")


def test_a_compression_chain_lists_like_its_lineage(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("a_root", "cli")
        db.append_message("a_root", "user", "first part")
        db.create_session("b_tip", "cli", parent_session_id="a_root")
        db.append_message("b_tip", "user", "second part")
        db._conn.execute("UPDATE sessions SET started_at = 1000, ended_at = 2000, end_reason = 'compression' "
                         "WHERE id = 'a_root'")
        db._conn.execute("UPDATE sessions SET started_at = 2001 WHERE id = 'b_tip'")
    [row] = json.loads(cli("--db", path, "sessions", "list", "--json").stdout)["sessions"]
    lineage = json.loads(cli("--db", path, "sessions", "lineage", row["id"], "--json").stdout)
    assert row["id"] == "b_tip" and row["lineage_root_id"] == lineage["root_id"] == "a_root"
    assert row["chain_started_at"] == 1000 and row["chain_sessions"] == 2 and row["chain_message_count"] == 2
    human = cli("--db", path, "sessions", "list").stdout
    assert "(2 sessions)" in human


# -- reports ---------------------------------------------------------------------------------------

def test_the_markdown_export_fences_tool_output(store: Path) -> None:
    out = cli("--db", store, "export", "--session", "c0ffee12", "--format", "md").stdout
    tool = out.split("### tool", 1)[1]
    assert "```text\nline 001 of the build log\n" in tool and "line 300 of the build log\n" in tool
    assert tool.split("line 300 of the build log\n", 1)[1].split("\n", 2)[0].startswith("exit_code")


def test_check_and_repair_count_in_words(tmp_path: Path) -> None:
    doc = {"problems": [{"kind": "k", "detail": "d"}], "changes": [{"kind": "k", "detail": "d"}],
           "unfixed": [], "dry_run": False, "backup": "/x/state.db.bak-1"}
    text = _human_repair(doc)
    assert text.startswith("found 1 problem; changed 1 thing:") and "backup taken first: /x/state.db.bak-1" in text


def test_vacuum_says_when_the_file_grew(store: Path) -> None:
    from hermes_state_tools.cli.maintenance import _human_vacuum

    grew = _human_vacuum({"path": "x", "bytes_before": 110_592, "bytes_after": 114_688})
    assert "4,096 bytes larger" in grew and "no free space" in grew
    assert "bytes smaller" in _human_vacuum({"path": "x", "bytes_before": 9, "bytes_after": 5})
    result = cli("--db", store, "vacuum")
    assert result.exit_code == 0 and re.search(r"(smaller|larger|the same size)", result.stdout)


def test_upgrade_of_a_current_schema_does_not_say_6_to_6() -> None:
    from hermes_state_tools.cli.upgrade import _human

    doc = {"dry_run": False, "steps": [], "repairs": ["recreated index idx_x"], "renamed_titles": [],
           "created": False, "from_version": 6, "to_version": 6, "backup": None}
    text = _human(doc)
    assert "6 -> 6" not in text and text.startswith("schema is at version 6; repaired:")


def test_the_prune_question_counts_in_words(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_state_tools.cli import maintenance as maintenance_cli

    monkeypatch.setattr(maintenance_cli, "stdin_is_terminal", lambda: True)
    with SessionDB(store) as db:
        db._conn.execute("UPDATE sessions SET started_at = 1000, ended_at = 2000, end_reason = 'done' "
                         "WHERE id = '20260521_100000_0badcafe'")
    result = cli("--db", store, "prune", "--older-than", "1", input="n\n")
    assert "Delete 1 ended session started more than 1 day ago and their 1 message?" in result.stderr



def test_shell_completion_works_as_the_help_says() -> None:
    env = {**os.environ, "_HERMES_STATE_COMPLETE": "bash_complete", "COMP_WORDS": "hermes-state search --role a",
           "COMP_CWORD": "3"}
    assert run(env=env).stdout.decode().split() == ["plain,assistant"]
    source = run(env={**os.environ, "_HERMES_STATE_COMPLETE": "bash_source"}).stdout.decode()
    assert "_hermes_state_completion()" in source and "complete " in source
