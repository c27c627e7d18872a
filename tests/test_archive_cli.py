"""The archive's bad input: one line, the contract's exit code, no password shown, nothing changed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from archive_helpers import build_store, run
from click.testing import CliRunner

from hermes_state_tools.archive.connect import mask
from hermes_state_tools.cli import main


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_state_tools", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_an_unreachable_server_is_one_line_naming_it_without_the_password(tmp_path: Path) -> None:
    db = build_store(tmp_path / "a.db", sessions=1, messages=1)
    url = f"postgresql://hermes:s3cret-pw@127.0.0.1:{_free_port()}/archive"
    done = _cli("--db", str(db), "archive", "push", url, "--json")
    assert done.returncode == 69
    assert "s3cret-pw" not in done.stderr + done.stdout
    assert f"postgresql://hermes@127.0.0.1:{url.split(':')[3].split('/')[0]}/archive" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and '"ok": false' in done.stdout.replace('":false', '": false')


def test_a_refused_login_is_69(archive_url: str) -> None:
    code, _, err = run("archive", "status", archive_url.replace("postgres@", "no_such_role:pw@"))
    assert code == 69 and "no_such_role" in err and ":pw@" not in err


@pytest.mark.parametrize("url", ["nonsense", "mysql://u:pw@host/db", "postgresql://u:pw@host:99999/db",
                                 "postgresql://u:pw@host:port/db", ""])
def test_a_malformed_url_is_a_usage_error(url: str) -> None:
    code, _, err = run("archive", "status", url)
    assert code == 2 and len(err.splitlines()) == 1 and ":pw@" not in err


def test_no_url_and_no_environment_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_ARCHIVE_URL", raising=False)
    code, _, err = run("archive", "status")
    assert code == 2 and "HERMES_ARCHIVE_URL" in err


def test_without_psycopg_the_archive_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what an install without the extra imports
    result = CliRunner().invoke(main, ["archive", "status", "postgresql://x@127.0.0.1/y"])
    assert result.exit_code == 2 and "hermes-state-tools[archive]" in result.stderr


def test_the_core_commands_never_load_psycopg(tmp_path: Path) -> None:
    db = build_store(tmp_path / "a.db", sessions=1, messages=1)
    probe = ("import sys; from hermes_state_tools.cli import main; "
             "main(['--db', sys.argv[1], 'status'], standalone_mode=False); "
             "assert 'psycopg' not in sys.modules, 'psycopg loaded'")
    done = subprocess.run([sys.executable, "-c", probe, str(db)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_damaged_local_file_is_65_and_the_archive_untouched(tmp_path: Path, archive_url: str) -> None:
    db = build_store(tmp_path / "a.db", sessions=1, messages=1)
    with db.open("r+b") as f:  # the page size in the SQLite header, destroyed
        f.seek(16)
        f.write(b"\x00\x03")
    code, _, err = run("--db", db, "archive", "push", archive_url)
    assert code == 65, err
    code, doc, _ = run("archive", "status", archive_url, "--json")
    assert doc["schema_version"] is None


@pytest.mark.parametrize(("text", "shown"), [
    ("postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"),
    ("host=h password=secret user=u", "host=h password=*** user=u"),
    ("postgresql://u@h/db?password=secret&sslmode=require", "postgresql://u@h/db?password=***&sslmode=require"),
])
def test_a_password_is_masked_wherever_it_is_written(text: str, shown: str) -> None:
    assert mask(text) == shown


def _as_role(url: str, grants: list[str]) -> tuple[str, str]:
    """A new login role with `grants` on the archive at `url`; (its URL, its name)."""
    import uuid

    import psycopg

    role = f"hst_role_{uuid.uuid4().hex[:8]}"
    dbname = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT CONNECT, TEMPORARY ON DATABASE {dbname} TO {role}")
        for grant in grants:
            conn.execute(grant.format(role=role))
    return url.replace("postgres@", f"{role}@"), role


def _drop_role(url: str, role: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


PUSH_GRANTS = ["GRANT USAGE ON SCHEMA hermes TO {role}", "GRANT SELECT ON hermes.schema_version TO {role}",
               "GRANT SELECT, INSERT, UPDATE ON hermes.hosts, hermes.sessions, hermes.messages TO {role}"]


def test_the_documented_least_privilege_role_pushes_and_cannot_delete(tmp_path: Path, archive_url: str) -> None:
    run("--db", build_store(tmp_path / "first.db", "f", sessions=1, messages=1), "archive", "push", archive_url)
    role_url, role = _as_role(archive_url, PUSH_GRANTS)
    try:
        code, doc, err = run("--db", build_store(tmp_path / "a.db", sessions=2, messages=3), "archive", "push",
                             role_url, "--host", "h", "--json")
        assert code == 0 and doc["messages_pushed"] == 6, err
        import psycopg

        with psycopg.connect(role_url) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("DELETE FROM hermes.messages")
    finally:
        _drop_role(archive_url, role)


def test_a_role_without_the_grants_is_one_line_not_a_traceback(tmp_path: Path, archive_url: str) -> None:
    run("--db", build_store(tmp_path / "first.db", "f", sessions=1, messages=1), "archive", "push", archive_url)
    role_url, role = _as_role(archive_url, PUSH_GRANTS[:2])
    try:
        code, _, err = run("--db", build_store(tmp_path / "a.db", sessions=1, messages=1), "archive", "push",
                           role_url, "--host", "h")
        assert code == 1 and "permission denied" in err and len(err.splitlines()) == 1
    finally:
        _drop_role(archive_url, role)
