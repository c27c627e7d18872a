"""Importing legacy transcripts: plan per session, merge copies by alignment, write in short batches."""

from __future__ import annotations

from .run import ImportStats, import_paths

__all__ = ["ImportStats", "import_paths"]
