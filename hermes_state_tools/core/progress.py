"""Progress of a long single-call operation (check, repair, maintain, upgrade, vacuum): the library
names each step as it starts; the CLI shows the names in a bar, a script passes nothing."""

from __future__ import annotations

from collections.abc import Callable

Steps = Callable[[str], None]  # told the name of each step as it starts


def step(progress: Steps | None, name: str) -> None:
    """Tell `progress` (when there is one) that the step `name` starts."""
    if progress is not None:
        progress(name)
