"""inspect_ai, imported when a test that uses it runs, not when the suite is collected: its import
takes seconds of CPU, which every process that collects the suite (each pytest-xdist worker) would
pay whether it runs those tests or not."""

from __future__ import annotations

from types import ModuleType

import pytest


def inspect_module(name: str = "inspect_ai") -> ModuleType:
    """inspect_ai or one of its modules (``inspect_ai.model``); the test is skipped where it is not installed."""
    return pytest.importorskip(name, reason="inspect_ai not installed: pip install 'oracleladder[inspect]'")
