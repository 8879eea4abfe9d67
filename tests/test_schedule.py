"""The order the test files start in on pytest-xdist's workers (tests/helpers/schedule.py)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import schedule


class Item:
    def __init__(self, path: str, name: str, *markers: str) -> None:
        self.path, self.name, self.markers = Path(path), name, markers

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.markers else None


def test_the_model_files_start_first_then_chromiums_then_the_rest_by_number_of_tests() -> None:
    items = [Item("a.py", "a1"), Item("a.py", "a2"), Item("b.py", "b1"), Item("b.py", "b2"), Item("b.py", "b3"),
             Item("view.py", "v1"), Item("view.py", "v2", "browser"),
             Item("local.py", "l1", "local"), Item("c.py", "c1")]
    schedule.pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    # a file with one test on the model before all; each file's tests together, in their order
    assert [i.name for i in items] == ["l1", "v1", "v2", "b1", "b2", "b3", "a1", "a2", "c1"]


def test_pytest_xdist_takes_the_files_in_that_order(pytestconfig: pytest.Config) -> None:
    option = SimpleNamespace(loadscopereorder=True)  # pytest-xdist's default: by number of tests
    schedule.pytest_configure(SimpleNamespace(option=option))  # type: ignore[arg-type]
    assert option.loadscopereorder is False
    assert pytestconfig.pluginmanager.has_plugin("tests.helpers.schedule")  # as tests/conftest.py loads it
