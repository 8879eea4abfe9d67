"""Shared fixtures: where the released data lies (../shared/data beside the repository)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"released sample data not found at {SHARED_DATA}")
    return SHARED_DATA
