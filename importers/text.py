"""Read legacy files as bytes: split lines, fall back from UTF-8 to the file's code page, parse JSON, report
what failed. The code page is chosen once per file from all its non-UTF-8 text (codepages.py)."""

from __future__ import annotations

import json
import os
import re
from codecs import getincrementaldecoder
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from hermes_state_tools.core.jsonutil import has_wide_float
from hermes_state_tools.core.records import Problem
from hermes_state_tools.core.surrogates import has_surrogate
from hermes_state_tools.core.words import plural
from hermes_state_tools.importers.codepages import Choice, choose

BOM = b"\xef\xbb\xbf"


class JsonLine(NamedTuple):
    """One line of a JSONL file that parsed as JSON (any JSON value, not only objects)."""

    number: int  # 1-based
    value: Any


@dataclass(frozen=True)
class Document:
    """A whole-object JSON file: its value, or why there is none."""

    value: Any
    state: str  # "ok", "empty" (0 bytes or only whitespace) or "invalid"
    problems: tuple[Problem, ...] = ()


class JsonError(ValueError):
    """Bytes that are not JSON, even after the encoding fallbacks."""

    def __init__(self, message: str, codec: str) -> None:
        super().__init__(message)
        self.codec = codec


def decode(raw: bytes, page: str = "cp1252") -> tuple[str, str]:
    """Decode bytes as UTF-8, else the code page, else latin-1 (never fails); return the text and the codec."""
    for codec in ("utf-8", page):
        try:
            return raw.decode(codec), codec
        except UnicodeDecodeError:
            pass
    return raw.decode("latin-1"), "latin-1"


def parse_json(raw: bytes, page: str = "cp1252") -> tuple[Any, str]:
    """Parse JSON bytes (BOM already stripped), text that is not UTF-8 read in the file's code page;
    return the value and the codec used, or raise JsonError."""
    first: Exception | None = None
    try:
        value = orjson.loads(raw)
        if not has_wide_float(value):
            return value, "utf-8"
    except orjson.JSONDecodeError as exc:
        first = exc
    text, codec = decode(raw, page)
    try:
        # The stdlib parser also takes what Python's json.dumps wrote and orjson refuses
        # (NaN/Infinity, lone surrogate escapes, integers wider than 64 bits) and, with
        # strict=False, raw control characters inside strings that other writers left.
        return json.loads(text, strict=False), codec
    except (ValueError, RecursionError) as exc:
        raise JsonError(str(first or exc), codec) from None


def iter_json_lines(path: Path, file: str) -> Iterator[JsonLine | Problem]:
    """Yield each line of a JSONL file as a JsonLine, or a Problem for blank and unparsable lines."""
    codecs: dict[str, list[int]] = {}
    page = _CodePage(path)
    pending: tuple[int, bytes] | None = None  # held back: a failure on the last line means the writer died
    blanks: list[Problem] = []  # reported after the line before them
    for number, raw in _numbered_lines(path):
        if not raw or raw.isspace():  # isspace: what strip() removes, without copying the line
            blanks.append(Problem(file, number, "blank_line", "blank line skipped"))
            continue
        if pending is not None:
            yield from _line_items(file, *pending, codecs, page, last=False)
        yield from blanks
        blanks.clear()
        pending = (number, raw)
    if pending is not None:
        yield from _line_items(file, *pending, codecs, page, last=True)
    yield from blanks
    decoding = decoding_problem(file, codecs, page.choice)
    if decoding is not None:
        yield decoding


def _line_items(file: str, number: int, raw: bytes, codecs: dict[str, list[int]], page: _CodePage,
                last: bool) -> Iterator[JsonLine | Problem]:
    """The line's JsonLine, or its Problem(s) by the careful path with the file's code page."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        # Nearly every line: plain UTF-8 JSON. (orjson refuses lone surrogate escapes, the one
        # thing the careful path below reports in JSON it parses.)
        if not has_wide_float(value):
            yield JsonLine(number, value)
            return
    yield from _parsed_line(file, number, raw, codecs, page.codec, last)


class _CodePage:
    """A file's code page, chosen from all its non-UTF-8 text the first time a line needs it: a
    line orjson parses is UTF-8, so a file that is all UTF-8 is never read twice."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.choice: Choice | None = None
        self._known = False

    @property
    def codec(self) -> str:
        if not self._known:
            self.choice, self._known = _file_code_page(self.path), True
        return self.choice.codec if self.choice else "cp1252"


# Files up to this size are read in one call and split in C; larger ones are read line by line,
# so a transcript of hundreds of megabytes is never held twice.
WHOLE_FILE_BYTES = 4 * 2**20


def read_small(path: Path | str) -> tuple[os.stat_result, bytes | None]:
    """The file's status and its bytes, or None when it is empty or above WHOLE_FILE_BYTES. (A bare
    descriptor: a buffered file object costs more to make than reading a small file does.)"""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        status = os.fstat(fd)
        if not 0 < status.st_size <= WHOLE_FILE_BYTES:
            return status, None
        # A byte more than its size: exactly its size back is the whole file, in one call. Anything
        # else (it grew or shrank meanwhile, a short read) reads on to the end.
        chunks = [os.read(fd, status.st_size + 1)]
        if len(chunks[0]) != status.st_size:
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
        return status, b"".join(chunks)
    finally:
        os.close(fd)


def split_lines(data: bytes) -> list[bytes]:
    """A file's bytes as lines split on b"\\n" (the newline that ends the last line starts no line)."""
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()
    return lines


def _numbered_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based number, line) for each line, split on b"\\n", without a CRLF "\\r" or a BOM."""
    status, data = read_small(path)
    if data is None:
        if status.st_size:  # too big to hold twice: line by line
            with path.open("rb") as handle:
                yield from _split_lines(handle)
        return
    lines = split_lines(_old_mac_lines(data))
    if b"\r" in data or BOM in data:
        lines = [line.removesuffix(b"\r").removeprefix(BOM) for line in lines]
    yield from enumerate(lines, 1)


def _old_mac_lines(data: bytes) -> bytes:
    """The file's bytes, with old Mac line ends (CRs and no LF) made LFs when every CR-ended piece is
    JSON; else as they are (parse_json takes a raw CR inside a string)."""
    if b"\n" in data or b"\r" not in data:
        return data
    for piece in data.split(b"\r"):
        if piece.strip():
            try:
                orjson.loads(piece)
            except orjson.JSONDecodeError:
                return data
    return data.replace(b"\r", b"\n")


def _split_lines(handle: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based number, line) split on b"\\n", without the CRLF "\\r" and without a BOM."""
    for number, raw in enumerate(handle, 1):
        line = raw.removesuffix(b"\n").removesuffix(b"\r")
        # A BOM can also open a later line where files were concatenated.
        yield number, line.removeprefix(BOM)


def _parsed_line(
    file: str, number: int, raw: bytes, codecs: dict[str, list[int]], page: str, last: bool
) -> Iterator[JsonLine | Problem]:
    """The line's JsonLine or Problem, and a notice when its text holds a lone surrogate."""
    parsed = _parse_line(file, number, raw, codecs, page, last)
    yield parsed
    if isinstance(parsed, JsonLine) and b"\\u" in raw and (offsets := lone_surrogates(raw, parsed.value)):
        yield surrogate_problem(file, number, offsets)


# A \uD800-\uDBFF escape not followed by a \uDC00-\uDFFF one, or one of those not preceded by the first.
_LONE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                   rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def lone_surrogates(raw: bytes, value: Any) -> list[int]:
    """Offsets of the unpaired surrogate escapes in JSON text (json.dumps writes a cut emoji so); the
    parsed value decides, since an escaped backslash before "u" only looks like one."""
    offsets = [found.start() for found in _LONE.finditer(raw)]
    return offsets if offsets and _holds_surrogate(value) else []


def _holds_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return has_surrogate(value)
    if isinstance(value, dict):
        return any(_holds_surrogate(k) or _holds_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_surrogate(v) for v in value)
    return False



def surrogate_problem(file: str, line: int | None, offsets: list[int]) -> Problem:
    detail = (f"{plural(len(offsets), 'unpaired UTF-16 surrogate')} (half an emoji, cut by the writer), which UTF-8 "
              "cannot store; stored as U+FFFD")
    return Problem(file, line, "lone_surrogate", detail)


def _parse_line(
    file: str, number: int, raw: bytes, codecs: dict[str, list[int]], page: str, last: bool
) -> JsonLine | Problem:
    """Parse one non-blank line; a failure on the last line means the writer died mid-line."""
    try:
        value, codec = parse_json(raw, page)
    except JsonError as exc:
        codec, value = exc.codec, exc
    if codec != "utf-8":
        codecs.setdefault(codec, []).append(number)
    if not isinstance(value, JsonError):
        return JsonLine(number, value)
    kind = "truncated_line" if last else "invalid_json"
    cause = "last line is cut off" if last else "not valid JSON"
    return Problem(file, number, kind, f"{cause} ({value}); {len(raw)} bytes: {_preview(raw)}", True)


def _preview(raw: bytes) -> str:
    """Return the start of a bad line, short enough for a report."""
    text = decode(raw[:60])[0]
    return repr(text + ("..." if len(raw) > 60 else ""))


def _file_code_page(path: Path) -> Choice | None:
    """The code page of a file's non-UTF-8 lines, chosen from all of them; None when it is all UTF-8."""
    with path.open("rb") as handle:
        checker = getincrementaldecoder("utf-8")()
        try:
            for block in iter(lambda: handle.read(1 << 22), b""):
                checker.decode(block)
            checker.decode(b"", final=True)
            return None
        except UnicodeDecodeError:
            pass
        handle.seek(0)
        return choose(line for _, line in _split_lines(handle) if not _is_utf8(line))


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _evidence_note(choice: Choice | None) -> str:
    if choice is None:
        return ""
    note = f"; {choice.codec} chosen from the file's text"
    if choice.score < 0:
        note += " (no code page tried reads it as words of one language: it may be mojibake, check it)"
    elif choice.runner_up:
        note += f" ({choice.runner_up} would read it differently and nearly as well: check these lines)"
    return note


def decoding_problem(file: str, codecs: dict[str, list[int]], choice: Choice | None = None) -> Problem | None:
    """Return one notice for the lines of a file that were not UTF-8, or None when all were."""
    if not codecs:
        return None
    numbers = sorted(n for lines in codecs.values() for n in lines)
    counts = ", ".join(f"{len(lines)} as {codec}" for codec, lines in sorted(codecs.items()))
    shown = ", ".join(map(str, numbers[:10])) + (", ..." if len(numbers) > 10 else "")
    were = "was" if len(numbers) == 1 else "were"
    detail = (f"{plural(len(numbers), 'line')} {were} not UTF-8 and decoded ({counts}){_evidence_note(choice)}: "
              f"lines {shown}")
    return Problem(file, numbers[0], "decoded_cp1252", detail)


def read_document(path: Path, file: str) -> Document:
    """Read a whole-object JSON file (BOM and encoding fallbacks included)."""
    raw = path.read_bytes().removeprefix(BOM)
    if not raw.strip():
        return Document(None, "empty", (Problem(file, None, "empty_file", "file is empty"),))
    choice = None if _is_utf8(raw) else choose([raw])
    try:
        value, codec = parse_json(raw, choice.codec if choice else "cp1252")
    except JsonError as exc:
        problem = Problem(file, None, "invalid_json", f"file is not valid JSON ({exc})", True)
        return Document(None, "invalid", (problem,))
    problems: tuple[Problem, ...] = ()
    if b"\\u" in raw and (offsets := lone_surrogates(raw, value)):
        problems = (surrogate_problem(file, raw.count(b"\n", 0, offsets[0]) + 1, offsets),)
    if codec == "utf-8":
        return Document(value, "ok", problems)
    detail = f"file is not UTF-8; decoded as {codec}{_evidence_note(choice)}"
    return Document(value, "ok", (Problem(file, None, "decoded_cp1252", detail), *problems))
