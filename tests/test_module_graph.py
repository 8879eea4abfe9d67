"""The package's module graph, read from the code's own imports (issue 44: 0 circles, 0 arrows back up).

An arrow A -> B is an import of B anywhere in A (a TYPE_CHECKING-only import too: a type ties modules as an
import does); a name taken from a package's ``__init__`` is followed to the module that ``__init__`` takes it
from. No modules import each other in a loop, and no package imports one on a higher floor of the Layers
drawing in docs/architecture.md (the drawing is the rule, so the page and the code cannot drift apart)."""

from __future__ import annotations

import ast
import re
from functools import cache

from tests.helpers import REPO

PACKAGE = REPO / "oracleladder"
MODULES = {".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p
           for p in PACKAGE.rglob("*.py")}


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


@cache
def _imports(module: str) -> list[tuple[str, tuple[str, ...]]]:
    """(the module imported, the names taken from it) of each import in ``module``, made absolute."""
    out = []
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            here = module.split(".") if _is_package(module) else module.split(".")[:-1]
            base = here[:len(here) - node.level + 1] if node.level else []
            out.append((".".join([*base, *([node.module] if node.module else [])]), tuple(a.name for a in node.names)))
    return out


@cache
def arrows(module: str) -> frozenset[str]:
    """The package's modules that ``module`` imports."""
    out = set()
    for target, names in _imports(module):
        if target not in MODULES:
            continue
        if not _is_package(target) or not names:
            out.add(target)
            continue
        face = {name: source for source, taken in _imports(target) for name in taken}
        for name in names:
            sub = f"{target}.{name}"
            out.add(sub if sub in MODULES else face[name] if face.get(name) in MODULES else target)
    return frozenset(out - {module})


def circles() -> list[list[str]]:
    """The modules that import each other in a loop, one list per loop (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in arrows(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            loop = []
            while not loop or loop[-1] != v:
                loop.append(stack.pop())
            if len(loop) > 1:
                found.append(sorted(loop))

    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    return found


def floors() -> dict[str, int]:
    """Each package the Layers drawing names, by its floor (the ground 0, higher floors larger)."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    drawing = re.search(r"## Layers\n\n```\n(.*?)```", page, re.S)
    assert drawing, "docs/architecture.md has no Layers drawing"
    rows = [names for line in drawing.group(1).splitlines()
            if (names := re.findall(r"[a-z_]+(?:/[a-z_]+)?/|[a-z_]+\.py", line.split("(")[0]))]
    return {"oracleladder." + name.rstrip("/").removesuffix(".py").replace("/", "."): len(rows) - 1 - i
            for i, names in enumerate(rows) for name in names if name not in ("bench/", "scripts/")}


def floor_of(module: str, by: dict[str, int]) -> int | None:
    held = [p for p in by if module == p or module.startswith(p + ".")]
    return by[max(held, key=len)] if held else None


def test_no_modules_import_each_other() -> None:
    assert circles() == []


def test_no_package_imports_one_on_a_higher_floor() -> None:
    by = floors()
    assert floor_of("oracleladder.cli.app", by) == max(by.values()) and floor_of("oracleladder.schemas.calls", by) == 0
    up = [(m, t) for m in sorted(MODULES) for t in sorted(arrows(m))
          if (a := floor_of(m, by)) is not None and (b := floor_of(t, by)) is not None and b > a]
    assert up == []


def test_the_graph_reads_a_face_and_a_type_only_import() -> None:
    """What the two tests above stand on: a name from a package's face is followed to its module, and an
    import under TYPE_CHECKING is an arrow (report.replication draws with plots, which it loads lazily)."""
    assert "oracleladder.report.tables.replication" in arrows("oracleladder.report.plots")
    assert "oracleladder.report.plots" in arrows("oracleladder.report.replication")
    assert "oracleladder.report.tables.student" in arrows("oracleladder.report.markdown.format_audit")  # FormatAudit from ..tables
