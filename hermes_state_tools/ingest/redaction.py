"""Which texts a redacted copy's text could stand for: Hermes' secret masks (agent/redact.py).

From mid 2026 Hermes runs message text through its secret redaction before it writes the JSON
session snapshot, while state.db and the gateway's JSONL keep the text as said. A snapshot's
message then differs from the stored one only where a mask stands, and is the same message.

A mask stands for exactly what redact.py could have made it from, and nothing else:
- ``abcdef...wxyz`` (``_mask_token`` of a token of 18 characters or more): a run that starts with
  those 6 and ends with those 4 characters, 18 or more in all, without whitespace or control
  characters (mask_secret takes its head and tail after removing these);
- ``***`` (a shorter token, an assignment's or a field's value, a password in a URL): a
  non-empty run without whitespace;
- ``«redacted-vault-secret»``, ``«redacted-secret»``: a non-empty run without whitespace;
  ``«redacted:ghp_…»``: one that starts with the label;
- ``[REDACTED PRIVATE KEY]``: a PEM private key block, up to its first END line;
- ``+123****5678`` / ``+1****78`` (E.164 phone numbers): the digits the mask hides (1-8 for
  the long form, exactly 4 for the 8-character one).
Each mask also stands for itself (a text can hold an ellipsis or markdown ``***``), and all
text outside the masks must be equal, character for character. A value redact.py masks with
whitespace in it (a quoted JSON value ``"my pass phrase"``) and the separators its JSON and
env passes rewrite (``"token":"x"`` -> ``"token": "***"``, ``KEY = x`` -> ``KEY=***``) are not
modelled: such a copy stays a message of its own (kept, never lost).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_MASKS = re.compile(
    r"(?P<pem>\[REDACTED PRIVATE KEY\])"
    r"|(?P<long_phone>\+\d{3})\*{4}(?P<long_phone_end>\d{4})(?![A-Za-z0-9])"
    r"|(?P<short_phone>\+\d)\*{4}(?P<short_phone_end>\d{2})(?![A-Za-z0-9])"
    r"|«redacted:(?P<label>[^\s…»]+)…»"
    r"|(?P<sentinel>«redacted-(?:vault-)?secret»)"
    r"|(?P<head>\S{6})\.\.\.(?P<tail>\S{4})"
    r"|(?P<stars>\*\*\*)"
)
# The characters mask_secret removes before it measures a token and takes its head and tail.
_CONTROL = "\x00-\x1f\x7f\x80-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
_PEM = re.compile(r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----")
_RUNS = {"token": re.compile(rf"[^\s{_CONTROL}]*"), "run": re.compile(r"\S*"), "digits": re.compile(r"\d*")}
_CHEAP_GATE = ("...", "***", "«redacted", "[REDACTED PRIVATE KEY]")
# Past this many candidate positions a match is given up (never assumed): a mask over a huge run.
_MOST_POSITIONS = 200_000

RunKind = Literal["token", "run", "digits"]


@dataclass(frozen=True)
class Gap:
    """A run of `least` to `most` characters of one kind, which a mask hid."""

    least: int
    most: int | None
    kind: RunKind


@dataclass(frozen=True)
class PemBlock:
    """A private key block, which ``[REDACTED PRIVATE KEY]`` hid."""


Atom = str | Gap | PemBlock
Segment = tuple[tuple[Atom, ...], ...]  # alternatives, each a sequence of atoms


def _stands_for(match: re.Match[str]) -> tuple[Atom, ...]:
    group = match.group
    if group("pem"):
        return (PemBlock(),)
    if group("long_phone"):
        return (group("long_phone"), Gap(1, 8, "digits"), group("long_phone_end"))
    if group("short_phone"):
        return (group("short_phone"), Gap(4, 4, "digits"), group("short_phone_end"))
    if group("label"):
        return (group("label"), Gap(1, None, "run"))
    if group("head"):
        return (group("head"), Gap(8, None, "token"), group("tail"))
    return (Gap(1, None, "run"),)


def masked(text: str) -> tuple[Segment, ...] | None:
    """The text as literal pieces and masks (each: itself, or what it hid); None without a mask."""
    if not any(gate in text for gate in _CHEAP_GATE):
        return None
    segments: list[Segment] = []
    at = 0
    for match in _MASKS.finditer(text):
        if match.start() > at:
            segments.append(((text[at:match.start()],),))
        segments.append(((match.group(),), _stands_for(match)))
        at = match.end()
    if not segments:
        return None
    if at < len(text):
        segments.append(((text[at:],),))
    return tuple(segments)


def has_mask(text: str) -> bool:
    return masked(text) is not None


def _advance(atom: Atom, text: str, positions: set[int]) -> set[int]:
    if isinstance(atom, str):
        return {p + len(atom) for p in positions if text.startswith(atom, p)}
    if isinstance(atom, PemBlock):
        return {m.end() for p in positions if (m := _PEM.match(text, p))}
    reached: set[int] = set()
    runs = _RUNS[atom.kind]
    for p in positions:
        run = runs.match(text, p)
        end = run.end() if run else p
        if atom.most is not None:
            end = min(end, p + atom.most)
        reached.update(range(p + atom.least, end + 1))
        if len(reached) > _MOST_POSITIONS:
            return set()
    return reached


def could_redact_to(original: str, segments: tuple[Segment, ...]) -> bool:
    """Whether redact.py could have turned `original` into the masked text `segments` describe."""
    positions = {0}
    for alternatives in segments:
        reached: set[int] = set()
        for atoms in alternatives:
            current = positions
            for atom in atoms:
                current = _advance(atom, original, current)
                if not current:
                    break
            reached |= current
        positions = reached
        if not positions:
            return False
    return len(original) in positions


def unredacted_side(a: str, b: str) -> int | None:
    """0 when `b` is `a` with secrets masked, 1 when `a` is `b` so masked, None otherwise
    (equal texts included: they are the same message without this rule)."""
    if a == b:
        return None
    masks_b = masked(b)
    if masks_b is not None and could_redact_to(a, masks_b):
        return 0
    masks_a = masked(a)
    if masks_a is not None and could_redact_to(b, masks_a):
        return 1
    return None
