"""The store's migration steps, in order: ``early`` (v1 to v12) then ``late`` (v13 on)."""

from .early import STEPS as EARLY
from .late import STEPS as LATE

MIGRATIONS: tuple[tuple[str, ...], ...] = EARLY + LATE
