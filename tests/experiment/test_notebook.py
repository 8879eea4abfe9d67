"""The notebook API in a notebook (issue 31, item 10): the README's Python API example, run as written in
cells of a real .ipynb executed by nbclient on an ipykernel (against the loopback server), then a `Report`
displayed (a short HTML table, not kilobytes) and `report.to_pandas().head()`."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from oracleladder.testing import LoopbackServer
from tests.experiment.readme import answer, readme_blocks
from tests.helpers import REPO

if TYPE_CHECKING:
    from jupyter_client.manager import AsyncKernelManager

KERNEL = "oracleladder-test"
# nbformat, nbclient and jupyter_client are imported by the test that runs, not at the top: each pytest-xdist
# worker collects this module, and the fast lane, which leaves this test out, paid their import in both


def _kernel_manager(kernel_dirs: Path) -> AsyncKernelManager:
    """A kernel of this interpreter. Its spec is written here, not found by name: the `python3` spec a
    fresh CI venv resolves depends on the machine (a user's ~/.local/share/jupyter/kernels may point at
    another Python), and `python -m ipykernel install` would be a step outside the test."""
    spec = kernel_dirs / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": KERNEL, "language": "python", "env": {"PYTHONPATH": str(REPO)}}))
    kernelspec, manager = (importlib.import_module(f"jupyter_client.{m}") for m in ("kernelspec", "manager"))
    return manager.AsyncKernelManager(kernel_name=KERNEL,
                                      kernel_spec_manager=kernelspec.KernelSpecManager(kernel_dirs=[str(kernel_dirs)]))


async def test_readme_example_in_a_notebook(tmp_path: Path, families_file: Path) -> None:  # noqa: F811
    nbformat, nbclient = importlib.import_module("nbformat"), importlib.import_module("nbclient")
    first, _ = readme_blocks()
    (tmp_path / "families.jsonl").write_text(families_file.read_text())
    async with LoopbackServer(script=answer) as srv:
        # the example's server is the loopback one; nothing else in the text is changed
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell(first.replace("http://localhost:8000/v1", srv.openai_base_url)),
            nbformat.v4.new_code_cell("report"),
            nbformat.v4.new_code_cell("frame = report.to_pandas()\nframe.head()"),
        ])
        client = nbclient.NotebookClient(nb, km=_kernel_manager(tmp_path / "kernels"), timeout=300,
                                resources={"metadata": {"path": str(tmp_path)}})  # the kernel's working folder
        await client.async_execute()
    nbformat.validate(nb)
    outputs = [cell.outputs for cell in nb.cells]
    assert not [o for cell in outputs for o in cell if o.output_type == "error"]
    printed = "".join(o.text for o in outputs[0] if o.output_type == "stream" and o.name == "stdout")
    assert printed.startswith(f"{srv.total} calls;")  # the example's print, every call made
    assert (tmp_path / "report" / "html" / "index.html").is_file()
    shown, = outputs[1]
    html = shown.data["text/html"]
    assert shown.output_type == "execute_result" and len(html) < 2000 and "<td>openai/qwen3-8b</td>" in html
    assert shown.data["text/plain"] == "<Report on 'release', tau = 1: openai/qwen3-8b (3 families)>"
    head, = outputs[2]
    table = head.data["text/html"]
    assert "<th>outcome</th>" in table and "<th>C1_direct_n_correct</th>" in table and "<th>C1_direct_k</th>" in table
    assert table.count("<td>openai/qwen3-8b</td>") == 3  # one row per family
