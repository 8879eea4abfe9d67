"""A roadmap set as an inspect_ai task (`ladder export-inspect`): the folder it is written to, and
its jobs, each an inspect_ai sample named ``pid|target|k``.

The jobs are planned by the domain as `ladder probe` plans them (``plan_jobs`` then ``asked_jobs``:
Stage 0 and the conditions, the parents of a family with an unusable reference answer skipped), so
a sample's prompt is the request the toolkit sends; the task file (``inspect_task.py``) grades with
the toolkit's verifier and `ladder import-inspect` (``inspect_logs.py``) plans them again to check
each sample's prompt. No inspect_ai here: the export needs none.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..domains.math import MathDomain
from ..ladder import Job, ProbeConfig
from ..probe.runner import asked_jobs
from ..schemas import LADDER, Family
from ..schemas.jsonl import read_unique
from .errors import ExperimentError
from .reader import Reader

TASK_NAME = "ladder"  # the task's name in inspect_ai's logs: the task file's function
SETTINGS, FAMILIES, DATASET, TASK_FILE = "ladder.json", "families.jsonl", "dataset.jsonl", "ladder.py"
METADATA = "oracleladder"  # the task's metadata key holding the set's name and settings
SCORER = "oracleladder_verifier"  # the scorer's name in the log: the toolkit's verifier
STUDENT = "inspect"  # the student of an exported set's config: the model is inspect_ai's --model
_TASK = '''"""The OracleLadder roadmap set {source!r} as an inspect_ai task, written by `ladder export-inspect`:
`inspect eval {task} --model PROVIDER/MODEL` runs it; `ladder import-inspect LOG` brings its log into
the store. Its samples are dataset.jsonl, the prompts `ladder probe` sends; its scorer is the toolkit's
verifier."""

from pathlib import Path

from inspect_ai import Task, task

from oracleladder.experiment.inspect_task import ladder_task


@task
def {name}() -> Task:
    return ladder_task(Path(__file__).parent)
'''


@dataclass(frozen=True)
class ExportedSet:
    """A roadmap set ``source`` with the probe settings its task runs at (``config``)."""

    source: str
    config: ProbeConfig
    families: list[Family]

    def jobs(self) -> dict[str, Job[Family]]:
        """Each sample's job, by its id."""
        domain = MathDomain()
        unusable = {f.pid for f in self.families if domain.ungradable(f, self.config.use_corrections)}
        planned = asked_jobs(domain.plan_jobs(self.families, self.config, self.families), self.config, unusable)
        return {sample_id(j): j for j in planned}

    def header(self) -> dict[str, Any]:
        """What the task's metadata says of the set (and an import reads back): its name and settings."""
        settings = {f.name: getattr(self.config, f.name) for f in fields(ProbeConfig) if f.name != "student"}
        settings["conditions"] = list(settings["conditions"])
        return {"source": self.source, "settings": settings}

    @classmethod
    def of_header(cls, header: object, families: list[Family]) -> ExportedSet:
        """The set a task's metadata names (``header``), with ``families``; ValueError when it says none."""
        if not isinstance(header, dict) or not isinstance(header.get("settings"), dict):
            raise ValueError("no OracleLadder settings in the task's metadata")
        settings = dict(header["settings"])
        settings["conditions"] = tuple(settings["conditions"])
        return cls(str(header["source"]), ProbeConfig(student=STUDENT, **settings), families)

    @classmethod
    def read(cls, folder: Path) -> ExportedSet:
        """The set exported to ``folder``."""
        families = list(read_unique(folder / FAMILIES, Family))
        return cls.of_header(json.loads((folder / SETTINGS).read_text()), families)


def sample_id(job: Job[Family]) -> str:
    return f"{job.pid}|{job.target}|{job.k}"


async def export_inspect(reader: Reader, source: str, out: Path, *, k: int = 8, conditions: Sequence[str] | None = None,
                         grader: str = "strict", temperature: float = 1.0, max_tokens: int = 4096) -> int:
    """Write the roadmap set ``source`` as an inspect_ai task in ``out``: the task file, its dataset
    (one sample per job: the exact messages), the families and settings its scorer grades by; returns
    the number of samples."""
    domain = MathDomain()
    try:
        chosen = tuple(dict.fromkeys(LADDER.parse(c) for c in conditions)) if conditions else domain.conditions
        config = ProbeConfig(student=STUDENT, k=k, conditions=chosen, grader=grader, temperature=temperature,
                             max_tokens=max_tokens)
    except ValueError as exc:  # an unknown condition or grader
        raise ExperimentError(str(exc)) from None
    unknown = [LADDER[c].short for c in chosen if c not in domain.conditions]
    if unknown:
        raise ExperimentError(f"export-inspect runs the ladder's conditions "
                              f"({', '.join(LADDER[c].short for c in domain.conditions)}), not {', '.join(unknown)}")
    exported = ExportedSet(source, config, await reader.domain_families(domain, source))
    jobs = exported.jobs()
    out.mkdir(parents=True, exist_ok=True)
    (out / SETTINGS).write_text(json.dumps(exported.header(), indent=2) + "\n")
    (out / FAMILIES).write_text("".join(f.model_dump_json() + "\n" for f in exported.families))
    with (out / DATASET).open("w") as dataset:
        for sid, job in jobs.items():
            dataset.write(json.dumps({"id": sid, "input": job.messages, "target": domain.target_gold(
                job.family, job.target, config.use_corrections), "metadata": {"pid": job.pid, "target": job.target,
                                                                               "k": job.k}}, ensure_ascii=False) + "\n")
    (out / TASK_FILE).write_text(_TASK.format(source=source, task=f"{out / TASK_FILE}@{TASK_NAME}", name=TASK_NAME))
    return len(jobs)
