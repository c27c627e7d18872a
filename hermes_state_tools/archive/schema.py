"""The archive's own schema, as data: its columns and one ordered list of small migration steps.

Everything lives in the PostgreSQL schema `hermes` (so an archive shares a database with nothing's
names). `hermes.schema_version` records each step as it commits: a step and its row commit in one
transaction, under an advisory lock so two hosts pushing at once migrate once. Every step is
idempotent (IF NOT EXISTS). An archive whose recorded version is above the newest step known here
was written by a newer toolkit: it is read (through the columns known here), never written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_state_tools import __version__
from hermes_state_tools.core.schema import MESSAGES_COLUMNS, SESSIONS_COLUMNS
from hermes_state_tools.errors import ArchiveTooNewError

NAMESPACE = "hermes"
_LOCK_KEY = 0x48535441  # "HSTA": the advisory lock of migrations

# A tsvector holds at most about 1 MB: longer texts are indexed by their first characters (and stored whole).
INDEXED_CHARS = 100_000
_PG_TYPES = {"TEXT": "text", "INTEGER": "bigint", "REAL": "double precision"}


@dataclass(frozen=True)
class ArchiveColumn:
    """A column of the archive with a real PostgreSQL column: its local name and PostgreSQL type."""

    name: str
    pg_type: str


def _columns(local: tuple[Any, ...], skip: set[str], later: tuple[str, ...]) -> tuple[ArchiveColumn, ...]:
    known = [ArchiveColumn(c.name, _PG_TYPES[c.decl.split()[0]]) for c in local if c.name not in skip]
    return (*known, *(ArchiveColumn(name, "bigint") for name in later))


# The v6 columns, and the later layouts' flags a search filters on; anything else a file holds goes
# whole into the row's `extra` jsonb, keyed by its column name. `hst_extra` is the toolkit's own extra
# data of the row (tables/extras.py) as its JSON text: `json`, not `jsonb`, keeps it byte for byte
# (jsonb refuses the \u0000 a legacy transcript may hold).
SESSION_COLUMNS = _columns(tuple(SESSIONS_COLUMNS), set(), ("archived",))
MESSAGE_COLUMNS = _columns(tuple(MESSAGES_COLUMNS), {"id"}, ("active", "compacted"))


def _column_sql(columns: tuple[ArchiveColumn, ...]) -> str:
    return ", ".join(f'"{c.name}" {c.pg_type}' for c in columns)


def _step_1(cur: Any) -> None:
    """Hosts with their high-water mark, sessions and messages keyed by host, the word and CJK indexes."""
    ns = NAMESPACE
    cur.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    cur.execute(f"CREATE TABLE IF NOT EXISTS {ns}.hosts (host text PRIMARY KEY, message_mark bigint NOT NULL "
                "DEFAULT 0, session_columns text[] NOT NULL DEFAULT '{}', message_columns text[] NOT NULL "
                "DEFAULT '{}', first_push timestamptz NOT NULL DEFAULT now(), last_push timestamptz)")
    cur.execute(f"CREATE TABLE IF NOT EXISTS {ns}.sessions (host text NOT NULL, {_column_sql(SESSION_COLUMNS)}, "
                "extra jsonb, hst_extra json, row_hash bytea NOT NULL, PRIMARY KEY (host, id))")
    cur.execute(f"CREATE TABLE IF NOT EXISTS {ns}.messages (host text NOT NULL, local_id bigint NOT NULL, "
                f"{_column_sql(MESSAGE_COLUMNS)}, extra jsonb, hst_extra json, row_hash bytea NOT NULL, "
                "cjk text, tsv tsvector GENERATED ALWAYS AS "
                f"(to_tsvector('simple'::regconfig, left(coalesce(content, ''), {INDEXED_CHARS}))) STORED, "
                "PRIMARY KEY (host, local_id))")
    cur.execute(f"CREATE INDEX IF NOT EXISTS messages_session ON {ns}.messages (host, session_id)")
    cur.execute(f"CREATE INDEX IF NOT EXISTS messages_time ON {ns}.messages (timestamp)")
    cur.execute(f"CREATE INDEX IF NOT EXISTS messages_words ON {ns}.messages USING gin (tsv)")
    cur.execute(f"CREATE INDEX IF NOT EXISTS messages_cjk ON {ns}.messages USING gin (cjk gin_trgm_ops)")
    cur.execute(f"CREATE INDEX IF NOT EXISTS sessions_started ON {ns}.sessions (host, started_at, id)")


# version produced -> the step that produces it, in order.
STEPS: dict[int, Callable[[Any], None]] = {1: _step_1}
LATEST = max(STEPS)


def read_version(conn: Any) -> int | None:
    """The archive's recorded version; None when no push ever created it."""
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass(%s)", (f"{NAMESPACE}.schema_version",))
        if cur.fetchone()[0] is None:
            return None
        cur.execute(f"SELECT max(version) FROM {NAMESPACE}.schema_version")
        found = cur.fetchone()[0]
    return int(found) if found is not None else None


def refuse_newer(version: int | None, server: str) -> None:
    if version is not None and version > LATEST:
        raise ArchiveTooNewError(f"archive {server}: its schema (version {version}) was written by a newer "
                                 f"hermes-state-tools (this one knows {LATEST}); it is read, never written: "
                                 "upgrade hermes-state-tools")


def migrate(conn: Any, server: str) -> int:
    """Bring the archive to LATEST (each step one transaction, recorded with it); returns the version."""
    version = read_version(conn)
    refuse_newer(version, server)
    if version == LATEST:
        return LATEST  # nothing to create: a role that may only push never needs DDL rights
    for target, step in STEPS.items():
        with conn.transaction(), conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {NAMESPACE}")
            cur.execute(f"CREATE TABLE IF NOT EXISTS {NAMESPACE}.schema_version (version integer PRIMARY KEY, "
                        "applied_at timestamptz NOT NULL DEFAULT now(), toolkit text NOT NULL)")
            cur.execute(f"SELECT coalesce(max(version), 0) FROM {NAMESPACE}.schema_version")
            done = int(cur.fetchone()[0])
            refuse_newer(done, server)
            if done >= target:
                continue  # another host's push applied it meanwhile
            step(cur)
            cur.execute(f"INSERT INTO {NAMESPACE}.schema_version (version, toolkit) VALUES (%s, %s)",
                        (target, __version__))
    return LATEST
