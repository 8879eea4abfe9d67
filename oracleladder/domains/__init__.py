"""The domains the loops run on, by their --domain name.

`math` and `code` are built in. Another domain is one module with a `Domain` subclass, made known by
`register_domain(MyDomain)`, or, for the `ladder` command of an installed package, by an entry point
in the group ``oracleladder.domains`` naming the class (loaded the first time a name is not found).
See docs/domains.md.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from ..schemas.jsonl import InputError
from .base import Attempt, Checked, Domain, Job, Settings
from .code import CodeDomain
from .math import MathDomain

ENTRY_POINT_GROUP = "oracleladder.domains"
DOMAINS: dict[str, type[Domain]] = {}
_entry_points_loaded = False


def register_domain(domain: type[Domain]) -> type[Domain]:
    """Make ``domain`` known under its ``name`` (a later class of the same name replaces it)."""
    DOMAINS[domain.name] = domain
    return domain


def get_domain(name: str, settings: Settings = Settings()) -> Domain:
    """The domain of a --domain name, made from the run's ``settings``; an InputError naming the
    known ones."""
    global _entry_points_loaded
    if name not in DOMAINS and not _entry_points_loaded:
        _entry_points_loaded = True
        for point in entry_points(group=ENTRY_POINT_GROUP):
            register_domain(point.load())
    if name not in DOMAINS:
        raise InputError(f"unknown domain '{name}'; known: {', '.join(DOMAINS)}")
    return DOMAINS[name].from_settings(settings)


register_domain(MathDomain)
register_domain(CodeDomain)

__all__ = ["DOMAINS", "ENTRY_POINT_GROUP", "Attempt", "Checked", "CodeDomain", "Domain", "Job", "MathDomain",
           "Settings", "get_domain", "register_domain"]
