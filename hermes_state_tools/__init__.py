"""hermes-state-tools: the Hermes Agent session store (state.db) as a library, plus its toolkit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    DatabaseLockedError,
    HermesStateError,
    NotAHermesDatabaseError,
    SchemaTooNewError,
    UnknownSessionError,
    UpgradeError,
)
from .paths import default_db_path, hermes_home
from .schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from .store import SessionDB

__version__ = "0.1.0"

__all__ = [
    "SCHEMA_VERSION",
    "DatabaseLockedError",
    "HermesStateError",
    "NotAHermesDatabaseError",
    "SchemaTooNewError",
    "SessionDB",
    "UnknownSessionError",
    "UpgradeError",
    "__version__",
    "default_db_path",
    "hermes_home",
]


def __getattr__(name: str) -> Any:
    # SessionDB (and with it most of the library) is loaded on first use, so the import's reader
    # process starts without it.
    if name == "SessionDB":
        from .store import SessionDB

        return SessionDB
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
