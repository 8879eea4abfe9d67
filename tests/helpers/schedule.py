"""The order the test files start in on pytest-xdist's workers (`-n 2 --dist loadfile`): the files that
run the embedded model or llama-cpp-python's server (`local`) first, then those that drive Chromium
(`browser`), then the rest by their number of tests, most first.

pytest-xdist hands out whole files in the order it is given, and by default orders them by their number
of tests, so a file of one long test (a compile on the embedded model: a minute or two) starts last and
leaves the other worker idle at the end. Started first, the long files run beside each other and the
many short files fill in behind them. A plugin of tests/conftest.py (`pytest_plugins`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

_FIRST = ("local", "browser")  # the markers of the long files, longest kind first


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist is installed
        config.option.loadscopereorder = False  # hand out the files in the order collected (below)


@pytest.hookimpl(trylast=True)  # after tests/conftest.py has set the markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank: dict[Path, int] = {}
    for item in items:
        marked = [i for i, m in enumerate(_FIRST) if item.get_closest_marker(m)]
        rank[item.path] = min(rank.get(item.path, len(_FIRST)), *marked, len(_FIRST))
    tests = Counter(item.path for item in items)
    items.sort(key=lambda item: (rank[item.path], -tests[item.path]))  # stable: a file's tests keep their order
