"""Every file and module that README.md and docs/*.md name exists (issue 44: a module moves, its docs follow).

Read from the Markdown, the way the pages name things:

* a path in code (`bench/scale.py`, `oracleladder/data/prices.json`) from the checkout's root, or, short,
  from the package's (`store/core.py`, `prompts/prim_discovery.txt`);
* a bare module or prompt file (`core.py`, `c2_primitive.txt`), named beside its folder: some file of the
  package, the tests, the benches or the scripts has that name;
* a dotted name (`oracleladder.verify`, `oracleladder.workers.WorkerPool`): a module, or a module's attribute;
* a relative link (`[prim.md](prim.md)`) from the page's folder; a repository path in a fenced block.

Not checked: where a run writes (`DIR/report.json`, `demo-report/...`), patterns (`<model>.jsonl`, `*.jsonl`),
URL paths (`/openapi.json`), and the files of the paper's release that EXTERNAL lists."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PACKAGE = REPO / "oracleladder"
CODE_DIRS = [PACKAGE, REPO / "tests", REPO / "bench", REPO / "scripts"]
# the paper's release, named as where a part was written from; not in this checkout
EXTERNAL = {"code/decomposer/verifier/verifier.py", "symbolic.py"}

SPAN = re.compile(r"`([^`\s]+)`")
FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)+\.(?:py|txt|json|jsonl|md|toml|csv)")
BARE = re.compile(r"\w+\.(?:py|txt)")
DOTTED = re.compile(r"oracleladder(?:\.\w+)+")
REPO_PATH = re.compile(r"(?<![\w/.-])((?:oracleladder|bench|tests|scripts|docs|\.ci)/[\w/.-]*\w)")
OUTPUT = re.compile(r"(?:DIR|demo-report)/")  # a run's output folder, as the pages write it


def named(page: Path) -> Iterator[tuple[str, str]]:
    """(kind, name) for each file or module ``page`` names."""
    text = page.read_text(encoding="utf-8")
    for span in SPAN.findall(text):
        if span in EXTERNAL or OUTPUT.match(span):
            continue
        if PATH.fullmatch(span):
            yield "path", span
        elif BARE.fullmatch(span):
            yield "bare", span
        elif DOTTED.fullmatch(span):
            yield "dotted", span
    for target in LINK.findall(text):
        if not re.match(r"[a-z]+:", target):  # not a URL
            yield "link", target
    for block in FENCE.findall(text):
        for path in REPO_PATH.findall(block):
            yield "path", path


def exists(kind: str, name: str, page: Path) -> bool:
    if kind == "path":
        return (REPO / name).exists() or (PACKAGE / name).exists()
    if kind == "bare":
        return any(next(d.rglob(name), None) is not None for d in CODE_DIRS)
    if kind == "link":
        return (page.parent / name).exists()
    return _importable(name)


def _importable(dotted: str) -> bool:
    """A module, or an attribute of the longest module prefix (``oracleladder.workers.WorkerPool``)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        relative = Path(*parts[:cut])
        if (REPO / relative).with_suffix(".py").is_file() or (REPO / relative / "__init__.py").is_file():
            obj = importlib.import_module(".".join(parts[:cut]))
            return all((obj := getattr(obj, attr, None)) is not None for attr in parts[cut:])
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_path_and_module_a_page_names_exists(page: Path) -> None:
    missing = sorted({f"{kind} {name}" for kind, name in named(page) if not exists(kind, name, page)})
    assert not missing, f"{page.name} names what the checkout does not have: {missing}"


def test_the_reader_finds_each_kind_of_name() -> None:
    """The patterns see what the pages write: a reader that found nothing would pass every page."""
    kinds = {kind for page in PAGES for kind, _ in named(page)}
    assert kinds == {"path", "bare", "dotted", "link"}
    names = {name for page in PAGES for _, name in named(page)}
    assert {"bench/scale.py", "store/core.py", "oracleladder.workers.WorkerPool", "core.py"} <= names
