"""Test helpers: a loopback HTTP server that speaks the providers' wire formats (``loopback``) and an
in-process provider scripted per request (``clients.fake``, which the fake/NAME model is made of);
real things, not stubs of the code under test."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ..clients.fake import FakeProvider
    from .loopback import Faults, LoopbackServer, Refuse

__all__ = ["FakeProvider", "Faults", "LoopbackServer", "Refuse"]
# loaded on first use, so `python -m oracleladder.testing.loopback` runs its module once, as __main__
__getattr__ = lazy_names(__name__, {"FakeProvider": "..clients.fake", "Faults": ".loopback", "LoopbackServer": ".loopback",
                                    "Refuse": ".loopback"})
