"""The audits of `Experiment` that ask a model: the judge audit of the grader and the automated rubric review."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..audit import roadmap
from ..audit.judge import ask_judge, draw, paired, write_sheet
from ..audit.review import prompt_version as review_prompt, review_messages
from ..clients.asking import REASK, ask_json
from ..domains.math import MathDomain
from ..ladder.outcomes import Gap
from ..prompts import load as load_prompt
from ..report.tables import known_gap, review_row
from ..runtime import gather_or_cancel
from ..schemas import (
    Family,
    Rollout,
)
from ..schemas.conditions import C1
from ..schemas.rubric import RubricLabel
from ..schemas.sheets import key_path
from ..store import Review
from .configs import JudgeConfig, ReviewConfig, configured
from .core import ExperimentCore
from .endpoint import JUDGE_CONCURRENCY, Endpoint, as_endpoint
from .errors import Arg, ExperimentError
from .results import (
    JudgeAuditResult,
    ReviewAuditResult,
)
from .run import calling
from .selection import Choice, pick


class AuditStages(ExperimentCore):
    """Mixed into `Experiment`."""

    async def judge_audit(self, judge: str | Endpoint, student: str, sheet: str | os.PathLike[str],
                          config: JudgeConfig | None = None, *, choice: Choice = Choice(),
                          **options: Any) -> JudgeAuditResult:
        """Judge audit of the grader in both directions (paper Appendix V): a seeded sample of ``n`` of the
        student's graded rollouts on a math roadmap set at one setting (``choice``: its own ``max_tokens``
        is the judge's), stratified by the verifier's verdict (accepted, or its rejection reason), graded
        by the LLM ``judge``: the paired grades (Tables 45, 46: ``paired``), and the rejected cases it
        accepts in the grader-blind CSV ``sheet`` (its key beside it, schemas.sheets.key_path), which is
        never overwritten. ``failed`` counts the judge calls that failed for good (a rerun asks them
        again). Its options: a `JudgeConfig`'s fields, given as ``config`` or as keywords."""
        c = configured(JudgeConfig, config, options)
        sheet = Path(sheet)
        if sheet.exists():  # it may hold a person's labels
            raise ExperimentError(f"{sheet} exists; a sheet is never overwritten: give another ", Arg("sheet"))
        endpoint, store, domain = as_endpoint(judge), self.store, MathDomain()
        families = await self.roadmap_set(c.source)
        by_pid = {f.pid: f for f in families}
        [picked] = await self.picked(student, source=c.source, choice=choice, by_run_only=True)
        rollouts = [r for r in picked.rollouts if r.pid in by_pid]
        sizes, sample = draw(rollouts, c.n, c.seed)
        if not sample:
            raise ExperimentError(f"{store.path} holds no graded rollouts of student '{student}' on roadmap set "
                                  f"'{c.source}'")
        meta = {"judge": endpoint.model, "prompt": f"judge@{load_prompt('judge').version} {REASK}@{load_prompt(REASK).version}", "student": student,
                "source": c.source, "n": c.n, "max_tokens": c.max_tokens, "graded": sum(r.verdict.graded for r in rollouts)}
        async with calling(store, endpoint, "audit-judge", meta, concurrency=JUDGE_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            verdicts = await ask_judge(client, domain, by_pid, sample, c.max_tokens)
            run.incomplete = any(v == "failed" for v, _ in verdicts)
        key = write_sheet(sheet, key_path(sheet), domain, by_pid, sizes, sample, verdicts, meta, c.seed)
        return JudgeAuditResult(run_id=run.id, sampled=len(sample), judge_accepts=len(key["cases"]),
                                paired=paired(key),
                                failed=sum(v == "failed" for v, _ in verdicts),
                                unreadable=sum(v == "unreadable" for v, _ in verdicts), usage=client.usage,
                                batch_rows_submitted=client.batch_rows_submitted)

    async def review_audit(self, reviewer: str | Endpoint, students: Sequence[str], config: ReviewConfig | None = None,
                           *, choice: Choice = Choice(), **options: Any) -> ReviewAuditResult:
        """The automated rubric review (paper Appendix S.1, Table 42): the LLM ``reviewer`` labels each distinct
        composition-gap family (strict milestone test, ``threshold`` correct of K) of the students at one setting
        (``choice``) on a math roadmap set once, reading the first student's attempts that has it in the gap, and
        the label is stored for every student that has it there (the paper's 253 families carried to six models;
        a later review of a student's family replaces it); an unreadable reply as unreviewed, a call that failed
        for good not at all (a rerun asks it again). Returns the counts and Table 42 of the students. Its options: a
        `ReviewConfig`'s fields, given as ``config`` or as keywords."""
        c = configured(ReviewConfig, config, options)
        endpoint, store, domain = as_endpoint(reviewer), self.store, MathDomain()
        families = await self.roadmap_set(c.source)
        by_pid = {f.pid: f for f in families}
        results: dict[str, list] = {}
        todo: dict[str, tuple[Family, list[Rollout], list[str]]] = {}  # pid -> what is asked, the students it labels
        for student in dict.fromkeys(students):
            [picked] = await self.picked(student, source=c.source, choice=replace(choice, by_run=False),
                                         by_run_only=True)
            results[student] = [r for r in self._collected(domain, families, picked, False)
                                if not domain.ungradable(by_pid[r.pid])]
            gap = {r.pid for r in results[student] if known_gap(r, c.threshold) is Gap.COMPOSITION}
            rollouts: dict[str, list[Rollout]] = {}
            for r in picked.rollouts:
                rollouts.setdefault(r.pid, []).append(r)
            for pid in sorted(gap):
                todo.setdefault(pid, (by_pid[pid], rollouts.get(pid, []), []))[2].append(student)
        if not todo:
            raise ExperimentError(f"no composition-gap family of {', '.join(results)} on roadmap set '{c.source}' "
                                  "(it needs Stage 0 and C1-C3 results)")
        meta = {"reviewer": endpoint.model, "prompt": review_prompt(), "students": list(results), "source": c.source,
                "threshold": c.threshold, "max_tokens": c.max_tokens, "families": len(todo)}
        async with calling(store, endpoint, "audit-review", meta, concurrency=JUDGE_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            answers = await gather_or_cancel(*(ask_json(client, review_messages(f, rolls), RubricLabel,
                                                        max_tokens=c.max_tokens) for f, rolls, _ in todo.values()))
            for (f, _, labels), a in zip(todo.values(), answers):
                for student in labels if not a.failed else []:
                    await store.put_review(Review(student=student, source=c.source, pid=f.pid, reviewer=endpoint.model,
                                                  prompt=meta["prompt"], label=a.reply, reason=a.why,
                                                  run_id=run.id), wait=False)
            await store.flush()
            run.incomplete = any(a.failed for a in answers)
        table = {s: review_row(fams, {r.pid: r.label for r in await store.reviews(s, c.source)}, c.threshold)
                 for s, fams in results.items()}
        return ReviewAuditResult(run_id=run.id, families=len(todo), labeled=sum(a.reply is not None for a in answers),
                                 unreviewed=sum(a.reply is None and not a.failed for a in answers),
                                 failed=sum(a.failed for a in answers), usage=client.usage,
                                 batch_rows_submitted=client.batch_rows_submitted, table=table)

    async def roadmap_audit(self, student: str, *, source: str = "release", against: str | None = None,
                            choice: Choice = Choice()) -> roadmap.Containment:
        """The milestone answers in the student's own unaided (C1) attempts at one setting (paper Tables 35
        to 37: `audit.roadmap.roadmap_match`); ``against``, a second roadmap set of the same problems whose
        golds are read in the same attempts (Table 37's ratio). Refused where the student has no C1
        attempt there."""
        families = await self.roadmap_set(source)
        found = await self.result_groups(student, families[0].provenance.roadmap_set)
        rollouts = [r for g in pick(student, source, found, choice) for r in g.rollouts] if found else []
        if not any(r.target == C1.name for r in rollouts):
            raise ExperimentError(f"{self.path} holds no C1 attempts of student '{student}' on roadmap set "
                                  f"'{source}'; run `ladder probe --student {student} --conditions C1` first")
        other = None if against is None else await self.roadmap_set(against)
        return roadmap.roadmap_match(families, rollouts, other)
