"""The experiment store: one SQLite file per experiment (calls cache, families, reports, rollouts, runs)."""

from .schema import MIGRATIONS, SCHEMA_VERSION
from .sqlite import (
    DEFAULT_STORE,
    CallRecord,
    CompileAttempt,
    FailedJob,
    RunRecord,
    ScreenVerdict,
    Store,
    StoredPacket,
    StoreError,
    StoreVersionError,
)

__all__ = [
    "DEFAULT_STORE",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "CallRecord",
    "CompileAttempt",
    "FailedJob",
    "RunRecord",
    "ScreenVerdict",
    "Store",
    "StoredPacket",
    "StoreError",
    "StoreVersionError",
]
