"""Which tests are integration tests: those that start a server (the loopback server, llama-cpp-python's,
`ladder view`), start `ladder` as a child, start processes of their own
(subprocess, multiprocessing, a verifier pool, the code sandbox) or load the embedded model (marked
`local`). Decided from what a test reaches: the names its code uses, through the fixtures and the helper
functions of the test tree, so a new test is classed without a list of tests to keep.

Grading that runs in processes by design stays in the fast lane, so that the lane covers grading: the
verifier's shared pool (``verify()``, the ``verifier`` fixture: started once per session) and the
sandbox the code domain's checks run their programs in; and the CLI driven in process (typer's
CliRunner) over models that answer in process (``fake/NAME``, a Python function): no socket, no process."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from types import CodeType, ModuleType
from typing import Any

import pytest

# Modules, classes and functions (by qualified name) that make a test an integration test.
REACHED = (
    "oracleladder.testing.loopback", "oracleladder.testing.processes", "oracleladder.testing.llama_server",  # servers
    "tests.helpers.terminal",  # the CLI as a child
    "subprocess", "multiprocessing", "oracleladder.sandbox",  # processes
    "oracleladder.workers.pool.WorkerPool", "oracleladder.verify.api.verify_many",  # worker pools of a test's own
    "oracleladder.cluster.Cluster",  # a Ray cluster: its processes, seconds to start
)
MARKERS = ("local", "browser")  # the embedded model or llama-cpp-python's server; chromium
_LAST = {entry.rsplit(".", 1)[-1] for entry in REACHED}  # a name imported inside a function: unresolved


def is_integration(item: pytest.Item) -> bool:
    if any(item.get_closest_marker(m) for m in MARKERS):
        return True
    roots = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)  # the fixtures a test uses, each with its function
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        roots += [d.func for d in defs]
    seen: set[CodeType] = set()
    return any(_reaches(f, seen) for f in roots if f is not None and _in_tests(f))


def _reaches(func: Callable[..., Any], seen: set[CodeType]) -> bool:
    """Whether ``func`` names something in REACHED, itself or through a function or class of the test
    tree it names."""
    code = getattr(inspect.unwrap(func), "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    scope = getattr(func, "__globals__", {})
    for name in _names(code):
        if name not in scope:
            if name in _LAST or _flagged(name):  # `from typer.testing import CliRunner` inside a function
                return True
            continue
        obj = scope[name]
        # a class of the test tree made of a flagged one (a LoopbackServer subclass) is that class
        if any(_flagged(_qualified(c)) for c in (obj.__mro__ if inspect.isclass(obj) else (obj,))):
            return True
        if _in_tests(obj):
            helpers = vars(obj).values() if inspect.isclass(obj) else [obj]
            if any(_reaches(h, seen) for h in helpers if inspect.isfunction(h)):
                return True
    return False


def _names(code: CodeType) -> Iterator[str]:
    """The global, attribute and imported names ``code`` and the functions nested in it use."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _names(const)


def _qualified(obj: object) -> str:
    """``module.Name`` of a class or function, a module's name, or an instance's class's ``module.Name``."""
    if isinstance(obj, ModuleType):
        return obj.__name__
    if not (inspect.isclass(obj) or inspect.isroutine(obj)):
        obj = type(obj)
    return f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"


@functools.cache  # asked of every name of every function each test reaches: over a million times a run
def _flagged(name: str) -> bool:
    return any(name == entry or name.startswith(entry + ".") for entry in REACHED)


def _in_tests(obj: object) -> bool:
    module = getattr(obj, "__module__", None)
    return callable(obj) and isinstance(module, str) and (module == "tests" or module.startswith("tests."))
