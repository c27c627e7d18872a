"""Python SQL functions over message text that damage cannot turn into a bug.

Python's sqlite3 decodes a function's TEXT argument itself, and text that is not UTF-8 (no Hermes
writes it: a destroyed page does) makes the call fail as "user-defined function raised exception",
which names neither the file nor the damage. So the text is passed as its bytes (CAST AS BLOB),
decoded here; undecodable text is passed over and noted, and `check` then raises UndecodableTextError
(the file is damaged) once the statement has run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any


class UndecodableTextError(sqlite3.DatabaseError):
    """A message's text is not UTF-8: the file is damaged (no Hermes writes such bytes)."""


class TextFunction:
    """`fn(text, *more)` registered as the SQL function `name`; call it in SQL through `call`."""

    def __init__(self, conn: sqlite3.Connection, name: str, fn: Callable[..., Any], more: int = 0) -> None:
        self.name, self.fn, self.undecodable = name, fn, False
        conn.create_function(name, 1 + more, self._run, deterministic=True)

    def call(self, column: str, *more: str) -> str:
        """The SQL that calls the function on `column`'s text (and further arguments)."""
        return f"{self.name}({', '.join((f'CAST({column} AS BLOB)', *more))})"

    def _run(self, raw: Any, *more: Any) -> Any:
        text = None
        if isinstance(raw, bytes):
            try:
                text = raw.decode()
            except UnicodeDecodeError:
                self.undecodable = True
        return self.fn(text, *more)

    def check(self) -> None:
        """Raise UndecodableTextError when the statement met text that is not UTF-8."""
        if self.undecodable:
            raise UndecodableTextError("a message's text is not UTF-8: a destroyed page")
