"""Test helpers that are real things (a loopback HTTP server), not stubs."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .loopback import Faults, LoopbackServer, Refuse

__all__ = ["Faults", "LoopbackServer", "Refuse"]
# loaded on first use, so `python -m oracleladder.testing.loopback` runs its module once, as __main__
__getattr__ = lazy_names(__name__, dict.fromkeys(__all__, ".loopback"))
