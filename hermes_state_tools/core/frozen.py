"""Frozen dataclasses made on the import's hot path without their generated __init__.

A frozen dataclass sets each field through object.__setattr__, which costs about 0.3 us a field:
5.5 us for a 16-field plan, 4.4 us for a session record, made once or twice per session read (3% of
the import's reader process for 10,000 short sessions). `built` fills the instance's __dict__ in
one step instead. It is for classes without __post_init__ and asks for every field (no defaults
are filled in); tests/test_frozen.py holds each class it builds to its own __init__.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def built(cls: type[T], **values: Any) -> T:
    """An instance of the frozen dataclass `cls` with these field values, every field given."""
    instance = object.__new__(cls)
    instance.__dict__.update(values)
    return instance
