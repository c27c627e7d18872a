"""Which texts a redacted copy's text could stand for: Hermes' secret masks (agent/redact.py).

From mid 2026 Hermes runs message text through its secret redaction before it writes the JSON
session snapshot, while state.db and the gateway's JSONL keep the text as said. A snapshot's
message then differs from the stored one only where a mask stands, and is the same message.

A mask stands for what redact.py could have made it from, and nothing else:
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
Where the mask stands narrows it further, as redact.py's patterns do: after ``=``, a quote, ``:``
(a header, a YAML key), ``/`` (``scheme://TOKEN@``) or an Authorization scheme word any value; at
the start, after whitespace or punctuation (or an escape such as ``\\n``) only a token with one of
the vendor prefixes (``sk-``, ``ghp_``, ``eyJ``, ... : PREFIXES) or a Zhipu key; inside a word
nothing (``Loading...done`` is text). Each mask also stands for itself (a text can hold an
ellipsis or markdown ``***``), and all text outside the masks must be equal, character for
character. Not modelled, so such a copy stays a message of its own (kept, never lost): a value
redact.py masks with whitespace in it (a quoted JSON value ``"my pass phrase"``, a vault value
with spaces), the separators its JSON and env passes rewrite (``"token":"x"`` -> ``"token": "***"``,
``KEY = x`` -> ``KEY=***``), a plugin's own patterns, a token split by control characters, and
``[redaction-unavailable]`` (redact_for_egress's whole-text fallback), and a text with more than
_MOST_CANDIDATES places a mask could start (a dump of dots or stars), which is compared as it is.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

# Each mask's shape, looked for at every position (one can start inside another's text: ``KEY=00000....0000``
# holds a head/tail mask from ``=00000`` and from ``00000.``; which one redact.py made, the match decides).
# Each shape holds a fixed text at a fixed distance from its start (its anchor): only where that text
# is found is the shape tried (trying every position of a long text cost ~150 ms a megabyte, paid for
# every stored text with an ellipsis a re-import reads).
_MASKS = tuple((re.compile(f"(?=({shape}))"), anchor, offset) for shape, anchor, offset in (
    (r"\[REDACTED PRIVATE KEY\]", "[REDACTED PRIVATE KEY]", 0),
    (r"(?P<long_phone>\+\d{3})\*{4}(?P<long_phone_end>\d{4})(?![A-Za-z0-9])", "****", 4),
    (r"(?P<short_phone>\+\d)\*{4}(?P<short_phone_end>\d{2})(?![A-Za-z0-9])", "****", 2),
    (r"«redacted:(?P<label>[^\s…»]+)…»", "«redacted:", 0),
    (r"(?P<sentinel>«redacted-(?:vault-)?secret»)", "«redacted-", 0),
    (r"(?P<head>\S{6})\.\.\.(?P<tail>\S{4})", "...", 6),
    (r"(?P<stars>\*\*\*)", "***", 0),
))
# The characters mask_secret removes before it measures a token and takes its head and tail.
_CONTROL = "\x00-\x1f\x7f\x80-\x9f\u200b-\u200f\u202a-\u202e\u2060-\u2064"
_PEM = re.compile(r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----")
# Every body character of redact.py's prefix patterns and JWTs (Codex tokens and JWTs hold '=').
_BODY = "A-Za-z0-9_.=-"
_RUNS = {"token": re.compile(rf"[^\s{_CONTROL}]*"), "run": re.compile(r"\S*"), "digits": re.compile(r"\d*"),
         "body": re.compile(rf"[{_BODY}]*")}
# The literal prefixes of redact.py's _PREFIX_PATTERNS, and the JWT's: what a token redact.py masks
# outside an assignment, a field or a header starts with.
PREFIXES = (
    "sk-", "ghp_", "github_pat_", "gho_", "ghu_", "ghs_", "ghr_", "xapp-", "xoxb-", "xoxa-", "xoxp-", "xoxr-",
    "xoxs-", "AIza", "pplx-", "fal_", "fc-", "bb_live_", "gAAAA", "AKIA", "sk_live_", "sk_test_", "rk_live_", "SG.",
    "hf_", "r8_", "npm_", "pypi-", "dop_v1_", "doo_v1_", "am_", "sk_", "tvly-", "exa_", "gsk_", "syt_", "retaindb_",
    "hsk-", "mem0_", "brv_", "xai-", "ntn_", "fw-", "fw_", "fpk_", "glpat-", "gloas-", "gldt-", "glrt-", "glrtr-",
    "glcbt-", "glptt-", "glft-", "glimt-", "glagent-", "glsoat-", "glffct-", "glwt-", "GR1348941", "pk-lf-", "eyJ",
)
_SHORT = 17  # _mask_token masks a token below 18 characters as ***
# What may stand before a mask of any value: an assignment's '=', a field's quote, a header's or a YAML
# key's ':', a URL's '/' (scheme://TOKEN@) — or an Authorization header's scheme word.
_ANY_VALUE_AFTER = frozenset("=:\"'/")
_AUTH_SCHEME = re.compile(r"(?:Proxy-)?Authorization:\s*[A-Za-z][\w.+-]*\s+$", re.IGNORECASE)
_AFTER_ESCAPE = re.compile(r"(?:\\[A-Za-z]|\\u[0-9a-fA-F]{4}|\\x[0-9a-fA-F]{2})$")
_ZHIPU_HEAD = re.compile(r"[0-9a-f]{6}")
Context = Literal["any", "prefixed", "none"]
_CHEAP_GATE = ("...", "***", "«redacted", "[REDACTED PRIVATE KEY]")
# A text with more places a mask could start is taken as text: comparing it would cost too much.
_MOST_CANDIDATES = 2000
# Past this many candidate positions a match is given up (never assumed): a mask over a huge run.
_MOST_POSITIONS = 200_000

RunKind = Literal["token", "run", "digits", "body"]


@dataclass(frozen=True)
class Gap:
    """A run of `least` to `most` characters of one kind, which a mask hid."""

    least: int
    most: int | None
    kind: RunKind


@dataclass(frozen=True)
class PemBlock:
    """A private key block, which ``[REDACTED PRIVATE KEY]`` hid."""


@dataclass(frozen=True)
class PrefixedToken:
    """A token that starts with one of PREFIXES, of at most `most` characters, which a mask hid."""

    most: int


Atom = str | Gap | PemBlock | PrefixedToken


def _context(before: str) -> Context:
    """What redact.py can have masked right after `before`: any value (after an assignment's '=', a
    quote, a header's or YAML key's ':'), only a prefixed token (at the start, after whitespace or
    punctuation, after an escape such as ``\\n``), or nothing (inside a word)."""
    if not before:
        return "prefixed"
    last = before[-1]
    if last in _ANY_VALUE_AFTER:
        return "any"
    if last.isspace():
        stripped = before.rstrip(" \t")
        return "any" if stripped.endswith(":") or _AUTH_SCHEME.search(before[-80:]) else "prefixed"
    if last.isalnum() or last in "_-":
        return "prefixed" if _AFTER_ESCAPE.search(before[-6:]) else "none"
    return "prefixed"


def _prefixed_head(head: str) -> bool:
    """Whether a head/tail mask's head can begin a prefixed token (or a Zhipu key: 32 hex digits first)."""
    return bool(_ZHIPU_HEAD.fullmatch(head)) or any(
        head.startswith(prefix) if len(prefix) <= len(head) else prefix.startswith(head) for prefix in PREFIXES)


@dataclass(frozen=True)
class Mask:
    """A mask in a redacted text: where it stands and what it can have hidden there."""

    start: int
    end: int
    hidden: tuple[Atom, ...]


@dataclass(frozen=True)
class Masked:
    """A text with the masks it may hold (each may be text as well: an ellipsis, markdown ``***``)."""

    text: str
    masks: tuple[Mask, ...]  # by start


def _stands_for(match: re.Match[str], context: Context) -> tuple[Atom, ...] | None:
    """What the mask can have hidden where it stands (None: nothing, it is text)."""
    group = match.groupdict()
    if match.group(1).startswith("[REDACTED"):
        return (PemBlock(),)
    if group.get("long_phone"):
        return (group["long_phone"], Gap(1, 8, "digits"), group["long_phone_end"])
    if group.get("short_phone"):
        return (group["short_phone"], Gap(4, 4, "digits"), group["short_phone_end"])
    if group.get("label"):
        return (group["label"], Gap(1, None, "run"))
    if group.get("sentinel"):  # a vault value is replaced wherever it stands
        return (Gap(1, None, "run"),)
    if context == "none":
        return None
    if head := group.get("head"):
        if context == "any":
            return (head, Gap(8, None, "token"), group["tail"])
        return (head, Gap(8, None, "body"), group["tail"]) if _prefixed_head(head) else None
    return (Gap(1, None, "run"),) if context == "any" else (PrefixedToken(_SHORT),)


# A gap's texts are compared with each other (align.pair_in_gaps), so their masks are kept, but only
# for texts up to this size: the cache holds each text, and 256 tool outputs of megabytes would stay
# in memory for the rest of the import.
_CACHED_CHARS = 64 * 1024


def masked(text: str) -> Masked | None:
    """The masks a redacted text may hold; None when it holds none."""
    return _masked_cached(text) if len(text) <= _CACHED_CHARS else _masked(text)


@functools.lru_cache(maxsize=256)
def _masked_cached(text: str) -> Masked | None:
    return _masked(text)


def _masked(text: str) -> Masked | None:
    if not any(gate in text for gate in _CHEAP_GATE):
        return None
    masks = []
    looked_at = 0
    for shape, anchor, offset in _MASKS:
        for match in _matches(shape, text, anchor, offset):
            looked_at += 1
            if looked_at > _MOST_CANDIDATES:
                return None  # a dump of dots or stars: compared as it is (a copy of its own at worst)
            start = match.start()
            hidden = _stands_for(match, _context(text[max(0, start - 80):start]))
            if hidden is not None:
                masks.append(Mask(start, start + len(match.group(1)), hidden))
    return Masked(text, tuple(sorted(masks, key=lambda m: (m.start, m.end)))) if masks else None


def _matches(shape: re.Pattern[str], text: str, anchor: str, offset: int) -> Iterator[re.Match[str]]:
    """What shape.finditer(text) gives, trying only the positions `offset` before each `anchor`."""
    found = text.find(anchor)
    while found != -1:
        if found >= offset and (match := shape.match(text, found - offset)):
            yield match
        found = text.find(anchor, found + 1)


def has_mask(text: str) -> bool:
    return masked(text) is not None


def _advance(atom: Atom, text: str, positions: set[int]) -> set[int]:
    if isinstance(atom, str):
        return {p + len(atom) for p in positions if text.startswith(atom, p)}
    if isinstance(atom, PemBlock):
        return {m.end() for p in positions if (m := _PEM.match(text, p))}
    if isinstance(atom, PrefixedToken):
        return _prefixed(text, positions, atom.most)
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


def _prefixed(text: str, positions: set[int], most: int) -> set[int]:
    reached: set[int] = set()
    for p in positions:
        for prefix in PREFIXES:
            if text.startswith(prefix, p):
                body = _RUNS["body"].match(text, p + len(prefix))
                end = min(body.end() if body else p + len(prefix), p + most)
                reached.update(range(p + len(prefix) + 1, end + 1))
    return reached


def could_redact_to(original: str, redacted: Masked) -> bool:
    """Whether redact.py could have turned `original` into `redacted.text`: outside the masks taken
    as masks the texts are equal, and each such mask stands for what it can have hidden."""
    text, masks = redacted.text, redacted.masks
    last_end = max(mask.end for mask in masks)
    if not (original.startswith(text[:masks[0].start]) and original.endswith(text[last_end:])):
        return False  # what comes before every mask and after them all is text in both (the usual miss)
    starts = [mask.start for mask in masks]
    seen: set[tuple[int, int]] = set()
    pending = [(0, 0)]  # (where the redacted text goes on, where the original does)
    tried = 0  # positions looked at: masks over long runs without whitespace reach each other's
    while pending:
        at, there = pending.pop()
        if len(text) - at == len(original) - there and text[at:] == original[there:]:
            return True
        # Only the masks from `at` on: walking past the earlier ones for every position was
        # quadratic (seconds for a text of 1900 masks with no whitespace between them).
        for index in range(bisect.bisect_left(starts, at), len(masks)):
            mask = masks[index]
            literal = text[at:mask.start]
            if not original.startswith(literal, there):
                break  # a later mask's literal run holds this one
            ends = _hidden_ends(mask.hidden, original, there + len(literal))
            tried += len(ends)
            if tried > _MOST_POSITIONS:
                return False
            for end in ends:
                if (mask.end, end) not in seen:
                    seen.add((mask.end, end))
                    pending.append((mask.end, end))
    return False


def _hidden_ends(atoms: tuple[Atom, ...], original: str, start: int) -> set[int]:
    positions = {start}
    for atom in atoms:
        positions = _advance(atom, original, positions)
        if not positions:
            break
    return positions


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
