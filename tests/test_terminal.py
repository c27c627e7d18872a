"""What a person sees on a real terminal (a pty): `sessions show` readable, through the pager, in
colour unless NO_COLOR; progress bars drawn on stderr; colour and width rules on their own."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from hermes_state_tools import SessionDB
from hermes_state_tools.cli import render

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LOG = "\n".join(f"step {n:02d}: compiled module_{n}" for n in range(1, 41))


def on_pty(args: list[str], env: dict[str, str], rows: int = 200, columns: int = 100) -> tuple[int, str]:
    """Run `hermes-state ARGS` with stdin, stdout and stderr on a pseudo-terminal; (exit code, screen text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "hermes_state_tools", *args], cwd=ROOT, stdin=slave,
                            stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def terminal_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PAGER", "HERMES_STATE_PAGER", "COLUMNS")}
    return {**env, "TERM": "xterm-256color", **extra}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("20260519_140233_c0ffee12", "discord")
        db.append_message("20260519_140233_c0ffee12", "user", "is the build green?\nand the deploy?")
        db.append_message("20260519_140233_c0ffee12", "tool", json.dumps({"output": LOG, "exit_code": 0}),
                          tool_name="terminal")
        db.append_message("20260519_140233_c0ffee12", "assistant", "Both green. 東京 too.")
    return path


def test_a_person_sees_a_readable_session_through_the_pager(store: Path) -> None:
    code, screen = on_pty(["--db", str(store), "sessions", "show", "c0ffee12"],
                          terminal_env(PAGER="sed 's/^/| /'"))
    assert code == 0
    text = ANSI.sub("", screen)
    lines = text.splitlines()
    assert all(line.startswith("| ") for line in lines if line.strip())  # every line came through the pager
    assert "|     is the build green?" in lines and "|     and the deploy?" in lines
    assert "|     step 01: compiled module_1" in lines and "|     step 40: compiled module_40" in lines
    assert "more lines (--full shows all)" in text and "step 20:" not in text
    assert "|     Both green. 東京 too." in lines and "\\n" not in text
    assert ANSI.search(screen)  # roles in colour on a terminal


def test_no_color_and_no_pager_on_a_terminal(store: Path) -> None:
    code, screen = on_pty(["--db", str(store), "sessions", "show", "c0ffee12", "--no-pager", "--full"],
                          terminal_env(NO_COLOR="1", PAGER="sed 's/^/| /'"))
    assert code == 0 and not ANSI.search(screen) and "| " not in screen
    assert "    step 20: compiled module_20" in screen


@pytest.mark.skipif(shutil.which("less") is None, reason="less is not installed")
def test_the_default_pager_less_shows_one_screen_and_quits(store: Path) -> None:
    code, screen = on_pty(["--db", str(store), "sessions", "show", "c0ffee12"], terminal_env())
    assert code == 0 and "Both green. 東京 too." in ANSI.sub("", screen)


def test_search_highlights_in_colour_on_a_terminal(store: Path) -> None:
    code, screen = on_pty(["--db", str(store), "search", "deploy"], terminal_env())
    assert code == 0 and ">>>" not in screen and "\x1b[" in screen and "deploy" in ANSI.sub("", screen)


def test_the_list_fits_the_terminal_it_runs_on(store: Path) -> None:
    code, screen = on_pty(["--db", str(store), "sessions", "list"], terminal_env(), columns=60)
    assert code == 0
    assert all(render.display_width(ANSI.sub("", line)) <= 60 for line in screen.splitlines())


def test_a_person_sees_the_import_progress_bar(tmp_path: Path) -> None:
    code, screen = on_pty(["--db", str(tmp_path / "state.db"), "import-jsonl", str(ROOT / "fixtures" / "legacy-home")],
                          terminal_env())
    assert code == 1  # the sample's truncated line, as the README says
    assert re.search(r"files: 100%\|.*\| \d+/\d+", screen), screen[:2000]
    assert "imported" in screen


def test_colour_rules() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert render.use_colour(Tty(), {}) and not render.use_colour(io.StringIO(), {})
    assert not render.use_colour(Tty(), {"NO_COLOR": "1"}) and not render.use_colour(Tty(), {"TERM": "dumb"})
    assert render.use_colour(Tty(), {"NO_COLOR": ""})  # no-color.org: set and empty means unset
    assert render.highlight("a >>>b<<< c", False) == "a >>>b<<< c"


@pytest.mark.parametrize(("text", "width"), [
    ("abc", 3), ("東京", 4), ("周末计划 🏔️ #2", 14), ("🏔️", 2), ("e\u0301", 1), ("👨\u200d👩\u200d👧", 2),
    ("👍🏽", 2), ("한국어", 6), ("ｱｲｳ", 3), ("", 0),
])
def test_display_width(text: str, width: int) -> None:
    assert render.display_width(text) == width


def test_truncate_never_splits_a_glyph_and_tables_line_up() -> None:
    assert render.truncate("周末计划 🏔️ #2", 8) == "周末计…"
    assert render.truncate("👨\u200d👩\u200d👧xyz", 3) == "👨\u200d👩\u200d👧…"
    lines = render.table(["id", "title", "n"], [["a", "周末计划 🏔️ #2", "1"], ["b", "plain", "22"]])
    assert len({render.display_width(line[:line.rindex(" ") + 1]) for line in lines}) == 1


def test_the_pager_is_off_without_a_terminal_or_when_asked() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert render.should_page(False, Tty(), {"PAGER": "less"})
    assert not render.should_page(False, io.StringIO(), {"PAGER": "less"})
    assert not render.should_page(True, Tty(), {"PAGER": "less"})
    assert not render.should_page(False, Tty(), {"PAGER": "cat"})
    assert not render.should_page(False, Tty(), {"PAGER": ""})
    assert not render.should_page(False, Tty(), {"PAGER": "no-such-pager-here -R"})  # printed instead
