"""oracleladder._lazy: a lazily loaded module read by several threads at once, a module not installed,
and a package's names loaded from their modules on first read."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oracleladder._lazy import lazy_module
from tests.helpers import REPO


def test_threads_reading_a_lazy_module_at_once_all_see_it_whole(tmp_path: Path) -> None:
    # a module that takes a while to execute, as an SDK does; its last line makes the attribute read
    (tmp_path / "slow_sdk.py").write_text("import time\ntime.sleep(0.3)\nClient = 'made'\n")
    script = textwrap.dedent("""
        import threading
        from oracleladder._lazy import lazy_module

        sdk = lazy_module("slow_sdk")
        seen, errors = [], []

        def first_use():
            try:
                seen.append(sdk.Client)
            except Exception as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=first_use) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(seen, errors)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": f"{REPO}:{tmp_path}", "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.strip() == "['made', 'made', 'made', 'made'] []"


def test_a_module_not_installed_fails_where_it_is_first_used_not_where_it_is_named() -> None:
    extra = lazy_module("an_optional_extra_not_installed")
    with pytest.raises(ImportError, match="an_optional_extra_not_installed"):
        extra.Client  # noqa: B018


def test_a_package_loads_each_name_from_its_module_on_first_read() -> None:
    code = ("import sys\nimport oracleladder.domains as d\nbefore = 'oracleladder.domains.code' in sys.modules\n"
            "print(before, d.CodeDomain.name, 'oracleladder.domains.code' in sys.modules, 'CodeDomain' in vars(d))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.stdout.split() == ["False", "code", "True", "True"]


def test_the_api_s_public_names_import_from_the_package() -> None:
    """`from oracleladder import Choice` (issue 43): the selection a report reads is public API, beside
    Experiment, as the docs show it (docs/python-api.md)."""
    import oracleladder
    from oracleladder.experiment import Choice, Endpoint, Experiment, Report, SyncExperiment

    assert [getattr(oracleladder, n) for n in oracleladder.__all__] == [Choice, Endpoint, Experiment, Report,
                                                                         SyncExperiment]
