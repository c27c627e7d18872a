"""The SQL dump of a file (store/sqldump.py) reloads into the same file."""

from __future__ import annotations

import sqlite3

from hermes_state_tools.store.sqldump import dump_sql, load_sql


def test_a_dump_loads_parents_first_so_triggers_that_read_them_index_alike(tmp_path):
    """A later Hermes' trigger reads a message's session as the message goes in (its trigram index
    leaves out a subagent's sessions): the dump loads sessions before the messages that name them."""
    db = tmp_path / "a.db"
    conn = sqlite3.connect(db)
    conn.executescript("""
        CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT);
        CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT REFERENCES sessions(id), content TEXT);
        CREATE TABLE indexed (id INTEGER);
        CREATE TRIGGER m_ins AFTER INSERT ON messages
        WHEN EXISTS (SELECT 1 FROM sessions WHERE id = new.session_id AND source <> 'subagent')
        BEGIN INSERT INTO indexed VALUES (new.id); END;
        INSERT INTO sessions VALUES ('a', 'cli'), ('b', 'subagent');
        INSERT INTO messages VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'a', 'z');
    """)
    script = dump_sql(conn)
    conn.close()
    assert script.index('INSERT INTO "sessions"') < script.index('INSERT INTO "messages"')
    again = tmp_path / "b.db"
    load_sql(script, again)
    # the dump writes indexed's rows as they were (1, 3), and the trigger adds 1 and 3 again
    conn = sqlite3.connect(again)
    try:
        assert sorted(r[0] for r in conn.execute("SELECT id FROM indexed")) == [1, 1, 3, 3]
    finally:
        conn.close()
