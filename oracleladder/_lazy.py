"""Modules executed on first attribute access. What only some commands need (the report's
matplotlib, the statistics' SciPy, the pool reader's pyarrow, the site's markdown-it, the providers'
SDKs) stays out of `ladder --help` and of the commands that never use it.

Not importlib.util.LazyLoader: before Python 3.12.3 (CPython gh-114763) a thread that read an
attribute while another was still executing the module saw it half-made (an AttributeError), as two
threads that each make their first client would. Here the others wait for the module to be whole."""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from typing import Any

_locks: dict[str, threading.RLock] = {}
_executing: set[str] = set()


class _LazyModule(types.ModuleType):
    """A module not executed yet; the first attribute read executes it (once, under its lock)."""

    def __getattribute__(self, attr: str) -> Any:
        read = types.ModuleType.__getattribute__
        spec = read(self, "__spec__")
        with _locks[spec.name]:
            # the lock's holder reads its own half-made module while executing it, as any import does
            if type(self) is _LazyModule and spec.name not in _executing:
                _executing.add(spec.name)
                try:
                    spec.loader.exec_module(self)
                    self.__class__ = types.ModuleType
                finally:
                    _executing.discard(spec.name)
        return read(self, attr)


def lazy_module(name: str) -> types.ModuleType:
    """The module ``name``, executed when one of its attributes is first read."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    _locks[name] = threading.RLock()
    module.__class__ = _LazyModule
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module
