"""The store's versioned schema: an ordered list of migration steps, applied on open.

The schema version lives in SQLite's ``PRAGMA user_version``. Migration ``i`` (0-based) takes a
store from version ``i`` to ``i + 1``; ``SCHEMA_VERSION`` is the number of migrations. Never edit
a released step: append a new one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..schemas.calls import served_identity
from .calls import (
    asked_at,
    identity_rekeyed,
    rekeyed,
    run_model,
    stored_request_body,
    stored_request_digest,
    stored_request_k,
    structured_rekeyed,
)
from .claims import claim_gone
from .migrations import MIGRATIONS
from .rows import pack, pack_key, stored_text

SCHEMA_VERSION = len(MIGRATIONS)

# SQL functions the migration steps and the writer's statements call (registered on the writing
# connection): name -> (number of arguments, function)
SQL_FUNCTIONS: dict[str, tuple[int, Callable[..., Any]]] = {
    "ladder_request_digest": (1, stored_request_digest),
    "ladder_request_body": (1, stored_request_body),
    "ladder_request_k": (1, stored_request_k),
    "ladder_pack_key": (1, pack_key),
    "ladder_pack": (1, pack),
    "ladder_text": (1, stored_text),
    "ladder_asked_at": (1, asked_at),
    "ladder_rekeyed": (3, rekeyed),
    "ladder_structured_rekeyed": (3, structured_rekeyed),
    "ladder_run_model": (2, run_model),
    "ladder_process_gone": (1, claim_gone),
    "ladder_identity_rekeyed": (3, identity_rekeyed),
    "ladder_identity_rekeyed_as": (4, identity_rekeyed),
    "ladder_served_identity": (1, served_identity),
}
