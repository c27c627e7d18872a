"""What a person reads on a terminal: display width (CJK, emoji), tables fitted to the terminal,
colour only on a terminal (never with NO_COLOR), and a pager the way git uses one."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

import click

_ZWJ, _VS15, _VS16 = "\u200d", "\ufe0e", "\ufe0f"
ELLIPSIS = "…"


def _zero_width(ch: str) -> bool:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf", "Cc"):
        return True
    cp = ord(ch)
    return (0x1160 <= cp <= 0x11FF            # Hangul medial vowels and final consonants
            or 0xFE00 <= cp <= 0xFE0F         # variation selectors
            or 0x1F3FB <= cp <= 0x1F3FF       # skin tones join the emoji before them
            or 0xE0020 <= cp <= 0xE007F)      # emoji tag characters


def clusters(text: str) -> Iterator[tuple[str, int]]:
    """(glyph, columns): a character with its combining marks, variation selector, skin tone and
    ZWJ-joined followers is one glyph; VS16 makes it 2 columns (🏔️), VS15 1."""
    current, width, joined = "", 0, False
    for ch in text:
        if current and (joined or _zero_width(ch)):
            current += ch
            width = 2 if ch == _VS16 else 1 if ch == _VS15 else width
            joined = ch == _ZWJ
            continue
        if current:
            yield current, width
        current, joined = ch, False
        width = 0 if _zero_width(ch) else 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    if current:
        yield current, width


def display_width(text: str) -> int:
    return sum(width for _, width in clusters(text))


def truncate(text: str, width: int) -> str:
    """At most `width` columns, cut between glyphs with an ellipsis when it does not fit."""
    if display_width(text) <= width:
        return text
    out: list[str] = []
    used = 0
    for glyph, columns in clusters(text):
        if used + columns > width - 1:
            break
        out.append(glyph)
        used += columns
    return "".join(out) + ELLIPSIS if width > 0 else ""


def pad(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


def one_line(text: str) -> str:
    """Newlines and control characters as spaces: a table cell is one line."""
    return " ".join("".join(" " if unicodedata.category(c) == "Cc" else c for c in text).split())


def terminal_width() -> int | None:
    """The width to fit tables to: $COLUMNS or the terminal's; None on a pipe (nothing is cut)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((80, 24)).columns


def table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None,
          shrink: Sequence[int] = (), min_width: int = 8, colour: bool = False,
          drop: Sequence[int] = ()) -> list[str]:
    """Left-aligned columns measured in display columns; with `width`, the free-text columns in
    `shrink` (title, preview) give way, widest first, until a line fits; when even their least
    width does not fit, the columns in `drop` go, in that order."""
    cells = [list(header), *([one_line(cell) for cell in row] for row in rows)]
    widths = [max(display_width(row[i]) for row in cells) for i in range(len(header))]
    if width:
        kept = list(range(len(header)))
        for index in drop:
            least = sum(min(widths[i], min_width) if i in shrink else widths[i] for i in kept)
            if least + 2 * (len(kept) - 1) <= width:
                break
            kept.remove(index)
        cells = [[row[i] for i in kept] for row in cells]
        widths = [widths[i] for i in kept]
        shrink = [kept.index(i) for i in shrink if i in kept]
    excess = sum(widths) + 2 * (len(widths) - 1) - width if width else 0
    while excess > 0:
        candidates = [i for i in shrink if widths[i] > min_width]
        if not candidates:
            break
        widest = max(candidates, key=lambda i: widths[i])
        others = max([widths[i] for i in candidates if i != widest] + [min_width])
        step = min(excess, max(widths[widest] - others, 1))
        widths[widest] -= step
        excess -= step
    lines = ["  ".join(pad(truncate(cell, w), w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in cells]
    if colour:
        lines[0] = click.style(lines[0], bold=True)
    return lines


def use_colour(stream: IO[str] | None = None, env: Mapping[str, str] | None = None) -> bool:
    """Colour on a terminal only; never with NO_COLOR set to anything (no-color.org) or TERM=dumb."""
    env = os.environ if env is None else env
    stream = sys.stdout if stream is None else stream
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_ROLE_STYLE: dict[str, dict[str, Any]] = {
    "user": {"fg": "cyan", "bold": True}, "assistant": {"fg": "green", "bold": True},
    "tool": {"fg": "yellow"}, "system": {"fg": "magenta"},
}


def role(name: str, colour: bool) -> str:
    return click.style(name, **_ROLE_STYLE.get(name, {})) if colour else name


def dim(text: str, colour: bool) -> str:
    return click.style(text, dim=True) if colour else text


def highlight(snippet: str, colour: bool, open_: str = ">>>", close: str = "<<<") -> str:
    """The search snippet's match markers as bold colour on a terminal; kept as text on a pipe."""
    if not colour:
        return snippet
    out: list[str] = []
    rest = snippet
    while open_ in rest:
        before, _, after = rest.partition(open_)
        match, found, tail = after.partition(close)
        if not found:
            break
        out += [before, click.style(match, bold=True, fg="red")]
        rest = tail
    return "".join(out) + rest


def pager_command(env: Mapping[str, str] | None = None) -> str | None:
    """HERMES_STATE_PAGER, else PAGER, else `less`; None when paging is switched off (`cat`, empty)."""
    env = os.environ if env is None else env
    for name in ("HERMES_STATE_PAGER", "PAGER"):
        if name in env:
            value = env[name].strip()
            return None if value in ("", "cat") or not _runnable(value) else value
    return "less" if shutil.which("less") else None


def _runnable(command: str) -> bool:
    """A pager that is not installed would swallow the text: print it instead."""
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return bool(words) and shutil.which(words[0]) is not None


def should_page(no_pager: bool, stream: IO[str] | None = None, env: Mapping[str, str] | None = None) -> bool:
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return not no_pager and bool(isatty and isatty()) and pager_command(env) is not None


def page(text: str, no_pager: bool = False) -> None:
    """Show `text` through the pager when stdout is a terminal (as git does), else print it."""
    command = pager_command()
    if command is None or not should_page(no_pager):
        click.echo(text)
        return
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")  # one screen: just print; keep the colours; leave the text on screen
    env.setdefault("LV", "-c")
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        click.echo(text)
        return
    try:
        assert proc.stdin is not None
        proc.stdin.write(text.encode("utf-8", "replace") + b"\n")
        proc.stdin.close()
    except BrokenPipeError:
        pass  # q in less before the end is not an error
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:
            continue  # Ctrl-C belongs to the pager, which decides when to end


def fold(text: str, full: bool = False, head: int = 12, tail: int = 6) -> list[str]:
    """Every line with `full`; else the first and last lines with a count of those between."""
    lines = text.splitlines() or [""]
    if full or len(lines) <= head + tail + 1:
        return lines
    return [*lines[:head], f"… {len(lines) - head - tail:,} more lines (--full shows all) …", *lines[-tail:]]
