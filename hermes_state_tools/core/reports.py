"""What a command's library function returns: a frozen value, and its `--json` form."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


def plain(value: Any) -> Any:
    """A report value as JSON takes it: reports and tuples become dicts and lists, paths text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        as_dict = getattr(value, "as_dict", None)
        return as_dict() if callable(as_dict) else {f.name: plain(getattr(value, f.name))
                                                      for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


@dataclasses.dataclass(frozen=True)
class Report:
    """Base of the frozen reports; `as_dict()` is the command's JSON document (keys are the fields)."""

    def as_dict(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
