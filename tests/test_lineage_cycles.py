"""find_cycles loads only the sessions that have a parent and are one: it finds what a walk over
every session finds."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from hermes_state_tools.tables.lineage import find_cycles


def every_cycle(parent: dict[str, str | None]) -> set[frozenset[str]]:
    """The reference: from every session, walk up until a repeat; a repeat on this walk closes a cycle."""
    found = set()
    for start in parent:
        walk: list[str] = []
        node: str | None = start
        while node is not None and node in parent and node not in walk:
            walk.append(node)
            node = parent[node]
        if node is not None and node in walk:
            found.add(frozenset(walk[walk.index(node):]))
    return found


@given(st.dictionaries(st.sampled_from("abcdefghijkl"), st.none() | st.sampled_from("abcdefghijklxy"), max_size=12))
def test_the_cycles_found_are_every_cycle(parent):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, parent_session_id TEXT)")
    conn.executemany("INSERT INTO sessions VALUES (?, ?)", parent.items())
    cycles = find_cycles(conn)
    assert {frozenset(c) for c in cycles} == every_cycle(parent)
    assert len(cycles) == len({frozenset(c) for c in cycles})  # each once
    for cycle in cycles:  # in parent order
        assert all(parent[a] == b for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True))
