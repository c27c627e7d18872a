"""Schema history as data: the ordered upgrade steps (steps.py) and how a file's real version is detected."""
