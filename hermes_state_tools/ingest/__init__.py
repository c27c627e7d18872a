"""Importing legacy transcripts: plan per session, merge copies by alignment, write in short batches."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_state_tools.ingest.run import import_paths
    from hermes_state_tools.ingest.stats import ImportStats

__all__ = ["ImportStats", "import_paths"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: the reader process imports this package's planning modules only.
    if name == "import_paths":
        from hermes_state_tools.ingest.run import import_paths

        return import_paths
    if name == "ImportStats":
        from hermes_state_tools.ingest.stats import ImportStats

        return ImportStats
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
