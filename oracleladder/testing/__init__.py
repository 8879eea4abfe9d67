"""Test helpers: a loopback HTTP server that speaks the providers' wire formats (``loopback``) and an
in-process provider scripted per request (``fake``); real things, not stubs of the code under test."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fake import FakeProvider
    from .loopback import Faults, LoopbackServer, Refuse

_WHERE = {"Faults": "loopback", "LoopbackServer": "loopback", "Refuse": "loopback", "FakeProvider": "fake"}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:  # lazy, so `python -m oracleladder.testing.loopback` runs cleanly
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
