"""tqdm progress bars on stderr (the CLI only creates them when stderr is a terminal, and only
then loads tqdm: cron and CI runs start without it)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdm import tqdm


class ImportBars:
    """Two bars: files read, and messages processed (with rate and ETA from the files bar)."""

    def __init__(self) -> None:
        from tqdm import tqdm

        self.files: tqdm | None = None
        self.messages = tqdm(desc="messages", unit="msg", file=sys.stderr, position=1, leave=False)

    def start(self, files: int) -> None:
        from tqdm import tqdm

        self.files = tqdm(total=files, desc="files", unit="file", file=sys.stderr, position=0)

    def advance(self, files: int = 0, messages: int = 0) -> None:
        if files and self.files is not None:
            self.files.update(files)
        if messages:
            self.messages.update(messages)

    def close(self) -> None:
        self.messages.close()
        if self.files is not None:
            self.files.close()


class ExportBar:
    def __init__(self) -> None:
        from tqdm import tqdm

        self.bar = tqdm(desc="sessions", unit="session", file=sys.stderr)

    def start(self, total: int) -> None:
        self.bar.reset(total=total)

    def advance(self) -> None:
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
