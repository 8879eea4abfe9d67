"""The experiment store: one SQLite file per experiment (calls cache, families, reports, rollouts, runs)."""

from .batches import BatchRecord
from .panels import PanelCell
from .primitives import AnswerVerdict, PrimScore
from .reviews import Review
from .schema import MIGRATIONS, SCHEMA_VERSION
from .sqlite import (
    DEFAULT_STORE,
    CallRecord,
    CompileAttempt,
    FailedJob,
    IntegrateAttempt,
    PrimitiveAttempt,
    RunRecord,
    ScreenVerdict,
    Store,
    StoredPacket,
    StoreError,
    StoreVersionError,
)

__all__ = [
    "AnswerVerdict",
    "DEFAULT_STORE",
    "BatchRecord",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "CallRecord",
    "CompileAttempt",
    "FailedJob",
    "PanelCell",
    "IntegrateAttempt",
    "PrimitiveAttempt",
    "PrimScore",
    "Review",
    "RunRecord",
    "ScreenVerdict",
    "Store",
    "StoredPacket",
    "StoreError",
    "StoreVersionError",
]
