"""The pipe between the importing process and its reader: framed pickles one way, one-byte
acknowledgements the other.

The importing process opens with one request, pickled whole: `Read` (these files, planned against
that database), or `Find` (the files under these paths: discovery then runs in the reader too, and
when the database does not exist yet, so that there is nothing to plan against, the reader reads on
at once). A reader asked to `Find` answers "found" first; one that did not read on then waits for
a `Read`. Every other message is the reader's: "staging", then a "batch" per batch, then "done" (or
"error"); each batch is acknowledged with one ACK byte once it is committed.
"""

from __future__ import annotations

import gc
import pickle
import struct
from datetime import tzinfo
from pathlib import Path
from typing import IO, Any, NamedTuple

# Batches the reader may have staged before the writer has committed them: enough to ride out a
# run of slow-to-read sessions, few enough to keep the reader's memory and disk use flat (a batch
# is at most ~4 MiB of text).
READ_AHEAD = 4
ACK = b"+"

class Read(NamedTuple):
    """Read these files (paths as text), planned against `plan_against` (None: no database)."""

    plan_against: Path | None
    files: list[str]
    tz: tzinfo | None
    source: str | None


class Find(NamedTuple):
    """Find the files under `paths` (as text) for an import into `db`; read them at once, planned
    against no database, when `db` is unclaimed (core/paths.py)."""

    db: Path
    paths: list[str]
    tz: tzinfo | None
    source: str | None


# Each frame: a marker, the pickle's length, the pickle. The marker tells a frame from stray
# output (a sitecustomize that prints) and a garbled length from a real one.
_MARKER = b"HST\x01"
_HEADER = struct.Struct("<4sQ")
_LARGEST = 2**36  # no batch comes near; a length beyond this is not one


class BrokenChannel(Exception):
    """The reader's pipe ended, or carried something that is not a frame."""


def send(out: IO[bytes], message: tuple[Any, ...]) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEADER.pack(_MARKER, len(data)))
    out.write(data)
    out.flush()


def _skip_to_marker(pipe: IO[bytes]) -> bytes:
    """The header of the first frame, passing over up to 64 KiB that the reader's interpreter
    printed before the reader took its stdout over (a sitecustomize that prints)."""
    seen = b""
    while not seen.endswith(_MARKER) and len(seen) <= 2**16:
        byte = pipe.read(1)
        if not byte:
            break
        seen += byte
    return seen[-len(_MARKER):] + pipe.read(_HEADER.size - len(_MARKER))


def receive(pipe: IO[bytes], first: bool = False) -> tuple[Any, ...]:
    """One message; BrokenChannel when the pipe ends before a whole one arrived or holds no frame.

    The pickle is read whole, then loaded with the cyclic GC paused: rows sent in memory are
    ~10^5 new tuples and strings that hold no cycles, and collections triggered by their
    allocation would otherwise take about a third of the loading time."""
    header = _skip_to_marker(pipe) if first else pipe.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise BrokenChannel("its pipe ended")
    marker, size = _HEADER.unpack(header)
    if marker != _MARKER or size > _LARGEST:
        raise BrokenChannel(f"it wrote something else than a batch to its pipe ({header!r})")
    data = pipe.read(size)
    if len(data) < size:
        raise BrokenChannel("its pipe ended inside a message")
    paused = gc.isenabled()
    gc.disable()
    try:
        message: tuple[Any, ...] = pickle.loads(data)
    except Exception as exc:  # any unpickling failure means the same: no batch
        raise BrokenChannel(f"a message could not be read ({exc})") from exc
    finally:
        if paused:
            gc.enable()
    return message
