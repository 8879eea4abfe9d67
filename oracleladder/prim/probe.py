"""PRIM's dimensions (declared in `dimensions`) as probe jobs of the math domain (§2.2), run by the one probe
loop (`probe.runner.run_probe`): cached, resumable, batchable, K samples. The four of the paper:

- Discovery π(x) -> p̂: ``prim_discovery``, the student writes a primitive from the problem alone;
- Generation π(x) -> ŷ: ``C1_direct``, the ladder's C1 prompt (the same call, so the same cache entry);
- Digestion π(x, y) -> p̂: ``prim_digestion``, from the problem and its reference solution;
- Execution π(x, p) -> ŷ: ``prim_execution:<source>``, the problem with a primitive, shown as the
  primitive rung shows one (`c2_primitive`), the primitive's three fields as labelled text; the
  source is gold, teacher, teacher-problem-only or self (the student's own Discovery output of the
  same sample: discover-then-execute); or the teacher's plan (``plan``: its steps, `prim_execution_plan`),
  the procedural hint PRIM sets against the primitive (Table 2).

Their rollouts are filed under ``prim:<roadmap set>``, apart from the ladder's. An answer is graded
by the math domain's grader; a written primitive is read from labelled text: the verdict says only
whether one could be read (ACCEPT, reason ``readable``, the fields as JSON in ``extracted``; else
NOT_ACCEPT, reason ``unreadable``: the student's failure, scored 0); the judge scores it later.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..domains.math import MathDomain
from ..domains.math.prompts import condition_prompt, messages
from ..ladder.contract import Job, ProbeConfig
from ..prompts import load
from ..schemas import Family, Rollout, Verdict
from ..schemas.conditions import C1
from ..schemas.prim import FIELDS, PrimPrimitive, read_labelled
from ..schemas.types import Label
from . import dimensions as dims
from .dimensions import DIMENSIONS

SOURCES: tuple[str, ...] = ("gold", "teacher", "teacher-problem-only", "self", "plan")
# the targets the paper's analysis reads by role (Discovery's primitive shown back under "self", ...)
DISCOVERY, DIGESTION, GENERATION = dims.DISCOVERY.target, dims.DIGESTION.target, dims.GENERATION.target
EXECUTION = dims.EXECUTION.target  # + the primitive's source
PREFIX = "prim:"


def prim_source(roadmap_set: str) -> str:
    """The name PRIM's rollouts on a roadmap set are filed under."""
    return PREFIX + roadmap_set


def problem_text(family: Family) -> str:
    """The problem itself: the parent prompt without the ladder's instruction before ``Problem:``."""
    return family.parent_prompt.rsplit("Problem:\n", 1)[-1].strip()


def labelled(fields: Mapping[str, str]) -> str:
    return "\n".join(f"{name}: {fields.get(name, '').strip()}" for name in FIELDS)


def read_written(rollout: Rollout) -> dict[str, str] | None:
    """The primitive a Discovery or Digestion rollout wrote, as read when it was graded; None for an
    unreadable one or another target's rollout."""
    v = rollout.verdict
    return json.loads(v.extracted) if rollout.target in DIMENSIONS.written and v.accepted and v.extracted else None


@dataclass(frozen=True)
class Supports:
    """What the jobs show besides the problem: the primitives by (pid, source), the reference
    solutions, the student's own Discovery primitives by (pid, k), and the teacher's plans."""

    primitives: Mapping[tuple[str, str], PrimPrimitive] = field(default_factory=dict)
    solutions: Mapping[str, str] = field(default_factory=dict)
    discovered: Mapping[tuple[str, int], Mapping[str, str]] = field(default_factory=dict)
    plans: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def shown(self, pid: str, source: str, k: int) -> str | None:
        """What Execution under ``source`` shows for sample k: a primitive as labelled text, or the
        plan's numbered steps; None: nothing to show."""
        if source == "plan":
            steps = self.plans.get(pid)
            return None if steps is None else "\n".join(f"{i}. {s.strip()}" for i, s in enumerate(steps, 1))
        if source == "self":
            own = self.discovered.get((pid, k))
            return None if own is None else labelled(own)
        p = self.primitives.get((pid, source))
        return None if p is None else p.labelled()


class PrimDomain(MathDomain):
    """The math domain, probing PRIM's dimensions: ``dimensions`` of ``DIMENSIONS``, a dimension shown a
    support (Execution) under each of ``sources``. A job without what it shows (no solution, no primitive of a source) is
    not planned; `skipped` counts them."""

    def __init__(self, supports: Supports, dimensions: Sequence[str], sources: Sequence[str], **kwargs) -> None:
        super().__init__(**kwargs)
        self.supports, self.dimensions, self.sources = supports, tuple(dimensions), tuple(sources)

    def rollout_source(self, family: Family, source: str) -> str:
        return prim_source(family.provenance.roadmap_set)

    def plan_jobs(self, families: Sequence[Family], config: ProbeConfig, donors: Sequence[Family]) -> list[Job[Family]]:
        jobs: list[Job[Family]] = []
        for f in families:
            for target, msgs in self._fixed(f, donors, config):
                jobs += [Job(f, target, k, msgs) for k in range(config.k)]
            for d in self._asked("parent+support"):
                for source in self.sources:
                    for k in range(config.k):
                        shown = self.supports.shown(f.pid, source, k)
                        if shown is None:
                            continue
                        user = (load("prim_execution_plan").render(parent_prompt=f.parent_prompt, plan=shown)
                                if source == "plan" else
                                load(d.template).render(parent_prompt=f.parent_prompt, primitive=shown))
                        jobs.append(Job(f, d.target + source, k, messages(user)))
        return jobs

    def _asked(self, *shows: dims.Shows) -> list[dims.Dimension]:
        """The dimensions asked for whose prompt shows one of ``shows``, in the declared order."""
        return [d for d in DIMENSIONS if d.name in self.dimensions and d.shows in shows]

    def _fixed(self, f: Family, donors: Sequence[Family], config: ProbeConfig) -> list[tuple[str, list[dict[str, str]]]]:
        out = []
        for d in self._asked("problem", "parent", "problem+solution"):
            if d.shows == "problem":
                out.append((d.target, messages(load(d.template).render(problem=problem_text(f)))))
            elif d.shows == "parent":
                out.append((d.target, condition_prompt(f, C1.name, donors, seed=config.seed)[0]))
            elif f.pid in self.supports.solutions:
                out.append((d.target, messages(load(d.template).render(
                    problem=problem_text(f), solution=self.supports.solutions[f.pid]))))
        return out

    def skipped(self, families: Sequence[Family], config: ProbeConfig) -> dict[str, int]:
        """Per target, the jobs not planned for want of what they show."""
        out: dict[str, int] = {}
        for d in self._asked("problem+solution"):
            out[d.target] = config.k * sum(f.pid not in self.supports.solutions for f in families)
        for d in self._asked("parent+support"):
            for source in self.sources:
                out[d.target + source] = sum(self.supports.shown(f.pid, source, k) is None
                                             for f in families for k in range(config.k))
        return {t: n for t, n in out.items() if n}

    async def grade(self, job: Job[Family], response: str, config: ProbeConfig) -> Verdict:
        if job.target in DIMENSIONS.written:
            fields = read_labelled(response)
            if fields is None:
                return Verdict(label=Label.NOT_ACCEPT, reason="unreadable")
            return Verdict(label=Label.ACCEPT, reason="readable", extracted=json.dumps(fields, ensure_ascii=False))
        return await super().grade(job, response, config)
