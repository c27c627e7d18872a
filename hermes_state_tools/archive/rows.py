"""A local row as the archive holds it, and back: the archive's real columns, everything else (a later
layout's columns, and a value its column's type cannot hold) whole in `extra`, plus a hash of the row.

The hash covers the file's column names and every value (and the row's hst_ extra data), so a changed
row, or a file whose layout gained a column, is sent again; `prune --archived` compares the same hash.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from hermes_state_tools.archive.schema import INDEXED_CHARS, MESSAGE_COLUMNS, SESSION_COLUMNS, ArchiveColumn
from hermes_state_tools.core import jsonutil
from hermes_state_tools.search.sanitize import contains_cjk

_INT64 = 2**63
_NUL_KEY, _FLOAT_KEY = "text_nul_split", "float"


def _fits(value: Any, pg_type: str) -> bool:
    """Whether a real column of `pg_type` holds `value` as it is (SQLite's columns hold any type)."""
    if value is None:
        return True
    if pg_type == "text":
        return isinstance(value, str) and "\x00" not in value
    if pg_type == "bigint":
        return type(value) is int and -_INT64 <= value < _INT64
    return type(value) is float


def encode(value: Any) -> Any:
    """A SQLite value as jsonb holds it: bytes, text with NUL and NaN/Infinity, which jsonb refuses,
    as a one-key object (a SQLite value is never an object, so decode tells them apart)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return jsonutil.blob_value(value)
    if isinstance(value, str) and "\x00" in value:
        return {_NUL_KEY: value.split("\x00")}
    if isinstance(value, float) and not math.isfinite(value):
        return {_FLOAT_KEY: repr(value)}
    return value


def decode(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if jsonutil.BLOB_KEY in value:
        return base64.b64decode(value[jsonutil.BLOB_KEY])
    if _NUL_KEY in value:
        return "\x00".join(value[_NUL_KEY])
    if _FLOAT_KEY in value:
        return float(value[_FLOAT_KEY])
    return value


def _readable(value: Any) -> str | None:
    """What a text column shows of a value kept exactly in extra: multimodal content's text parts
    (its stored form starts with a NUL), other text without its NULs, so search and snippets see it."""
    if not isinstance(value, str):
        return None
    if value.startswith(jsonutil.MULTIMODAL_PREFIX):
        return jsonutil.content_text(value).replace("\x00", "")
    return value.replace("\x00", "")


def _canonical(value: Any) -> bytes:
    try:
        return orjson.dumps(value, default=jsonutil.blob_value)
    except TypeError:  # lone surrogates, integers wider than 64 bits
        return json.dumps(value, ensure_ascii=True, default=jsonutil.blob_value).encode("ascii")


def row_hash(names: Sequence[str], values: Sequence[Any], hst_extra: str | None) -> bytes:
    return hashlib.blake2b(_canonical([list(names), list(values), hst_extra]), digest_size=16).digest()


@dataclass(frozen=True)
class Shape:
    """Where each archive column's value sits in a local row of one layout, and which columns go to extra."""

    names: tuple[str, ...]  # the file's own columns, in its order
    columns: tuple[ArchiveColumn, ...]
    positions: tuple[int | None, ...]  # per archive column: its index in the local row (None: the file lacks it)
    leftover: tuple[tuple[str, int], ...]  # the file's columns the archive has no column for
    # The Python types of a row's values -> whether each fits its column's type: a layout's rows come in
    # a handful of such signatures, so the type check is one dictionary look.
    signatures: dict[tuple[type, ...], bool] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @classmethod
    def of(cls, names: Sequence[str], columns: tuple[ArchiveColumn, ...], skip: tuple[str, ...] = ()) -> Shape:
        index = {name: i for i, name in enumerate(names)}
        known = {c.name for c in columns} | set(skip)
        return cls(tuple(names), columns, tuple(index.get(c.name) for c in columns),
                   tuple((name, i) for i, name in enumerate(names) if name not in known))

    def split(self, row: Sequence[Any]) -> tuple[list[Any], str | None]:
        """The real columns' values and the extra jsonb text (None: nothing left over)."""
        values = [None if at is None else row[at] for at in self.positions]
        if not self.leftover and self._all_fit(values):
            return values, None  # the common row, checked in one pass
        extra: dict[str, Any] = {}
        for k, column in enumerate(self.columns):
            if not _fits(values[k], column.pg_type):
                extra[column.name] = encode(values[k])
                values[k] = _readable(values[k]) if column.pg_type == "text" else None
        for name, at in self.leftover:
            extra[name] = encode(row[at])
        return values, (_canonical(extra).decode() if extra else None)

    def _all_fit(self, values: list[Any]) -> bool:
        kinds = tuple(map(type, values))
        fits = self.signatures.get(kinds)
        if fits is None:
            fits = self.signatures[kinds] = all(
                kind is type(None) or kind is _PYTHON_TYPE[column.pg_type]
                for kind, column in zip(kinds, self.columns, strict=True))
        return fits and not any("\x00" in v for v in values if type(v) is str) and all(
            -_INT64 <= v < _INT64 for v in values if type(v) is int)


_PYTHON_TYPE: dict[str, type] = {"text": str, "bigint": int, "double precision": float}


def session_shape(names: Sequence[str]) -> Shape:
    return Shape.of(names, SESSION_COLUMNS)


def message_shape(names: Sequence[str]) -> Shape:
    return Shape.of(names, MESSAGE_COLUMNS, skip=("id",))


def session_record(host: str, shape: Shape, row: Sequence[Any], hst_extra: str | None) -> tuple[Any, ...]:
    """The archive's sessions row (COPY order: host, the columns, extra, hst_extra, row_hash)."""
    values, extra = shape.split(row)
    return (host, *values, extra, hst_extra, row_hash(shape.names, row, hst_extra))


def message_record(host: str, shape: Shape, local_id: int, row: Sequence[Any], hst_extra: str | None,
                   content_at: int | None) -> tuple[Any, ...]:
    """The archive's messages row (COPY order: host, local_id, the columns, extra, hst_extra, row_hash, cjk)."""
    values, extra = shape.split(row)
    content = row[content_at] if content_at is not None else None
    cjk = content[:INDEXED_CHARS] if isinstance(content, str) and contains_cjk(content) else None
    return (host, local_id, *values, extra, hst_extra, row_hash(shape.names, row, hst_extra), cjk)


def local_row(names: Sequence[str], real: dict[str, Any], extra: dict[str, Any] | None) -> dict[str, Any]:
    """A row as the file held it: its own columns, in its order, from the real columns and extra."""
    extra = extra or {}
    return {name: decode(extra[name]) if name in extra else real.get(name) for name in names}


def read_names(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
    """The file's own columns of `table` (main.*, not a read connection's v6 views)."""
    return tuple(row[1] for row in conn.execute(f"PRAGMA main.table_info({table})"))


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the file itself holds table `name` (the hst_ extra tables exist only once an import needed them)."""
    return bool(conn.execute("SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = ?",
                             (name,)).fetchone())
