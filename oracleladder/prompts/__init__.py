"""Prompt templates as plain text files, each versioned by the hash of its content.

A template's hash goes into the provenance of whatever it produced, so a changed prompt never
silently mixes with results of the old one. Student templates follow the OracleLadder paper's
Appendix C.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importlib.resources.abc is Python 3.11's
    from importlib.resources.abc import Traversable

_SLOT = re.compile(r"\{([a-z_]+)\}")
# where templates are looked for, in order: this folder, then the folders a package declaring its own
# conditions or PRIM dimensions added (`add_folder`)
FOLDERS: list[Traversable] = [resources.files(__name__)]


@dataclass(frozen=True)
class Prompt:
    name: str
    text: str

    @property
    def version(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]

    def render(self, **values: str) -> str:
        """Fill `{name}` slots in one pass; other braces (LaTeX) are left alone."""
        missing = set(_SLOT.findall(self.text)) - set(values)
        if missing:
            raise KeyError(f"prompt '{self.name}' needs {sorted(missing)}")
        return _SLOT.sub(lambda m: values[m.group(1)], self.text)


def add_folder(folder: str | os.PathLike[str]) -> None:
    """Look for templates in ``folder`` too (after this one: a name here is never overridden)."""
    FOLDERS.append(Path(folder))
    load.cache_clear()


def remove_folder(folder: str | os.PathLike[str]) -> None:
    FOLDERS.remove(Path(folder))
    load.cache_clear()


@cache
def load(name: str) -> Prompt:
    """The template `name` (file `<name>.txt` in this folder, or in a folder added)."""
    for folder in FOLDERS:
        path = folder / f"{name}.txt"
        if path.is_file():
            return Prompt(name, path.read_text(encoding="utf-8"))
    known = sorted(p.name[:-4] for folder in FOLDERS for p in folder.iterdir() if p.name.endswith(".txt"))
    raise KeyError(f"no prompt template '{name}'; known: {', '.join(known)}")
