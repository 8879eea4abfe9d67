"""The inspect_ai task of an exported roadmap set (the task file `ladder export-inspect` writes calls
``ladder_task``): its samples the dataset the export wrote, the student's answer made by inspect_ai's
``generate()`` at the export's temperature and max_tokens, and each answer scored by the toolkit's
verifier (the grader the export names) against the job's gold. Loaded by inspect_ai only: it imports
inspect_ai, which the toolkit itself never needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import json_dataset
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate

from ..domains.math import MathDomain
from ..workers import shared_pool
from .inspect_set import DATASET, METADATA, SCORER, ExportedSet


def ladder_task(folder: Path) -> Task:
    """The task of the set exported to ``folder``."""
    exported = ExportedSet.read(folder)
    config = exported.config
    return Task(dataset=json_dataset(str(folder / DATASET)), solver=generate(), scorer=verifier(exported),
                config=GenerateConfig(temperature=config.temperature, max_tokens=config.max_tokens),
                metadata={METADATA: exported.header()})


@scorer(metrics=[accuracy()], name=SCORER)
def verifier(exported: ExportedSet) -> Any:
    """The toolkit's verifier as a scorer: the sample's job graded as `ladder probe` grades it."""
    domain = MathDomain(pool=shared_pool())
    jobs = exported.jobs()

    async def score(state: TaskState, target: Target) -> Score:
        verdict = await domain.grade(jobs[str(state.sample_id)], state.output.completion, exported.config)
        return Score(value=CORRECT if verdict.accepted else INCORRECT, answer=verdict.extracted,
                     explanation=verdict.reason, metadata={"label": verdict.label.value, "status": verdict.status.value})

    return score
