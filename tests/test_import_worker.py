"""The import's reader runs in a child process; it must work from any caller and never outlive it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from hermes_state_tools.ingest.run import PARALLEL_FROM_FILES


def _corpus(folder: Path, sessions: int) -> None:
    folder.mkdir()
    for n in range(sessions):
        lines = [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"answer {n}"}]
        (folder / f"20260101_{n:06d}_{n:08x}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_a_script_without_a_main_guard_can_import(tmp_path: Path) -> None:
    # multiprocessing's spawn would re-run this unguarded script in the child; the reader child must not.
    _corpus(tmp_path / "sessions", PARALLEL_FROM_FILES + 6)
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""
        from pathlib import Path
        from hermes_state_tools.ingest import import_paths
        stats = import_paths(Path({str(tmp_path / "state.db")!r}), [Path({str(tmp_path / "sessions")!r})])
        print(stats.sessions_created, stats.messages_imported, stats.files_read)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(PARALLEL_FROM_FILES + 6), str(2 * (PARALLEL_FROM_FILES + 6)),
                                   str(PARALLEL_FROM_FILES + 6)]
