"""The read side of an experiment: what reads the store and computes, with no client and no call.

Results of a student on a roadmap set, the report, the comparisons, the construction funnel and the
re-anchoring counts; the families of a set and their export. `Experiment` is a Reader that also
runs the stages that write (`stages.py`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._lazy import lazy_module
from ..audit import format as fmt
from ..construction.funnel import Funnel, fate, final_set, funnel as build_funnel
from ..domains import get_domain
from ..domains.math import collect_results
from ..ladder import Domain, ProbeConfig, Settings
from ..ladder.outcomes import FamilyResults
from ..report.primitive import PrimitiveVsRoadmap, primitive_table, write_primitive_vs_roadmap
from ..schemas import Family, parse_roadmap_set, to_released
from ..schemas.jsonl import InputError, did_you_mean, write_jsonl
from ..store import CompileAttempt, RunRecord, Store
from ..validators.atomicity import atomicity_problem
from ..verify import GRADER_VERSIONS
from .errors import ExperimentError
from .files import CheckResult, check_families

if TYPE_CHECKING:
    from ..construction import reanchor as _reanchor
    from ..report import compare as _compare, report as _report
    from ..viewer import site as _site
else:  # loaded when a command first needs them (SciPy, matplotlib, markdown-it)
    _reanchor = lazy_module("oracleladder.construction.reanchor")
    _compare = lazy_module("oracleladder.report.compare")
    _report = lazy_module("oracleladder.report.report")
    _site = lazy_module("oracleladder.viewer.site")


@dataclass
class Report:
    """What a report counts: per student, its results on a roadmap set (families whose reference answer
    is unusable left out), and what is in no table. ``summary(student)`` gives its tables as a dict;
    ``Experiment.write_report`` writes report.md, report.json, the plots and the HTML."""

    source: str
    domain: str
    tau: int
    families: list  # the set's families (of the first student)
    results: dict[str, list[FamilyResults]]
    missing: dict[str, dict]  # per student, its missing_counts (ungraded rollouts, failed jobs)
    ungradable: dict[str, str]  # pid -> why its reference answer is unusable
    graders: dict[str, str] | None = None  # per student, the grader(s) and version(s) of its rollouts
    formats: dict[str, dict] | None = None  # per student, its format audit

    def summary(self, student: str) -> dict:
        return _report.summarize(self.results[student], self.tau)


class Reader:
    """What an experiment's store holds, read and computed: ``Reader(store)`` on an open store (an
    Experiment is one, its store opened by ``async with``)."""

    def __init__(self, store: Store | None = None) -> None:
        self._store = store

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("use the Experiment as `async with Experiment(path) as ex:`")
        return self._store

    async def roadmap_set(self, name: str) -> list[Family]:
        """The families of one math roadmap set ('release', a teacher, TEACHER@coarse|fine), refusing
        an empty or unknown set by name."""
        return await self.domain_families(self.domain("math"), name)

    async def domain_families(self, domain: Domain, source: str) -> list:
        """The families of one set of a domain, refusing an empty or unknown set by name."""
        try:
            return await domain.load_families(self.store, source)
        except InputError as exc:  # the domain's one line on what to run first
            raise ExperimentError(str(exc)) from None

    def domain(self, name: str = "math", settings: Settings = Settings()) -> Domain:
        """The domain of a --domain name (refused naming the known ones)."""
        try:
            return get_domain(name, settings)
        except InputError as exc:
            raise ExperimentError(str(exc)) from None

    async def attempts(self, teacher: str, pid: str | None = None) -> list[CompileAttempt]:
        """A teacher's compile attempts (of one problem, or of all), each with its plan and its errors,
        in order; refused by name when the teacher has none."""
        found = await self.store.compile_attempts(pid, teacher)
        if not found:
            which = f" of problem '{pid}'" if pid else ""
            raise ExperimentError(f"{self.store.path} holds no compile attempts{which} by teacher '{teacher}'"
                                  f"{did_you_mean(teacher, await self.store.sources())}")
        return found

    async def check(self, source: str, *, use_corrections: bool = False) -> CheckResult:
        """Every deterministic validator on the families of one math roadmap set of the store (`ladder
        check --source SET`)."""
        return check_families(await self.roadmap_set(source), use_corrections=use_corrections)

    async def set_verdicts(self, set_name: str) -> list:
        verdicts = await self.store.screen_verdicts(set_name)
        if not verdicts:
            sets = await self.store.screen_sets()
            raise ExperimentError(f"{self.store.path} holds no screened set '{set_name}'{did_you_mean(set_name, sets)} "
                                  f"(sets: {', '.join(sets) or 'none'}); run `ladder screen` first")
        return verdicts

    async def families(self, *, teacher: str | None = None, set_name: str | None = None) -> list[Family]:
        """The store's families (of one source/teacher), or the final set of `screen(set_name=...)`."""
        if set_name is None:
            return await self.store.families(source=teacher)
        if teacher is not None:
            raise ExperimentError("--set and --teacher exclude each other (a set has its own source)")
        verdicts = await self.set_verdicts(set_name)
        return final_set(await self.roadmap_set(verdicts[0].source), verdicts)

    async def export(self, out: str | os.PathLike[str], *, teacher: str | None = None,
                     set_name: str | None = None) -> int:
        """Write families in the released record format; returns how many. None to write is an
        ExperimentError, and no file."""
        families = await self.families(teacher=teacher, set_name=set_name)
        if not families:
            sources = await self.store.sources()
            which = f" from '{teacher}'{did_you_mean(teacher, sources)}" if teacher else ""
            raise ExperimentError(f"{self.store.path} holds no families{which} (sources in the store: "
                                  f"{', '.join(sources) or 'none'}): nothing written to {out}")
        return write_jsonl(out, (to_released(f) for f in families))

    async def funnel(self, *, set_name: str | None = None, source: str | None = None) -> Funnel:
        """The construction funnel of a screened set (default: the store's only set), or with ``source``
        the compile steps of a teacher's roadmap set before any screen."""
        store = self.store
        if set_name is not None and source is not None:
            raise ExperimentError("--set and --source exclude each other (a set has its own source)")
        if source is not None:  # before any screen: the compile steps, compiled families "not screened"
            verdicts, name = {}, source
        else:
            if set_name is None:  # the store's only set
                sets = await store.screen_sets()
                if len(sets) != 1:
                    raise ExperimentError(f"{store.path} holds {len(sets)} screened sets ({', '.join(sets) or 'none'});"
                                          " name one with --set, or give --source for the compile steps alone")
                set_name = sets[0]
            verdicts = {v.pid: v for v in await self.set_verdicts(set_name)}
            name = next(iter(verdicts.values())).source
        teacher, granularity = parse_roadmap_set(name)
        families = {f.pid: f for f in await store.families(source=teacher, granularity=granularity)}
        fates = []
        for problem in await store.problems("math"):
            attempts = await store.compile_attempts(problem.pid, teacher, granularity=granularity)
            if attempts or problem.pid in families:
                fates.append(fate(problem.pid, attempts, families.get(problem.pid), verdicts.get(problem.pid)))
        # families without a stored problem (imported ones) are candidates too
        seen = {f.pid for f in fates}
        fates += [fate(pid, [], family, verdicts.get(pid)) for pid, family in families.items() if pid not in seen]
        return build_funnel(set_name or "", name, fates)

    async def gap_counts(self, anchors: Sequence[str], models: Sequence[str], *, source: str = "release",
                         k: int = 8, max_tokens: int = 4096,
                         ) -> tuple[dict[str, int], dict[str, dict[str, int]], list[str]]:
        """Each model's results on a set from its stored rollouts at K and max_tokens (rollouts of other
        settings left out), then the per-anchor subsets and composition-gap counts (reanchor.gap_counts)."""
        families = await self.roadmap_set(source)
        budget = {r.id for r in await self.store.runs("probe")
                  if isinstance(r.config, dict) and r.config.get("max_tokens") == max_tokens}
        results = {}
        for model in models:
            rollouts = [r for r in await self.store.rollouts(student=model, source=families[0].provenance.roadmap_set)
                        if r.k < k and r.run_id in budget]
            results[model] = collect_results(families, rollouts)
        return _reanchor.gap_counts(results, list(anchors), k)

    async def results(self, student: str, *, source: str = "release", use_corrections: bool = False,
                      domain: str = "math") -> tuple[list, list[FamilyResults], dict]:
        """The families of a roadmap set, the student's results on them, and the verdicts they lack
        (ungraded rollouts, failed jobs: in no result)."""
        store, ladder = self.store, self.domain(domain)
        families = await self.domain_families(ladder, source)
        rollout_source = ladder.rollout_source(families[0], source)
        rollouts = await store.rollouts(student=student, source=rollout_source)
        failed = await store.failed_jobs(student=student, source=rollout_source)
        if not rollouts and not failed:
            students = await store.students()
            raise ExperimentError(f"{store.path} holds no rollouts of student '{student}'"
                                  f"{did_you_mean(student, students)} on families from '{source}' (students in "
                                  f"the store: {', '.join(students) or 'none'}); run `ladder probe --student "
                                  f"{student} --source {source}` first")
        missing = _report.missing_counts([r.target for r in rollouts if not r.verdict.graded], [j.target for j in failed])
        return families, ladder.collect_results(families, rollouts, use_corrections=use_corrections), missing

    async def graders(self, student: str, *, source: str = "release") -> str:
        """The grader (with its version) of a student's math rollouts on a roadmap set: "strict (strict-2)",
        or every one of them joined by " + " when runs were graded differently."""
        families = await self.roadmap_set(source)
        rollouts = await self.store.rollouts(student=student, source=families[0].provenance.roadmap_set)
        runs = {r.id: r for r in await self.store.runs("probe")}
        names = sorted({ProbeConfig.stored(runs[r.run_id].config if r.run_id in runs else None, student).grader
                        for r in rollouts})
        return " + ".join(f"{g} ({GRADER_VERSIONS[g]})" for g in names)

    def check_html(self, domain: str = "math") -> None:
        """Refuses the HTML report for a domain whose answers the verifier does not grade."""
        if not self.domain(domain).verifier:
            raise ExperimentError(f"--html shows math roadmap sets; the {domain} ladder has report.md and report.json")

    async def report(self, students: Sequence[str], *, source: str = "release", threshold: int = 1,
                     use_corrections: bool = False, domain: str = "math") -> Report:
        """Outcome and taxonomy tables, controls and CIs of one or two students (Report.summary); a
        family whose reference answer is unusable is listed, never graded."""
        ladder = self.domain(domain)
        loaded = {name: await self.results(name, source=source, use_corrections=use_corrections, domain=domain)
                  for name in students}
        ungradable = {f.pid: why for fams, _, _ in loaded.values() for f in fams
                      if (why := ladder.ungradable(f, use_corrections))}
        results = {name: [r for r in res if r.pid not in ungradable] for name, (_, res, _) in loaded.items()}
        # answers the verifier graded: which grader, and the format audit of their final answers
        graded = ladder.verifier
        return Report(
            source=source, domain=domain, tau=threshold, families=next(iter(loaded.values()))[0], results=results,
            missing={name: r[2] for name, r in loaded.items()}, ungradable=ungradable,
            graders={name: await self.graders(name, source=source) for name in students} if graded else None,
            formats={name: await fmt.format_audit(self.store, name, source) for name in students} if graded else None)

    async def write_report(self, counted: Report, out: str | os.PathLike[str], *, html: bool = False) -> dict:
        """report.md, report.json and the plots in ``out`` (with ``html``, the site in out/html too);
        returns what report.json holds."""
        if html:
            self.check_html(counted.domain)
        out = Path(out)
        res = _report.write_report(counted.results, out, tau=counted.tau, roadmap_set=counted.source,
                                   graders=counted.graders, ungradable=counted.ungradable, missing=counted.missing,
                                   formats=counted.formats)
        if html:
            records = await _site.read_records(self.store, list(counted.results),
                                               counted.families[0].provenance.roadmap_set)
            _site.write_site(out / "html", res, (out / "report.md").read_text(), counted.families, counted.results,
                            records)
        return res

    async def _compared(self, a: str, b: str, student: str, use_corrections: bool,
                        allow_mixed_graders: bool) -> tuple[dict, tuple[list, list], tuple[list, list]]:
        families_a, results_a, _ = await self.results(student, source=a, use_corrections=use_corrections)
        families_b, results_b, _ = await self.results(student, source=b, use_corrections=use_corrections)
        graded_a, graded_b = await self.graders(student, source=a), await self.graders(student, source=b)
        if graded_a != graded_b and not allow_mixed_graders:
            raise ExperimentError(f"{a} was graded by {graded_a} and {b} by {graded_b}: a difference between them "
                                  "could be the grader's; regrade one, or pass --allow-mixed-graders")
        k = max((len(rolls) for r in results_a + results_b for rolls in r.ladder.values()), default=0)
        result = _compare.compare(families_a, families_b, results_a, results_b,
                                  is_atomic=lambda gold: atomicity_problem(gold) is None, k=k)
        return result, (families_a, families_b), (results_a, results_b)

    async def compare(self, a: str, b: str, student: str, *, use_corrections: bool = False,
                      allow_mixed_graders: bool = False) -> dict:
        """Two teachers or two granularities on the same problems (paper Appendix P); refused when the
        two sets were graded by different graders unless ``allow_mixed_graders``. probe.compare's
        write_compare writes it (write_compare below writes it with its HTML)."""
        return (await self._compared(a, b, student, use_corrections, allow_mixed_graders))[0]

    async def write_compare(self, a: str, b: str, student: str, out: str | os.PathLike[str], *,
                            use_corrections: bool = False, allow_mixed_graders: bool = False,
                            html: bool = False) -> dict:
        """compare.md and compare.json in ``out`` (with ``html``, the comparison's site in out/html
        too); returns the comparison."""
        out = Path(out)
        result, families, results = await self._compared(a, b, student, use_corrections, allow_mixed_graders)
        _compare.write_compare(result, out, name_a=a, name_b=b, student=student)
        if html:
            records = tuple([(await _site.read_records(self.store, [student], fams[0].provenance.roadmap_set))[student]
                             for fams in families])
            _site.write_compare_site(out / "html", result, (out / "compare.md").read_text(), (a, b), student,
                                     families, results, records)
        return result

    async def compare_primitive(self, source: str, student: str, *, threshold: int = 1,
                                use_corrections: bool = False) -> PrimitiveVsRoadmap:
        """The primitive against the roadmap on one roadmap set: C2-primitive vs C2 for one student
        (docs/primitive.md); refused when no family has both."""
        _, results, _ = await self.results(student, source=source, use_corrections=use_corrections)
        result = primitive_table(results, threshold)
        if not result.n:
            raise ExperimentError(f"no family of '{source}' has both C2-primitive and C2 rollouts of {student}; run "
                                  f"`ladder probe --student {student} --source {source} --primitive` first")
        return result

    async def write_primitive_compare(self, source: str, student: str, out: str | os.PathLike[str], *,
                                      threshold: int = 1, use_corrections: bool = False) -> PrimitiveVsRoadmap:
        """primitive_vs_roadmap.md/.json in ``out`` (compare_primitive); returns the comparison."""
        result = await self.compare_primitive(source, student, threshold=threshold, use_corrections=use_corrections)
        write_primitive_vs_roadmap(result, out, source, student)
        return result

    async def runs(self) -> list[RunRecord]:
        """The store's runs with their status (running, done, interrupted), tokens and cost."""
        return await self.store.runs()

