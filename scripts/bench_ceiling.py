"""How fast the import could be with a reader that cost nothing: the ceiling of the two-process design.

Every batch is read, planned and staged beforehand, exactly as the reader process would stage it;
then `import_paths` runs in this process with those batches handed over at once: discovery, the
new file built aside, every write transaction, the final pass and placing the file all happen as
in a real run, only the reading is free. Process start and the CLI's imports are measured apart
(`hermes-state --version`) and added. What the import loses against this is the reader's share.

    python scripts/bench.py --short --ceiling
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes_state_tools.importers import discover
from hermes_state_tools.ingest import run
from hermes_state_tools.ingest.planning.batches import Batch, prepared_batches
from hermes_state_tools.ingest.planning.prepared import Prepared
from hermes_state_tools.ingest.planning.units import ReadLog
from hermes_state_tools.ingest.writing.staging import stage_batch


def start_seconds() -> float:
    """Process start to exit of `hermes-state --version`: the interpreter and the CLI's imports."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "hermes_state_tools", "--version"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


class FreeReader:
    """The batches of `folder`, read, planned and staged once (in `scratch`), then handed over at no cost."""

    def __init__(self, folder: Path, scratch: Path) -> None:
        self.folder, self.scratch = folder, scratch
        self.prepared = scratch / "prepared"
        self.prepared.mkdir(parents=True)
        files, _ = discover([folder])
        self.batches: list[tuple[tuple[Prepared, ...], Path | None]] = []
        for number, items in enumerate(prepared_batches(None, files, None, None, ReadLog())):
            path = self.prepared / f"batch-{number:06d}.db"
            staged = stage_batch(path, items)
            self.batches.append((items, None) if staged is None else (staged, path))

    def _batches(self, *args: Any, **kwargs: Any) -> Iterator[Batch]:
        live = self.scratch / "live"  # the writer deletes each staging file once its batch is in
        shutil.rmtree(live, ignore_errors=True)
        shutil.copytree(self.prepared, live)
        for items, path in self.batches:
            yield Batch(items, None if path is None else live / path.name)

    def import_seconds(self, db: Path) -> float:
        """Seconds of `import_paths` into the new file `db` with the batches handed over ready."""
        original = run.remote_batches  # type: ignore[attr-defined]
        run.remote_batches = self._batches  # type: ignore[attr-defined,assignment]
        try:
            began = time.perf_counter()
            run.import_paths(db, [self.folder])
            return time.perf_counter() - began
        finally:
            run.remote_batches = original  # type: ignore[attr-defined]
