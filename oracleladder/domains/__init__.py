"""The domains the loops run on, by their --domain name.

`math` and `code` are built in. Another domain is one module with a `Domain` subclass, made known by
`register_domain(MyDomain)`, or, for the `ladder` command of an installed package, by an entry point
in the group ``oracleladder.domains`` naming the class (loaded the first time a name is not found).
See docs/domains.md.

The interface a domain implements is `oracleladder.ladder` (below the loops and the domains alike).
A built-in domain's package loads when it is first asked for, so `ladder --help` loads neither.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from .._lazy import lazy_names, load
from ..ladder.contract import Domain, Settings
from ..schemas.jsonl import InputError

if TYPE_CHECKING:
    from .code import CodeDomain
    from .math import MathDomain

ENTRY_POINT_GROUP = "oracleladder.domains"
BUILT_IN = {"math": "oracleladder.domains.math:MathDomain", "code": "oracleladder.domains.code:CodeDomain"}
DOMAINS: dict[str, type[Domain]] = {}  # the domains loaded or registered so far
_entry_points_loaded = False


def register_domain(domain: type[Domain]) -> type[Domain]:
    """Make ``domain`` known under its ``name`` (a later class of the same name replaces it)."""
    DOMAINS[domain.name] = domain
    return domain


def known_domains() -> list[str]:
    return list(dict.fromkeys([*BUILT_IN, *DOMAINS]))


def get_domain(name: str, settings: Settings = Settings()) -> Domain:
    """The domain of a --domain name, made from the run's ``settings``; an InputError naming the
    known ones."""
    global _entry_points_loaded
    if name not in DOMAINS and name in BUILT_IN:
        register_domain(load(BUILT_IN[name]))
    if name not in DOMAINS and not _entry_points_loaded:
        _entry_points_loaded = True
        for point in entry_points(group=ENTRY_POINT_GROUP):
            register_domain(point.load())
    if name not in DOMAINS:
        raise InputError(f"unknown domain '{name}'; known: {', '.join(known_domains())}")
    return DOMAINS[name].from_settings(settings)


__getattr__ = lazy_names(__name__, {"CodeDomain": ".code", "MathDomain": ".math"})

__all__ = ["BUILT_IN", "DOMAINS", "ENTRY_POINT_GROUP", "CodeDomain", "MathDomain", "get_domain", "known_domains",
           "register_domain"]
