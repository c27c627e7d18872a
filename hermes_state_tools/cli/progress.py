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

        if self.files is not None:  # started again from zero: the import reads the files a second time
            self.files.reset(total=files)
            self.messages.reset()
            return
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


class StepBar:
    """One line for a long single-call command (check, repair, maintain, upgrade, vacuum): the time so
    far, the step running now, its number and the steps the library planned ("step 3 of 12"). It
    appears only once the command has run for a second (a quick run stays silent), and a small thread
    redraws it while one SQLite statement runs for seconds with nothing to report."""

    _DELAY_S = 1.0
    _TICK_S = 0.5

    def __init__(self, desc: str) -> None:
        import threading
        import time

        from tqdm import tqdm

        self._clock = time.monotonic
        self._began = self._clock()
        self._steps = self._planned = 0
        self.bar = tqdm(desc=desc, unit="step", file=sys.stderr, delay=self._DELAY_S, leave=False,
                        bar_format="{desc} [{elapsed}] {postfix}")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="hst-progress", daemon=True)
        self._thread.start()

    def expect(self, more: int) -> None:
        self._planned = max(self._planned, self._steps) + more

    def __call__(self, name: str) -> None:
        self._steps += 1
        of = f" of {self._planned}" if self._planned >= self._steps else ""  # a step nobody announced
        self.bar.set_postfix_str(f"step {self._steps}{of}: {name}", refresh=False)

    def _tick(self) -> None:
        while not self._stop.wait(self._TICK_S):
            if self._clock() - self._began >= self._DELAY_S:
                self.bar.refresh()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.bar.close()
