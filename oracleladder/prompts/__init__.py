"""Prompt templates as plain text files, each versioned by the hash of its content.

A template's hash goes into the provenance of whatever it produced, so a changed prompt never
silently mixes with results of the old one. Student templates follow the OracleLadder paper's
Appendix C.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

_SLOT = re.compile(r"\{([a-z_]+)\}")


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


@cache
def load(name: str) -> Prompt:
    """The template `name` (file `<name>.txt` in this folder)."""
    path = resources.files(__name__) / f"{name}.txt"
    if not path.is_file():
        known = sorted(p.name[:-4] for p in resources.files(__name__).iterdir() if p.name.endswith(".txt"))
        raise KeyError(f"no prompt template '{name}'; known: {', '.join(known)}")
    return Prompt(name, path.read_text(encoding="utf-8"))
