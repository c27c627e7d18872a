"""The fleet archive: many hosts' state.db pushed into one PostgreSQL database, searched across hosts.

`connect` (the URL, credentials and the driver, loaded only here), `schema` (the archive's own
versioned schema), `rows` (a local row as archive columns and back), `push`, `search`, `status`,
`export` and `identical` (what `prune --archived` asks before it deletes). psycopg is an optional
extra: nothing outside this package imports it, and this package loads it on first connect.
"""
