"""The bottom layer: record types, problem kinds, the v6 schema as data, JSON spelling, paths, connections.

Everything else may import from here; nothing here imports from the rest of the library.
"""
