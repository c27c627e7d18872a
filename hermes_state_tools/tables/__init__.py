"""Plain functions over a connection, one module per part of the v6 tables (sessions, messages, titles, FTS...)."""
