"""An ordered registry of declarations by name, the home of a vocabulary the toolkit grows by: the ladder's
conditions (`schemas.conditions.LADDER`) and PRIM's dimensions (`prim.dimensions.DIMENSIONS`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar, Generic, Protocol, TypeVar


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


class Registry(Generic[T]):
    """Declarations in the order declared (the order every table and help lists them in)."""

    kind: ClassVar[str] = "declaration"  # what one is, in a refusal

    def __init__(self, *items: T) -> None:
        self._items: dict[str, T] = {}
        for item in items:
            self.register(item)

    def taken(self, item: T) -> bool:
        """Whether ``item`` would clash with one declared (its name; a subclass adds its other keys)."""
        return item.name in self._items

    def register(self, item: T) -> T:
        """Declare ``item``; refused (ValueError) where it clashes with one declared."""
        if self.taken(item):
            raise ValueError(f"{self.kind} {item.name} is declared already")
        self._items[item.name] = item
        return item

    def unregister(self, name: str) -> None:
        del self._items[name]

    def __iter__(self) -> Iterator[T]:
        return iter(self._items.values())

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._items)
