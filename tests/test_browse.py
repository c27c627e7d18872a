"""`hermes-state browse`: Datasette metadata that finds the v6 search index, read-only opening, and a
real Datasette server on localhost (skipped when the `[browse]` extra is not installed)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_state_tools import SessionDB
from hermes_state_tools.cli import main
from hermes_state_tools.views.browse import datasette_command, immutable, metadata
from tests.hermes_fixtures import load as load_hermes
from tests.schema_fixtures import load_fixture

ROOT = Path(__file__).resolve().parent.parent
HAS_DATASETTE = importlib.util.find_spec("datasette") is not None


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("20260519_140233_c0ffee12", "discord", model="m1")
        db.append_message("20260519_140233_c0ffee12", "user", "check disk usage")
        db.append_message("20260519_140233_c0ffee12", "assistant", "the disk is 91% full")
        db.create_session("20260520_090000_abad1dea", "telegram", model="m2",
                          parent_session_id="20260519_140233_c0ffee12")
        db.append_message("20260520_090000_abad1dea", "user", "東京の天気は？")
        db.append_message("20260520_090000_abad1dea", "assistant", "sunny")
    return path


def test_metadata_names_the_search_index_under_the_files_stem(store: Path) -> None:
    meta = metadata(store)
    tables = meta["databases"]["state"]["tables"]
    assert tables["messages"]["fts_table"] == "messages_fts" and tables["messages"]["fts_pk"] == "id"
    assert {"source", "model"} <= set(tables["sessions"]["facets"]) and "role" in tables["messages"]["facets"]
    assert {"sessions_with_preview", "lineage", "tokens_by_model"} <= set(meta["databases"]["state"]["queries"])
    assert metadata(store.with_name("backup.db"))["databases"].keys() == {"backup"}


def test_immutable_only_for_a_copy_not_in_wal_mode(store: Path, tmp_path: Path) -> None:
    assert not immutable(store)  # Hermes's live store: WAL, may change while the server runs
    command = datasette_command(store, tmp_path / "m.json", 8001)
    assert "-i" not in command and str(store) in command
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert "-i" in datasette_command(store, tmp_path / "m.json", 8001, force_immutable=True)
    copy = tmp_path / "copy.db"
    assert CliRunner().invoke(main, ["--db", str(store), "backup", str(copy)]).exit_code == 0
    assert immutable(copy) and "-i" in datasette_command(copy, tmp_path / "m.json", 8001)


def test_browse_refuses_a_missing_file_before_starting_anything(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "nope.db"), "browse"])
    assert result.exit_code == 2 and not (tmp_path / "nope.db").exists()


def test_a_file_of_a_newer_schema_is_served_read_only_like_any_other(tmp_path: Path) -> None:
    """browse only reads: a newer Hermes' file is served (the newer-schema rule refuses only writes)."""
    path = load_fixture("trap_version_31", tmp_path)
    before = path.read_bytes()
    command = datasette_command(path, tmp_path / "m.json", 8001)
    assert str(path) in command and "--host" in command
    assert path.read_bytes() == before


def test_print_metadata_is_the_json_datasette_reads(store: Path) -> None:
    result = CliRunner().invoke(main, ["--db", str(store), "browse", "--print-metadata"])
    assert result.exit_code == 0 and json.loads(result.stdout) == metadata(store, 6)


def test_print_metadata_names_the_files_own_schema_version(tmp_path: Path) -> None:
    path = load_hermes("v17", tmp_path / "state.db")
    result = CliRunner().invoke(main, ["--db", str(path), "browse", "--print-metadata"])
    assert result.exit_code == 0 and "(schema 17)" in json.loads(result.stdout)["description"]


def test_print_metadata_of_a_missing_or_foreign_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a database\n")
    for path in (tmp_path / "missing.db", tmp_path / "notes.txt"):
        result = CliRunner().invoke(main, ["--db", str(path), "browse", "--print-metadata"])
        assert result.exit_code == 2 and result.stdout == "" and len(result.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.skipif(HAS_DATASETTE, reason="Datasette is installed here")
def test_without_datasette_browse_says_how_to_get_it(store: Path) -> None:
    result = CliRunner().invoke(main, ["--db", str(store), "browse"])
    assert result.exit_code == 2 and "pip install 'hermes-state-tools[browse]'" in result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


@pytest.mark.skipif(not HAS_DATASETTE, reason="Datasette is not installed (pip install '.[browse]'; CI installs it)")
def test_a_real_datasette_server_has_the_search_box_and_filters(store: Path) -> None:
    writer = SessionDB(store)  # a live file: the newest commit is still in the WAL
    writer._conn.execute("PRAGMA wal_autocheckpoint=0")
    writer.append_message("20260520_090000_abad1dea", "user", "one more disk question")
    port = _free_port()
    scratch = store.parent / "tmp"  # where browse keeps its metadata file while it serves
    scratch.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "hermes_state_tools", "--db", str(store), "browse",
                             "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, env={**os.environ, "TMPDIR": str(scratch)})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # until the server answers; a safety net, not a bound
        while True:
            try:
                _get(base + "/-/versions.json")
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "the server never answered"
                time.sleep(0.1)
        html = _get(f"{base}/state/messages")
        assert 'name="_search"' in html
        everything = json.loads(_get(f"{base}/state/messages.json?_size=0"))["filtered_table_rows_count"]
        found = json.loads(_get(f"{base}/state/messages.json?_search=disk&_shape=objects"))
        assert everything == 5  # the WAL's newest row included: not opened immutable
        assert found["filtered_table_rows_count"] == 3
        assert all("disk" in row["content"] for row in found["rows"])
        facets = json.loads(_get(f"{base}/state/sessions.json"))["facet_results"]
        assert {"source", "model"} <= set(facets.get("results", facets))
        lineage = json.loads(_get(f"{base}/state/lineage.json?_shape=objects&session_id=20260520_090000_abad1dea"))
        assert [row["id"] for row in lineage["rows"]] == ["20260519_140233_c0ffee12", "20260520_090000_abad1dea"]
        text = urllib.parse.quote("東京")
        substring = json.loads(_get(f"{base}/state/search_text.json?_shape=objects&text={text}"))
        assert len(substring["rows"]) == 1
        assert [d["is_mutable"] for d in json.loads(_get(base + "/-/databases.json"))] == [True]
        versions = json.loads(_get(base + "/-/versions.json"))
        assert versions["datasette"]["version"].startswith("0.")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # browse and the Datasette it started
        proc.wait(timeout=30)
        writer.close()
    assert list(scratch.iterdir()) == []  # a stopped browse removed its folder (it was left in $TMPDIR)
