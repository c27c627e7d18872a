"""The pipe between the importing process and its reader: length-prefixed pickles one way,
one-byte acknowledgements the other."""

from __future__ import annotations

import gc
import pickle
import struct
from typing import Any, BinaryIO

# Batches the reader may have staged before the writer has committed them: enough to ride out a
# run of slow-to-read sessions, few enough to keep the reader's memory and disk use flat (a batch
# is at most ~4 MiB of text).
READ_AHEAD = 4
ACK = b"+"

_HEADER = struct.Struct("<Q")


def send(out: BinaryIO, message: tuple[Any, ...]) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEADER.pack(len(data)))
    out.write(data)
    out.flush()


def receive(pipe: BinaryIO) -> tuple[Any, ...]:
    """One message; EOFError when the pipe ends before a whole one arrived.

    The pickle is read whole, then loaded with the cyclic GC paused: rows sent in memory are
    ~10^5 new tuples and strings that hold no cycles, and collections triggered by their
    allocation would otherwise take about a third of the loading time."""
    header = pipe.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError("the reader's pipe ended")
    (size,) = _HEADER.unpack(header)
    data = pipe.read(size)
    if len(data) < size:
        raise EOFError("the reader's pipe ended inside a message")
    paused = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(data)
    finally:
        if paused:
            gc.enable()
