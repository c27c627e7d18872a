"""`hermes-state schedule` and contrib/: units systemd accepts, a cron line cron can run, in step."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hermes_state_tools.cli import main
from hermes_state_tools.maintenance.schedule import Installation, render

ROOT = Path(__file__).resolve().parent.parent
ALICE = Installation("/home/alice/.local/bin/hermes-state", Path("/home/alice/.hermes"),
                     Path("/home/alice/.hermes/logs"), "alice")
CONTRIB = {"systemd/hermes-state-maintain.service": "systemd-service",
           "systemd/hermes-state-maintain.timer": "systemd-timer",
           "cron/hermes-state.crontab": "cron", "logrotate/hermes-state.conf": "logrotate"}


@pytest.mark.parametrize(("name", "kind"), CONTRIB.items())
def test_contrib_files_are_what_schedule_prints_for_alice(name: str, kind: str) -> None:
    assert (ROOT / "contrib" / name).read_text("utf-8") == render(kind, ALICE)


def _unit(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return parser


def test_the_units_parse_and_say_what_cron_and_alerting_need() -> None:
    service = _unit(render("systemd-service", ALICE))
    assert service["Service"]["ExecStart"] == "/home/alice/.local/bin/hermes-state maintain --json --no-progress"
    assert service["Service"]["Environment"] == "HERMES_HOME=/home/alice/.hermes"
    assert service["Service"]["Type"] == "oneshot"
    assert set(service["Service"]["RestartPreventExitStatus"].split()) == {"1", "2", "3", "65", "70", "74"}
    timer = _unit(render("systemd-timer", ALICE))
    assert timer["Timer"]["Persistent"] == "true" and timer["Install"]["WantedBy"] == "timers.target"
    for code in ("65 damaged", "74 I/O", "75 busy", "1 problems"):
        assert code in render("systemd-service", ALICE) and code in render("cron", ALICE)


def test_the_services_documentation_link_names_a_page_the_repository_holds() -> None:
    link = _unit(render("systemd-service", ALICE))["Unit"]["Documentation"]
    page = re.fullmatch(r"https://github\.com/hermes-state-tools/hermes-state-tools/blob/main/(\S+)", link)
    assert page and (ROOT / page[1]).is_file()


def test_the_cron_line_sets_path_and_hermes_home_and_has_no_percent_sign() -> None:
    lines = [line for line in render("cron", ALICE).splitlines() if line and not line.startswith("#")]
    env = dict(line.split("=", 1) for line in lines if re.match(r"^[A-Z_]+=", line))
    assert env["HERMES_HOME"] == "/home/alice/.hermes" and "/home/alice/.local/bin" in env["PATH"].split(":")
    jobs = [line for line in lines if not re.match(r"^[A-Z_]+=", line)]
    assert len(jobs) == 2
    for job in jobs:
        fields = job.split(None, 5)
        assert all(re.fullmatch(r"[\d*,/-]+", field) for field in fields[:5]), job
        assert "%" not in fields[5]  # cron turns % into a newline
    assert subprocess.run(["sh", "-n", "-c", jobs[0].split(None, 5)[5]]).returncode == 0


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_accepts_the_units(tmp_path: Path) -> None:
    here = Installation(f"{sys.executable} -m hermes_state_tools", tmp_path / "home", tmp_path / "home" / "logs", "me")
    (tmp_path / "hermes-state-maintain.service").write_text(render("systemd-service", here))
    (tmp_path / "hermes-state-maintain.timer").write_text(render("systemd-timer", here))
    result = subprocess.run(["systemd-analyze", "verify", str(tmp_path / "hermes-state-maintain.service"),
                             str(tmp_path / "hermes-state-maintain.timer")], capture_output=True, text=True)
    if "Failed to initialize manager" in result.stderr or "Failed to lookup" in result.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    assert "hermes-state-maintain" not in result.stderr, result.stderr


def _venv(root: Path, with_script: bool) -> Path:
    """A venv's bin/: python a link to the base interpreter (as `python3 -m venv` makes it)."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(Path(sys.executable).resolve())
    if with_script:
        (bin_dir / "hermes-state").write_text("#!/bin/sh\n", "utf-8")
    return bin_dir


def test_schedule_runs_the_script_that_is_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _venv(tmp_path / "my venv", with_script=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["my venv/bin/hermes-state", "schedule"])  # run as .venv/bin/hermes-state
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/hermes-state")  # another install on PATH
    result = CliRunner().invoke(main, ["schedule", "--print", "systemd-service"])
    assert result.exit_code == 0
    assert f"ExecStart='{bin_dir / 'hermes-state'}' maintain" in result.stdout  # quoted: the path has a space
    cron = CliRunner().invoke(main, ["schedule", "--print", "cron"]).stdout
    assert f"PATH={bin_dir}:/usr/local/bin" in cron
    assert "flock -n /" in cron and f" '{bin_dir / 'hermes-state'}' maintain --json" in cron


def test_schedule_keeps_the_venv_interpreter_unresolved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base interpreter a venv's python links to does not have this package: never resolve it."""
    bin_dir = _venv(tmp_path / "venv", with_script=False)
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "venv" / "lib" / "hermes_state_tools" / "__main__.py")])
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    result = CliRunner().invoke(main, ["schedule", "--print", "systemd"])
    assert result.exit_code == 0
    assert f"ExecStart={bin_dir / 'python'} -m hermes_state_tools maintain" in result.stdout
    assert "[Timer]" in result.stdout and "[Service]" in result.stdout
    assert CliRunner().invoke(main, ["schedule", "--print", "nosuch"]).exit_code == 2


def test_schedule_uses_the_script_beside_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = _venv(tmp_path / "venv", with_script=True)
    monkeypatch.setattr(sys, "argv", ["-m"])
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    result = CliRunner().invoke(main, ["schedule", "--print", "systemd-service"])
    assert f"ExecStart={bin_dir / 'hermes-state'} maintain" in result.stdout


def test_the_job_maintains_the_database_named_with_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    other = tmp_path / "elsewhere" / "state.db"
    for kind in ("cron", "systemd-service"):
        named = CliRunner().invoke(main, ["--db", str(other), "schedule", "--print", kind]).stdout
        default = CliRunner().invoke(main, ["schedule", "--print", kind]).stdout
        assert f"--db {other.resolve()} maintain --json" in named  # the group option, before the command
        assert "--db" not in default  # $HERMES_HOME/state.db: the job's own default
