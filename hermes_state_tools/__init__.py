"""hermes-state-tools: the Hermes Agent session store (state.db) as a library, plus its toolkit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes_state_tools.core.paths import default_db_path, hermes_home
from hermes_state_tools.core.schema import SCHEMA_VERSION
from hermes_state_tools.errors import (
    DatabaseLockedError,
    HermesStateError,
    NotAHermesDatabaseError,
    SchemaTooNewError,
    UnknownSessionError,
    UpgradeError,
)

if TYPE_CHECKING:
    from hermes_state_tools.store.session_db import SessionDB

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
        from hermes_state_tools.store.session_db import SessionDB

        return SessionDB
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
