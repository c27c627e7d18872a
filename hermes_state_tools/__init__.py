"""hermes-state-tools: the Hermes Agent session store (state.db) as a library, plus its toolkit."""

from __future__ import annotations

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
