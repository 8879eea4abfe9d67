"""Test helpers that are real things (a loopback HTTP server), not stubs."""

from typing import Any

__all__ = ["Faults", "LoopbackServer", "Refuse"]


def __getattr__(name: str) -> Any:  # lazy, so `python -m oracleladder.testing.loopback` runs cleanly
    if name in __all__:
        from . import loopback

        return getattr(loopback, name)
    raise AttributeError(name)
