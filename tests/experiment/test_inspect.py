"""inspect_ai both ways, offline, with inspect_ai's own mockllm/model scripted: its providers as a
wire (inspect/mockllm/model as a teacher and a student, through the toolkit's cache: a rerun makes no
call), the ladder as an inspect_ai task (`ladder export-inspect`, run by inspect_ai's own eval), and
that task's logs in (`ladder import-inspect`): the same outcome and gap counts as the same scripted
answers probed through the toolkit, and a log whose prompt was edited refused with its sample named."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner

import oracleladder.clients
from oracleladder import Experiment
from oracleladder.cli import app
from oracleladder.clients.inspect_api import InspectProvider
from oracleladder.domains.math import target_gold
from oracleladder.experiment import ExperimentError
from oracleladder.experiment.inspect_logs import import_inspect
from oracleladder.experiment.inspect_set import DATASET, TASK_FILE, ExportedSet, export_inspect
from tests.helpers.inspecting import inspect_module
from tests.helpers.roots import GOOD, PROBLEM, asks_plan, solve

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage, ModelOutput

pytestmark = pytest.mark.integration  # each experiment starts its verifier pool


@pytest.fixture(autouse=True)
def quiet_inspect(monkeypatch: pytest.MonkeyPatch) -> None:
    """inspect_ai's eval without its terminal display (`inspect eval --display none`)."""
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
MODEL = "inspect/mockllm/model"


class Script:
    """inspect_ai's mockllm/model scripted: ``reply`` of the messages (as the toolkit's dicts) is the
    answer, with its usage (mockllm would count the tokens with tiktoken, which downloads its tables)."""

    def __init__(self, reply) -> None:
        self.reply = reply
        self.calls = 0

    def __call__(self, input: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        self.calls += 1
        model = inspect_module("inspect_ai.model")
        output = model.ModelOutput.from_content(model="mockllm", content=self.reply([{"role": m.role, "content": m.text}
                                                                                     for m in input]))
        output.usage = model.ModelUsage(input_tokens=11, output_tokens=5, total_tokens=16)
        return output

    def model(self) -> Any:
        return inspect_module("inspect_ai.model").get_model("mockllm/model", custom_outputs=self, memoize=False)


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch):
    """inspect/mockllm/model answered by a Script (the CLI's and the API's clients both): its
    constructor's arguments are inspect_ai's model_args, given here as `inspect eval -M` would."""
    def use(script: Script) -> None:
        def make_client(model: str, providers: Any = None, **options: Any):
            providers = [InspectProvider("mockllm/model", model_args={"custom_outputs": script})]
            return oracleladder.clients.runner.make_client(model, providers=providers, **options)
        monkeypatch.setattr(oracleladder.clients, "make_client", functools.partial(make_client, backoff_base=0.01))
    return use


def student(golds: dict[str, str]):
    """A deterministic student: the gold of two prompts in three (by the prompt's digest), else 0."""
    def reply(messages: list[dict]) -> str:
        prompt = messages[-1]["content"]
        right = int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 3 != 0
        return rf"So \boxed{{{golds[prompt] if right else '0'}}}"
    return reply


def golds_of(folder: Path) -> dict[str, str]:
    return {j.messages[-1]["content"]: target_gold(j.family, j.target) for j in ExportedSet.read(folder).jobs().values()}


def run_eval(folder: Path, script: Script, logs: Path) -> Path:
    """`inspect eval FOLDER/ladder.py --model mockllm/model`, in this process; the log's path."""
    (log,) = inspect_module().eval(f"{folder / TASK_FILE}@ladder", model=script.model(), log_dir=str(logs))
    assert log.status == "success", log.error
    return Path(log.location)


async def test_a_compile_and_a_probe_through_inspect_mockllm_and_a_rerun_makes_no_call(
        tmp_path: Path, families_file: Path, scripted) -> None:
    teacher = Script(lambda m: json.dumps(GOOD) if asks_plan(m) else solve(m))
    scripted(teacher)
    pool = tmp_path / "pool.jsonl"
    pool.write_text(PROBLEM.model_dump_json() + "\n")
    async with Experiment(tmp_path / "t.sqlite", workers=1) as ex:
        compiled = await ex.compile(pool, MODEL)
        asked = teacher.calls
        again = await ex.compile(pool, MODEL)
        families = await ex.roadmap_set(MODEL)
        keys = {f"{c.provider} {c.model}" for c in await ex.store.calls()}
    assert compiled.compiled == 1 and [f.pid for f in families] == [PROBLEM.pid]
    assert compiled.usage.requests == asked > 1 and compiled.usage.tokens_in == 11 * asked  # inspect's own count
    assert again.usage.requests == 0 and teacher.calls == asked
    assert keys == {"inspect mockllm/model"}

    answers = Script(lambda m: rf"\boxed{{{len(m[-1]['content']) % 4}}}")
    scripted(answers)
    async with Experiment(tmp_path / "s.sqlite", workers=1) as ex:
        await ex.import_families(families_file)
        first = await ex.probe(MODEL, k=2)
        asked = answers.calls
        second = await ex.probe(MODEL, k=2)
        rollouts = await ex.store.rollouts(student=MODEL)
    assert first.usage.requests == asked > 0 and not first.failed_jobs and len(rollouts) == asked
    assert second.usage.requests == 0 and second.usage.cache_hits == asked and answers.calls == asked


def test_export_then_inspect_eval_then_import_gives_the_probes_outcomes_and_gaps(
        tmp_path: Path, families_file: Path, scripted) -> None:
    task = tmp_path / "task"

    async def probe_directly() -> tuple[int, dict[str, str], Any, dict]:
        async with Experiment(tmp_path / "direct.sqlite", workers=1) as ex:
            await ex.import_families(families_file)
            samples = await export_inspect(ex, "release", task, k=2)
            golds = golds_of(task)
            scripted(Script(student(golds)))
            probed = await ex.probe(MODEL, k=2)
            return samples, golds, probed, (await ex.report([MODEL])).summary(MODEL)

    samples, golds, probed, expected = asyncio.run(probe_directly())
    assert probed.usage.requests == samples == len((task / DATASET).read_text().splitlines())

    through_inspect = Script(student(golds))
    log = run_eval(task, through_inspect, tmp_path / "logs")
    assert through_inspect.calls == samples
    store = tmp_path / "imported.sqlite"
    assert CliRunner().invoke(app, ["import", str(families_file), "--store", str(store)]).exit_code == 0
    result = CliRunner().invoke(app, ["import-inspect", str(log), "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert f"imported {samples} answers of {MODEL}" in result.output
    assert f"the verifier agree on {samples} of {samples}" in result.output
    again = Script(student(golds))
    scripted(again)

    async def read_back() -> tuple[dict, Any, Any]:
        async with Experiment(store, workers=1) as ex:
            summary = (await ex.report([MODEL])).summary(MODEL)
            (run,) = [r for r in await ex.runs() if r.kind == "probe"]
            return summary, run, await ex.probe(MODEL, k=2)  # the imported answers are the wire's calls

    imported, run, rerun = asyncio.run(read_back())
    assert imported == expected  # every table: the outcomes and the gaps among them
    assert sum(expected["outcomes"].values()) == sum(expected["taxonomy"].values()) == expected["n"] == 3
    assert len({name for name, n in expected["outcomes"].items() if n}) == 2  # not one label for all
    assert (run.config["temperature"], run.config["max_tokens"], run.config["k"]) == (1.0, 4096, 2)
    assert run.tokens_in == 11 * samples and len(run.config["inspect"]["scores"]) == samples
    assert rerun.usage.requests == 0 and again.calls == 0


def test_a_log_whose_prompt_was_edited_or_of_another_task_is_refused_and_nothing_imported(
        tmp_path: Path, families_file: Path) -> None:
    task, store = tmp_path / "task", tmp_path / "s.sqlite"
    assert CliRunner().invoke(app, ["import", str(families_file), "--store", str(store)]).exit_code == 0
    exported = CliRunner().invoke(app, ["export-inspect", "--out", str(task), "--k", "1", "--conditions", "C1",
                                        "--store", str(store)])
    assert exported.exit_code == 0 and f"inspect eval {task / TASK_FILE}@ladder --model" in exported.output
    lines = (task / DATASET).read_text().splitlines()
    edited = json.loads(lines[1])
    edited["input"][-1]["content"] += " Answer in French."
    (task / DATASET).write_text("\n".join([lines[0], json.dumps(edited), *lines[2:]]) + "\n")
    log = run_eval(task, Script(lambda m: r"\boxed{1}"), tmp_path / "logs")

    other = tmp_path / "other.py"
    other.write_text("from inspect_ai import Task, task\nfrom inspect_ai.dataset import Sample\n"
                     "from inspect_ai.solver import generate\n\n@task\ndef arithmetic():\n"
                     "    return Task(dataset=[Sample(input='1+1?', target='2')], solver=generate())\n")
    (other_log,) = inspect_module().eval(f"{other}@arithmetic", model=Script(lambda m: "2").model(),
                                   log_dir=str(tmp_path / "logs"))

    async def refused() -> tuple[list, list]:
        async with Experiment(store, workers=1) as ex:
            with pytest.raises(ExperimentError, match=rf"sample {re.escape(edited['id'])}: its prompt is not the one "
                                                      "the set 'release' sends: nothing imported from this log"):
                await import_inspect(ex, [log])
            return await ex.store.rollouts(), [r for r in await ex.runs() if r.kind == "probe"]

    assert asyncio.run(refused()) == ([], [])
    result = CliRunner().invoke(app, ["import-inspect", str(log), other_log.location, "--store", str(store)])
    assert result.exit_code == 2 and f"sample {edited['id']}: its prompt is not" in result.output
    result = CliRunner().invoke(app, ["import-inspect", other_log.location, "--store", str(store)])
    assert result.exit_code == 2 and "a log of the task 'arithmetic', not of one `ladder export-inspect` wrote" \
        in result.output
