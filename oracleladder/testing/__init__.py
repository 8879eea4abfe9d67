"""Test helpers: a loopback HTTP server that speaks the providers' wire formats (``loopback``; their bodies
in ``wires``, the faults it injects in ``faults``, as a process of its own ``processes``) and an in-process
provider scripted per request (``fake``); real things, not stubs of the code under test."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .fake import FakeProvider
    from .faults import Faults, Refuse
    from .loopback import LoopbackServer

__all__ = ["FakeProvider", "Faults", "LoopbackServer", "Refuse"]
# loaded on first use, so `python -m oracleladder.testing.loopback` runs its module once, as __main__
__getattr__ = lazy_names(__name__, {"FakeProvider": ".fake", "Faults": ".faults", "LoopbackServer": ".loopback",
                                    "Refuse": ".faults"})
