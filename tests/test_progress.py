"""The step line of long single-call commands: silent for a quick run, then the step running now."""

from __future__ import annotations

import io
import sys
import time

from hermes_state_tools.cli.progress import StepBar
from hermes_state_tools.maintenance.checks import all_checks, check_file, check_name


def test_a_long_run_shows_its_steps_and_a_quick_one_shows_nothing(monkeypatch):
    quick_out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", quick_out)
    began = time.monotonic()
    bar = StepBar("check")
    bar("integrity")
    bar.close()
    if time.monotonic() - began < StepBar._DELAY_S:  # only a stalled machine takes longer
        assert quick_out.getvalue() == ""

    slow_out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", slow_out)
    bar = StepBar("check")
    bar.expect(2)
    bar("integrity")
    # one statement running for a while: the bar's own thread draws it, with no further call
    deadline = time.monotonic() + 60  # a safety net only: on a quiet machine it shows after about a second
    while "step 1 of 2" not in slow_out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    shown_while_running = slow_out.getvalue()
    bar("fts sync")
    bar.close()
    assert "check [00:0" in shown_while_running and "step 1 of 2: integrity" in shown_while_running


def test_check_names_every_step_it_runs(tmp_path):
    from damage import build_healthy

    seen: list[str] = []
    check_file(build_healthy(tmp_path / "state.db"), progress=seen.append)
    # every check once; the one waiting for the snapshot's answer last, so the others overlap with it
    assert sorted(seen) == sorted(check_name(c) for c in all_checks()) and seen[-1] == "fts sync"
    seen.clear()
    check_file(tmp_path / "state.db", quick=True, progress=seen.append)
    assert sorted(seen) == sorted(check_name(c) for c in all_checks(quick=True)) and seen[-1] == "integrity"


class _Counted(list[str]):
    """Hears what a StepBar hears: the steps planned and each step's name."""

    planned = 0

    def __call__(self, name: str) -> None:
        self.append(name)

    def expect(self, more: int) -> None:
        self.planned = max(self.planned, len(self)) + more


def test_check_and_maintain_announce_every_step_they_run(tmp_path):
    from damage import build_healthy

    from hermes_state_tools.maintenance.maintain import maintain_file

    seen = _Counted()
    check_file(build_healthy(tmp_path / "state.db"), progress=seen)
    assert seen.planned == len(seen) == len(all_checks())
    seen = _Counted()
    maintain_file(tmp_path / "state.db", progress=seen)
    assert seen.planned == len(seen) > len(all_checks())
