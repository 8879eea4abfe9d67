"""The package's public API, pinned (issue 44; httpx's tests/test_exported_members.py is the model): a name
joins or leaves `oracleladder.__all__` only with this list, and each one imports and says what it is."""

from __future__ import annotations

import inspect
import types
import typing

import pytest

import oracleladder

PUBLIC = ["Choice", "Endpoint", "Experiment", "Report", "SyncExperiment"]
# what the package's own __init__ imports to load the others on first use; not API
MACHINERY = {"annotations", "TYPE_CHECKING", "lazy_names"}


def test_all_is_the_pinned_list_sorted() -> None:
    assert oracleladder.__all__ == PUBLIC
    assert PUBLIC == sorted(PUBLIC, key=str.casefold)


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_name_imports_and_has_a_docstring(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from oracleladder import {name}", namespace)
    obj = namespace[name]
    if typing.get_origin(obj) is not None:  # a typing alias (Annotated, a union): no docstring of its own
        return
    doc = inspect.getdoc(obj) or ""
    # a dataclass without a docstring gets its signature as one: "Choice(value: ...)"
    assert doc.strip() and not doc.startswith(f"{name}("), f"oracleladder.{name} has no docstring"


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from oracleladder import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == PUBLIC


def test_no_public_name_outside_all() -> None:
    """Every public name the package holds, once each of __all__ is loaded, is in __all__ or a subpackage."""
    for name in PUBLIC:
        getattr(oracleladder, name)
    held = {n for n, v in vars(oracleladder).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert held - MACHINERY == set(PUBLIC)
    with pytest.raises(AttributeError, match="no attribute 'Stage'"):
        getattr(oracleladder, "Stage")  # noqa: B009 - a name the package does not export
