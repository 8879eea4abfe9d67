"""Known by name, loaded on first use: the one way this package defers an import.

What only some commands need (the report's matplotlib, the statistics' SciPy, the pool reader's
pyarrow, the site's markdown-it, the providers' SDKs, the grader's SymPy) stays out of `ladder --help`
and of the commands that never use it. Everything deferred is named by its import path, a module
(``"oracleladder.report.stats"``) or an object in one (``"oracleladder.domains.math:MathDomain"``):

* a module that reads a heavy or optional module: ``_stats = lazy_module("oracleladder.report.stats")``,
  executed at its first attribute read (a module not installed raises its ImportError there);
* a package that exports names of heavy modules: ``__getattr__ = lazy_names(__name__, {name: module})``
  (PEP 562), each loaded on its first read;
* a registry (the domains, the worker pool's tasks): a table of paths, each loaded by ``load`` when its
  name is first asked for.

Each sits under an ``if TYPE_CHECKING:`` twin that imports the real thing, so a type checker reads it.

Not importlib.util.LazyLoader: before Python 3.12.3 (CPython gh-114763) a thread that read an
attribute while another was still executing the module saw it half-made (an AttributeError), as two
threads that each make their first client would. Here the others wait for the module to be whole."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

_locks: dict[str, threading.RLock] = {}
_executing: set[str] = set()


def load(path: str) -> Any:
    """What ``path`` names, imported now: ``"package.module"`` or ``"package.module:attribute"``."""
    module, _, attribute = path.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


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
                    executed: types.ModuleType = self  # from now on a plain module: reads cost nothing
                    executed.__class__ = types.ModuleType
                finally:
                    _executing.discard(spec.name)
        return read(self, attr)


class _Missing(types.ModuleType):
    """A module that is not installed (an optional extra): its first use raises the ImportError."""

    def __getattr__(self, attr: str) -> Any:
        raise ImportError(f"no module named {self.__name__!r}", name=self.__name__)


class _Deferred(types.ModuleType):
    """A submodule whose package is not loaded yet (finding its spec would run the package): the
    package and the submodule are imported when one of its attributes is first read."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.__name__), attr)


def lazy_module(name: str) -> types.ModuleType:
    """The module ``name``, executed when one of its attributes is first read; one that is not
    installed raises its ImportError there, not here."""
    if name in sys.modules:
        return sys.modules[name]
    if "." in name and name.rpartition(".")[0] not in sys.modules:
        return _Deferred(name)
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return _Missing(name)
    module = importlib.util.module_from_spec(spec)
    _locks[name] = threading.RLock()
    module.__class__ = _LazyModule
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


def lazy_names(package: str, paths: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__``: each name of ``paths`` loaded on first use from its path, relative
    to ``package`` (``".api"``: the same name in its module ``api``; ``"..workers:WorkerPool"``: another
    name), then kept in the package like any other attribute."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name not in paths:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = paths[name].partition(":")
        value = getattr(importlib.import_module(module, package), attribute or name)
        namespace[name] = value
        return value

    return __getattr__
