"""Connecting to the archive: the URL (or `$HERMES_ARCHIVE_URL`), its password never shown, the driver
loaded lazily, and a server that cannot be reached said in one line (ArchiveUnreachableError, exit 69).

Credentials come from wherever libpq takes them: the URL itself, the PG* environment variables,
~/.pgpass, a service file (`service=NAME` or `?service=NAME`); `sslmode` in the URL is honoured
as libpq honours it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from hermes_state_tools.errors import (
    ArchiveDriverMissingError,
    ArchiveError,
    ArchiveUnreachableError,
    ArchiveURLError,
)

if TYPE_CHECKING:
    import psycopg

URL_VARIABLE = "HERMES_ARCHIVE_URL"
INSTALL_HINT = "pip install 'hermes-state-tools[archive]'"
_CONNECT_TIMEOUT_S = 10
_URI_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@?#\s]*:)(?P<secret>[^@/?#\s]*)(?P<tail>@)", re.I)
_PARAM_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|[^\s&]*)", re.I)


def driver() -> Any:
    """The psycopg module, or ArchiveDriverMissingError saying how to install it."""
    try:
        import psycopg
    except ImportError as exc:
        raise ArchiveDriverMissingError(f"the archive needs psycopg 3, which is not installed: {INSTALL_HINT}") from exc
    return psycopg


def mask(text: str) -> str:
    """`text` with every password in it (a URL's `user:secret@`, a `password=` parameter) as `***`."""
    text = _URI_PASSWORD.sub(lambda m: f"{m['head']}***{m['tail']}", text)
    return _PARAM_PASSWORD.sub(lambda m: f"{m['head']}***", text)


def resolve_url(url: str | None) -> str:
    """The URL given, else `$HERMES_ARCHIVE_URL`; checked well formed (ArchiveURLError otherwise)."""
    chosen = url if url is not None else os.environ.get(URL_VARIABLE)
    if chosen is None or not chosen.strip():
        raise ArchiveURLError(f"no archive URL: give one (postgresql://USER@HOST/DB) or set ${URL_VARIABLE}")
    if "://" in chosen and not chosen.lower().startswith(("postgresql://", "postgres://")):
        raise ArchiveURLError(f"{mask(chosen)}: not a PostgreSQL URL (postgresql://USER@HOST:PORT/DB)")
    parts = conninfo(chosen)
    port = parts.get("port")
    if port is not None and not all(p.isdigit() and 0 < int(p) < 65536 for p in port.split(",")):
        raise ArchiveURLError(f"{mask(chosen)}: the port is not a number from 1 to 65535")
    return chosen


def conninfo(url: str) -> dict[str, str]:
    """libpq's parameters of a URL or `key=value` string (ArchiveURLError when libpq cannot parse it)."""
    pg_driver = driver()
    try:
        return dict(pg_driver.conninfo.conninfo_to_dict(url))
    except pg_driver.Error as exc:
        reason = " ".join(str(exc).split()) or "cannot be parsed"
        raise ArchiveURLError(f"{mask(url)}: malformed archive URL ({mask(reason)})") from exc


def server_name(url: str) -> str:
    """The server as messages name it: `postgresql://user@host:port/db`, never a password."""
    parts = conninfo(url)
    if parts.get("service") and not parts.get("host"):
        return f"service {parts['service']}"
    user = parts.get("user") or os.environ.get("PGUSER", "")
    host = parts.get("host") or os.environ.get("PGHOST", "") or "localhost"
    port = parts.get("port") or os.environ.get("PGPORT", "")
    dbname = parts.get("dbname") or os.environ.get("PGDATABASE", "")
    return f"postgresql://{user + '@' if user else ''}{host}{':' + port if port else ''}/{dbname}"


def _unreachable(url: str, exc: BaseException) -> ArchiveUnreachableError:
    first = " ".join(str(exc).strip().splitlines()[:1]) or type(exc).__name__
    secret = conninfo(url).get("password")
    if secret:
        first = first.replace(secret, "***")
    return ArchiveUnreachableError(f"archive {server_name(url)}: cannot connect ({mask(first)}); nothing was changed")


def open_connection(url: str) -> psycopg.Connection[Any]:
    """A connection to the archive, or ArchiveUnreachableError naming the server. Autocommit: every
    write is an explicit `conn.transaction()` block, so none nests in an implicit one as a savepoint."""
    pg_driver = driver()
    try:
        conn: psycopg.Connection[Any] = pg_driver.connect(
            url, connect_timeout=_CONNECT_TIMEOUT_S, application_name="hermes-state archive", autocommit=True)
    except pg_driver.Error as exc:
        raise _unreachable(url, exc) from exc
    return conn


@contextmanager
def connected(url: str | None) -> Iterator[tuple[psycopg.Connection[Any], str]]:
    """The archive's connection and its server's name; a connection lost on the way is said as unreachable."""
    resolved = resolve_url(url)
    conn = open_connection(resolved)
    pg_driver = driver()
    try:
        yield conn, server_name(resolved)
    except pg_driver.errors.InsufficientPrivilege as exc:
        first = " ".join(str(exc).strip().splitlines()[:1])
        raise ArchiveError(f"archive {server_name(resolved)}: {first}; nothing more was written "
                           "(the grants a role needs: docs/archive.md)") from exc
    except pg_driver.OperationalError as exc:
        if not conn.closed and not conn.broken:
            raise
        raise _unreachable(resolved, exc) from exc
    finally:
        conn.close()
