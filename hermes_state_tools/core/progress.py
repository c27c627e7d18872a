"""Progress of a long single-call operation (check, repair, maintain, upgrade, vacuum): the library
names each step as it starts, and says how many more it plans once it knows; the CLI shows
"step 3 of 12: name" in a bar, a script passes nothing (or a plain callable that only hears names)."""

from __future__ import annotations

from collections.abc import Callable

Steps = Callable[[str], None]  # told the name of each step as it starts


def step(progress: Steps | None, name: str) -> None:
    """Tell `progress` (when there is one) that the step `name` starts."""
    if progress is not None:
        progress(name)


def expect(progress: Steps | None, more: int) -> None:
    """Tell `progress` (when it counts) that `more` steps are planned from here, so it can show a total."""
    planned = getattr(progress, "expect", None)
    if planned is not None:
        planned(more)
