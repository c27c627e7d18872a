"""The schema of each later Hermes layout as its own code creates it (scripts/make_layouts.py).

Read by core/layouts.py."""
