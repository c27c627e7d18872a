"""Entry point of the import's reader process: arguments in on stdin, prepared batches out on stdout."""

from __future__ import annotations

import pickle
import sys

from hermes_state_tools.ingest.worker import serve

if __name__ == "__main__":
    serve(pickle.load(sys.stdin.buffer), sys.stdout.buffer)
