"""PRIM's stages on `Experiment` (docs/prim.md): the gold primitives' import, the teacher's guidance
compiled, the four dimensions probed, a student's primitives scored by the judge and its answers read
by an answer judge, the judge's audit sheet, and the analyses read back."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_module
from ..compiler.loop import Compiler
from ..domains.math import collect_results
from ..ladder import ProbeConfig as JobConfig  # what the domain plans and grades a probe's jobs by
from ..prim import audit
from ..prim.analysis import PrimReport, StudentPoint, across, prim_report
from ..prim.compile import KINDS, PrimCompileDomain
from ..prim.dimensions import DIMENSIONS
from ..prim.gold import read_gold
from ..prim.judge import judge_primitive, prompt_version
from ..prim.markdown import across_md, report_md
from ..prim.probe import (
    DISCOVERY,
    EXECUTION,
    GENERATION,
    SOURCES,
    PrimDomain,
    Supports,
    prim_source,
    problem_text,
    read_written,
)
from ..prim.scoring import TAU, UNREADABLE_SCORE, primitive_acc
from ..probe.runner import run_probe, uncached_calls
from ..report.report import write_files
from ..runtime import gather_or_cancel
from ..schemas import Family, Rollout
from ..schemas.prim import PrimPrimitive
from ..schemas.types import GradeStatus
from ..store import FailedJob, PrimScore
from ..validators.primitive import check_leak as check_primitive_leak
from .configs import PrimAuditConfig, PrimConfig, PrimReportConfig, configured
from .endpoint import CONCURRENCY, JUDGE_CONCURRENCY, TEACHER_CONCURRENCY, Endpoint, as_endpoint
from .errors import Arg, ExperimentError
from .prim_benchmark import AnswerJudging, Rejected
from .results import (
    GoldImportResult,
    JobFailure,
    PrimAnswersResult,
    PrimCompileResult,
    PrimProbeResult,
    PrimScoreResult,
    ProbeEstimate,
)
from .run import Progress, calling, no_progress
from .selection import Choice, Picked, matches, pick

if TYPE_CHECKING:
    from ..prim import plots as _plots
    from ..viewer import site as _site
else:  # matplotlib and the site: loaded by the first report written, not by a probe or a score
    _plots = lazy_module("oracleladder.prim.plots")
    _site = lazy_module("oracleladder.viewer.site")


class PrimStages(AnswerJudging):
    """PRIM's stages of `Experiment`: over its store, pool and notify, reading roadmap sets as it does."""

    async def import_primitives(self, path: str | os.PathLike[str], *,
                                fields: tuple[str, ...] = ()) -> GoldImportResult:
        """Gold primitives and reference solutions from a JSONL file (`prim.gold`); the whole file is
        read first, so a bad line imports nothing. A gold primitive is checked against every stored
        family of its problem by the teacher primitives' leak check (`validators.primitive.check_leak`,
        on the final answers: the reference answer, its correction, the INTEGRATE gold): one that states
        one is listed and left out (its solution is kept); one with no family in the store is imported
        unchecked, and listed so."""
        records = read_gold(path, fields)
        families: dict[str, list[Family]] = {}
        for f in await self.store.families():
            families.setdefault(f.pid, []).append(f)
        leaking: dict[str, str] = {}
        unchecked: list[str] = []
        for r in records:
            found = [c for f in families.get(r.pid, [])
                     if not (c := check_primitive_leak(r.primitive.text, f, final_only=True)).passed]
            if found:
                leaking[r.pid] = found[0].reason
            else:
                await self.store.put_primitive(r.primitive, wait=False)
                if r.pid not in families:
                    unchecked.append(r.pid)
            if r.solution is not None:
                await self.store.put_solution(r.pid, r.solution, wait=False)
        await self.store.flush()
        return GoldImportResult(imported=len(records) - len(leaking), leaking=leaking, unchecked=unchecked)

    async def prim_compile(self, teacher: str | Endpoint, *, kind: str = "teacher-problem-only",
                           source: str = "release", max_attempts: int = 3, max_tokens: int = 4096,
                           progress: Progress | None = None) -> PrimCompileResult:
        """The teacher's primitive from the problem alone (``teacher-problem-only``, Fig. 10), its plan
        (``plan``, Fig. 11), or its curation primitive from the answer and solution, classified
        (``teacher``, Fig. 7), for each family of ``source`` that has none from this teacher; checked,
        re-asked, every attempt stored (`prim.compile`)."""
        if kind not in KINDS:
            raise ExperimentError(f"unknown kind {kind!r}; known: {', '.join(KINDS)}")
        endpoint = as_endpoint(teacher)
        families = await self.roadmap_set(source)
        have = (set(await self.store.plans(endpoint.model)) if kind == "plan" else
                {p.pid for p in await self.store.primitives(provenance=kind, author=endpoint.model)})
        todo = [f for f in families if f.pid not in have]
        config = {"teacher": endpoint.model, "kind": kind, "source": source, "max_attempts": max_attempts,
                  "families": len(todo)}
        async with calling(self.store, endpoint, "prim-compile", config, concurrency=TEACHER_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            with (progress or no_progress)(f"prim {kind} with {endpoint.model}", len(todo), client) as advance:
                domain = PrimCompileDomain(kind, pool=self.pool, solutions=await self.store.solutions())  # type: ignore[arg-type]
                compiler = Compiler(client, self.store, domain,
                                    max_attempts=max_attempts, max_tokens=max_tokens)
                outcomes = await compiler.compile_all(todo, on_done=advance)
            run.incomplete = any(o.infrastructure_failure for o in outcomes)
        return PrimCompileResult(
            run_id=run.id, kind=kind, families=len(families), had=len(families) - len(todo),
            compiled=sum(o.ok for o in outcomes),
            failed_why={o.pid: f"{o.errors[0].check}: {o.errors[0].reason}" for o in outcomes
                        if not o.ok and o.errors and not o.infrastructure_failure},
            infrastructure_failures=sum(o.infrastructure_failure for o in outcomes), usage=client.usage,
            budget_stop=client.budget_stop)

    async def prim_supports(self, student: str, roadmap_set: str, *, teacher: str | None = None,
                            at: Choice = Choice()) -> Supports:
        """The primitives (gold; a teacher's, ``teacher`` or else the last stored), the solutions, the
        student's own Discovery primitives (those made at the settings ``at``: a probe at one budget never
        shows a primitive written at another) and the teacher's plans that PRIM's jobs read."""
        primitives: dict[tuple[str, str], PrimPrimitive] = {}
        for p in await self.store.primitives():
            if p.provenance in ("teacher", "teacher-problem-only") and teacher is not None and p.author != teacher:
                continue
            if p.provenance != "self":
                primitives[(p.pid, p.provenance)] = p
        discovered = {(r.pid, r.k): fields for r in await self._rollouts_at(student, prim_source(roadmap_set), at)
                      if r.target == DISCOVERY and (fields := read_written(r)) is not None}
        return Supports(primitives, await self.store.solutions(), discovered, await self.store.plans(teacher))

    async def prim_probe(self, student: str | Endpoint, config: PrimConfig | None = None, *,
                         progress: Progress | None = None, **options: Any) -> PrimProbeResult | ProbeEstimate:
        """Probe PRIM's ``dimensions`` of a student on one roadmap set, Execution under each of
        ``sources`` (``dimensions``: default every declared one); cached and resumable like every probe. Execution under ``self`` runs after
        Discovery, on the primitive of the same sample. ``dry_run``: the calls the run would make after
        the cache and their estimate, and no run (Execution under ``self`` counted only where the
        student's Discovery is stored already). ``shard``: only the families of that shard
        (`ladder.shards`). ``use_corrections``: Generation and Execution graded against the corrected reference
        answers, as a ladder probe's (a setting of its own: a report never pools it with the plain grading). These
        are a `PrimConfig`'s fields, given as ``config`` or as keywords."""
        c = configured(PrimConfig, config, options)
        dimensions, sources = c.dimensions or DIMENSIONS.names, c.sources
        bad = [d for d in dimensions if d not in DIMENSIONS] + [s for s in sources if s not in SOURCES]
        if bad:
            raise ExperimentError(f"unknown dimension or primitive source {bad[0]!r}; dimensions: "
                                  f"{', '.join(DIMENSIONS.names)}; sources: {', '.join(SOURCES)}")
        endpoint = as_endpoint(student)
        grading = JobConfig(student=endpoint.model, k=c.k, max_tokens=c.max_tokens, temperature=c.temperature,
                            grader=c.grader, use_corrections=c.use_corrections)
        donors = await self.roadmap_set(c.source)
        families = c.shard.of(donors[:c.limit])
        at = Choice(max_tokens=c.max_tokens, temperature=c.temperature, grader=c.grader)  # this probe's settings
        # the student's own primitive is its Discovery output (at this probe's settings): asked first, then shown
        passes = [(dimensions, [s for s in sources if s != "self"])]
        if "self" in sources and "execution" in dimensions:
            passes.append((("execution",), ["self"]))
        if c.dry_run:
            supports = await self.prim_supports(endpoint.model, c.source, teacher=c.teacher, at=at)
            jobs = PrimDomain(supports, dimensions, sources).plan_jobs(families, grading, donors)
            async with await self.client(endpoint) as client:
                todo = await uncached_calls(jobs, client=client, store=self.store, temperature=c.temperature,
                                            max_tokens=c.max_tokens)
            return ProbeEstimate.of(client, todo, jobs=len(jobs), families=len(families))
        failed: list[FailedJob] = []
        run_config = {**grading.__dict__, "source": c.source, "dimensions": list(dimensions), "sources": list(sources),
                      "teacher": c.teacher, "families": len(families)}
        async with calling(self.store, endpoint, "prim-probe", run_config, concurrency=CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            skipped: dict[str, int] = {}
            done = 0
            for dims, srcs in passes:
                supports = await self.prim_supports(endpoint.model, c.source, teacher=c.teacher, at=at)
                domain = PrimDomain(supports, dims, srcs, pool=self.pool)
                jobs = domain.plan_jobs(families, grading, donors)
                skipped.update(domain.skipped(families, grading))
                with (progress or no_progress)(f"prim probe {grading.student}", len(jobs), client) as advance:
                    def fail(job: FailedJob) -> None:
                        failed.append(job)
                        advance(job)

                    done += await run_probe(domain, families, grading, client=client, store=self.store,
                                            run_id=run.id, source=c.source, on_done=advance, on_failed=fail,
                                            donors=donors, workers=len(jobs) if client.batch else None)
            ungraded = await self.store.rollout_count(run_id=run.id, status=GradeStatus.UNGRADED)
            run.incomplete = bool(failed or ungraded)
        return PrimProbeResult(run_id=run.id, families=len(families), rollouts=done, usage=client.usage,
                               ungraded=ungraded, skipped=skipped, budget_stop=client.budget_stop,
                               batch_rows_submitted=client.batch_rows_submitted,
                               failed_jobs=[JobFailure(pid=j.pid, target=j.target, k=j.k, reason=j.reason)
                                            for j in failed])

    async def prim_score(self, judge: str | Endpoint, student: str, *, source: str = "release", tau: float = TAU,
                         max_tokens: int = 2048, choice: Choice = Choice()) -> PrimScoreResult:
        """Score each Discovery and Digestion primitive of ``student`` on a roadmap set, made at one setting
        (``choice``, by its run: `_judged_rollouts`), against the problem's gold primitive with the ``judge``
        (`prim.judge`); each score stored under the judge and the rollout it scored. An unreadable primitive
        is scored 0 without a call; a judge with no readable reply after its re-ask leaves the score missing."""
        endpoint = as_endpoint(judge)
        families = {f.pid: f for f in await self.roadmap_set(source)}
        golds = {p.pid: p for p in await self.store.primitives(provenance="gold")}
        solutions = await self.store.solutions()
        settings, picked, _ = await self._judged_rollouts(student, source, choice)
        rollouts = [r for r in picked if r.target in DIMENSIONS.written and r.verdict.graded and r.pid in families]
        todo = [r for r in rollouts if r.pid in golds]
        meta = {"judge": endpoint.model, "student": student, "source": source, "prompts": prompt_version(),
                "max_tokens": max_tokens, "primitives": len(todo), "student_settings": settings}
        async with calling(self.store, endpoint, "prim-score", meta, concurrency=JUDGE_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            async def one(r: Rollout) -> PrimScore:
                base = {"student": student, "source": r.source, "pid": r.pid, "target": r.target, "k": r.k,
                        "judge": endpoint.model, "run_id": run.id, "rollout_call": r.call_key}
                written = read_written(r)
                if written is None:
                    return PrimScore(**base, status="scored", validity=0, score=0.0, reason=UNREADABLE_SCORE)
                j = await judge_primitive(client, written, golds[r.pid], problem_text(families[r.pid]),
                                          solutions.get(r.pid, "(no reference solution given)"), max_tokens)
                return PrimScore(**base, status="missing" if j.missing else "scored", validity=j.validity,
                                 failure=j.failure, gate=j.gate, mechanism=j.mechanism, score=j.score,
                                 reason=j.missing, evidence=j.evidence, call_keys=j.keys)

            scores = await gather_or_cancel(*(one(r) for r in todo))
            for s in scores:
                await self.store.put_prim_score(s, wait=False)
            await self.store.flush()
            run.incomplete = any(s.status == "missing" for s in scores)
        correct: dict[str, int] = {}
        for s in scores:
            if s.score is not None and primitive_acc(s.score, tau):
                correct[s.target] = correct.get(s.target, 0) + 1
        return PrimScoreResult(run_id=run.id, scored=sum(s.status == "scored" for s in scores),
                               unreadable=sum(s.reason == UNREADABLE_SCORE for s in scores),
                               missing=sum(s.status == "missing" for s in scores),
                               without_gold=len(rollouts) - len(todo), correct=correct, tau=tau, usage=client.usage,
                               budget_stop=client.budget_stop)

    async def prim_groups(self, student: str, *, source: str = "release", choice: Choice = Choice()) -> list[Picked]:
        """The groups of a student's PRIM results on a roadmap set that ``choice`` picks (`selection.pick`, as
        a ladder report picks: one, or with ``choice.by_run`` each); [] where it has none."""
        found = await self.result_groups(student, prim_source(source))
        return pick(student, source, found, choice) if found else []

    async def _judged_rollouts(self, student: str, source: str,
                               choice: Choice) -> tuple[str | None, list[Rollout], bool]:
        """What a judge of the student's PRIM answers reads: the rollouts of one group of settings (``choice``;
        refused naming the groups and the runs that pick one where there are several: a judge's own
        --max-tokens is its own, so a group is picked by its run), its settings and whether it was graded
        against the corrected reference answers; (None, [], False) for none."""
        found = await self.result_groups(student, prim_source(source))
        if not found:
            return None, [], False
        [group] = pick(student, source, found, replace(choice, by_run=False), by_run_only=True)
        return group.describe(), group.rollouts, bool(group.settings.use_corrections)

    async def prim_report(self, student: str, judge: str, config: PrimReportConfig | None = None, *,
                          out: str | os.PathLike[str] | None = None, html: bool = False,
                          choice: Choice = Choice(), **options: Any) -> PrimReport:
        """PRIM's tables of ``student`` on a roadmap set with ``judge``'s scores, its results at one setting
        (``choice``: refused naming the settings where the store holds several and none is picked), beside
        the ladder's labels of the same student at the same settings (`prim.analysis`); ``after``: another
        checkpoint whose Generation (its `prim probe`) repairs the student's failures (Tables 3 / 11);
        ``answer_judge``: an answer also counts right where that answer judge (`prim_answers`) reads it
        correct, and the report says so; with ``out``, report.json, report.md and the figures (`prim.plots`)
        there, and with ``html`` the HTML report in out/html. ``source``, ``tau``, ``threshold``,
        ``rescue_source``, ``after`` and ``answer_judge`` are a `PrimReportConfig`'s fields, given as
        ``config`` or as keywords."""
        c = configured(PrimReportConfig, config, options)
        source, after, answer_judge = c.source, c.after, c.answer_judge
        if html and out is None:
            raise ExperimentError("the HTML report needs a folder (out) to be written in")
        families = await self.roadmap_set(source)
        golds = {p.pid: p.family for p in await self.store.primitives(provenance="gold")}
        pids = {f.pid: golds[f.pid] for f in families if f.pid in golds}
        if not pids:
            raise ExperimentError(f"no family of '{source}' has a gold primitive: `ladder prim import` them first")
        group = next(iter(await self.prim_groups(student, source=source, choice=replace(choice, by_run=False))), None)
        rollouts = [] if group is None else group.rollouts
        made = {r.call_key for r in rollouts}  # a score is of the rollout it scored, made at this setting
        scores = [s for s in await self.store.prim_scores(student=student, judge=judge, source=prim_source(source))
                  if s.rollout_call in made]
        ladder = collect_results(families, [] if group is None else await self._ladder_beside(student, families, group))
        sources = sorted({r.target.split(":", 1)[1] for r in rollouts if r.target.startswith(EXECUTION)},
                         key=SOURCES.index)
        judged_right = set() if answer_judge is None else {
            (v.pid, v.target, v.k) for v in await self.store.answer_verdicts(
                student=student, judge=answer_judge, source=prim_source(source))
            if v.verdict == "correct" and v.rollout_call in made}
        calls = {r.call_key: await self.store.get_call(r.call_key) for r in rollouts}
        tokens = {key: call.tokens_out for key, call in calls.items() if call is not None}
        finish = {key: None if call is None else call.finish_reason for key, call in calls.items()}
        report = prim_report(student=student, judge=judge, roadmap_set=source, pids=pids, rollouts=rollouts,
                             scores=scores, ladder=ladder, tau=c.tau, threshold=c.threshold, sources=sources,
                             rescue_source=c.rescue_source, tokens=tokens, finish=finish,
                             settings=None if group is None else group.describe(),
                             budgets=[] if group is None or group.settings.max_tokens is None
                             else [group.settings.max_tokens],
                             primitives=[p for p in await self.store.primitives() if p.provenance != "self"],
                             answer_judge=None if answer_judge is None else (answer_judge, judged_right),
                             after=None if after is None else (after, await self.store.rollouts(
                                 student=after, source=prim_source(source), target=GENERATION)))
        if out is not None:
            folder, md = Path(out), report_md(report)
            write_files(folder, report.model_dump(mode="json"), md)
            _plots.write_prim_plots(report, folder)
            if html:
                _site.write_prim_site(folder / "html", report, md, families, rollouts)
        return report

    async def _ladder_beside(self, student: str, families: Sequence[Family], group: Picked) -> list[Rollout]:
        """The student's ladder rollouts on ``families`` made at the budget, temperature and grader of its PRIM
        ``group`` (none where the ladder was probed at other settings)."""
        return await self._rollouts_at(student, families[0].provenance.roadmap_set, Choice(
            max_tokens=group.settings.max_tokens, temperature=group.settings.temperature, grader=group.settings.grader))

    async def _rollouts_at(self, student: str, rollout_source: str, at: Choice) -> list[Rollout]:
        """A student's rollouts filed under ``rollout_source`` made at the settings ``at`` names ([] where none
        are; refused naming the groups where several are: `selection.pick`)."""
        found = [g for g in await self.result_groups(student, rollout_source)
                 if matches(g, at)]
        return [r for g in pick(student, rollout_source, found, at) for r in g.rollouts] if found else []

    async def prim_answers(self, judge: str | Endpoint, student: str, *, source: str = "release",
                           max_tokens: int = 2048, choice: Choice = Choice()) -> PrimAnswersResult:
        """The answer judge (`prim.judge.judge_answer`) on each Generation and Execution answer of
        ``student`` made at one setting (``choice``, by its run: `_judged_rollouts`) that the grader did not
        accept: for free-form answers no symbolic grader can decide. Its verdicts are stored apart
        (`prim_answer_verdicts`, under the rollout judged); the grader's stay as they are."""
        families = {f.pid: f for f in await self.roadmap_set(source)}
        settings, picked, corrected = await self._judged_rollouts(student, source, choice)
        todo = [r for r in picked if (r.target == GENERATION or r.target.startswith(EXECUTION))
                and r.verdict.graded and not r.verdict.accepted and r.pid in families]
        return await self._judge_answers(judge, "prim-answers", {"source": source, "student_settings": settings},
                                         Rejected(student, todo, families, corrected), max_tokens)

    async def prim_audit(self, judge: str, student: str, sheet: str | os.PathLike[str],
                         config: PrimAuditConfig | None = None, *, choice: Choice = Choice(), **options: Any) -> int:
        """The judge's audit sheet (`prim.audit`): a seeded sample of ``n`` of the judge's scores of
        ``student``'s primitives made at one setting (``choice``, by its run: `_judged_rollouts`), half judged
        correct (with ``routes``, the alternative-route audit: all judged incorrect), blind to the judge, with
        its key beside it; never overwritten. Returns the number of cases. The sample: the `PrimAuditConfig`
        given as ``config`` or as keywords."""
        c = configured(PrimAuditConfig, config, options)
        source, tau, routes = c.source, c.tau, c.routes
        path = Path(sheet)
        if path.exists():  # it may hold a person's labels
            raise ExperimentError(f"{path} exists; a sheet is never overwritten: give another ", Arg("sheet"))
        families = {f.pid: f for f in await self.roadmap_set(source)}
        _, picked, _ = await self._judged_rollouts(student, source, choice)
        made = {r.call_key: r for r in picked}
        scores = [s for s in await self.store.prim_scores(student=student, judge=judge, source=prim_source(source))
                  if s.pid in families and s.rollout_call in made]
        sample = audit.draw(scores, c.n, c.seed, tau, routes=routes)
        if not sample:
            raise ExperimentError(f"{self.store.path} holds no scores by judge '{judge}' of student '{student}' on "
                                  f"'{source}': run `ladder prim score` first")
        written = {key: fields for key, r in made.items() if (fields := read_written(r)) is not None}
        golds = {p.pid: p for p in await self.store.primitives(provenance="gold")}
        return audit.write_sheet(path, sample, problems={pid: problem_text(f) for pid, f in families.items()},
                                 solutions=await self.store.solutions(), golds=golds, written=written,
                                 meta={"judge": judge, "student": student, "source": source, "seed": c.seed}, tau=tau,
                                 routes=routes)

    async def prim_across(self, students: Sequence[str], judge: str, config: PrimReportConfig | None = None, *,
                          out: str | os.PathLike[str] | None = None, **options: Any) -> dict[str, StudentPoint]:
        """Figures 2 and 3 over ``students`` (each one's report, `prim_report`, of the `PrimReportConfig`
        given as ``config`` or as keywords); with ``out``, across.json, across.md and the two figures
        (across-figure2.png, across-figure3.png) there."""
        c = configured(PrimReportConfig, config, options)
        source = c.source
        reports = [await self.prim_report(s, judge, c) for s in students]
        points = across(reports)
        if out is not None:
            folder = Path(out)
            write_files(folder, {s: p.model_dump(mode="json") for s, p in points.items()},
                        across_md(points, source, judge), "across")
            _plots.write_across_plots(points, folder)
        return points
