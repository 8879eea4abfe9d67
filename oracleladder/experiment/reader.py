"""The read side of an experiment: what reads the store and computes, with no client and no call.

Results of a student on a roadmap set, the report, the comparisons, the construction funnel and the
re-anchoring counts; the families of a set and their export. `Experiment` is a Reader that also
runs the stages that write (`stages.py` and the stage modules)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_module
from ..audit import format as fmt, roadmap
from ..construction import reanchor as _reanchor
from ..construction.funnel import Funnel, after_raw_screen, fate, final_set, funnel as build_funnel
from ..construction.screen import RAW
from ..domains import get_domain
from ..ladder import Domain, Settings
from ..ladder.outcomes import FamilyResults, Outcome, parent_outcome, results_from_rollouts
from ..report.primitive import PrimitiveVsRoadmap, primitive_table, write_primitive_vs_roadmap
from ..report.spent import Spent
from ..report.tables import cut_off_warnings, truncation
from ..schemas import Family, Rollout, one_roadmap_set, parse_roadmap_set, teacher_prompts, to_released
from ..schemas.conditions import C1
from ..schemas.jsonl import InputError, did_you_mean, write_jsonl
from ..store import CompileAttempt, RunRecord, ScreenVerdict, Store
from ..validators import family_leak_level
from ..validators.atomicity import atomicity_problem
from ..verify import GRADER_VERSIONS
from . import panels as _panels
from .benchmark_scores import BENCHMARK, benchmark_scores
from .configs import CompareInput, ReportConfig, configured
from .errors import Arg, ExperimentError
from .files import CheckResult, check_families
from .report import Report
from .selection import Choice, Picked, groups, matches, pick

_SET = Arg("set_name", flag="--set")  # the screened set a command reads

if TYPE_CHECKING:
    from ..report import compare as _compare, report as _report
    from ..report.tables import FormatAudit
    from ..viewer import site as _site
else:  # loaded when a command first needs them (the comparison's models, matplotlib, markdown-it)
    _compare = lazy_module("oracleladder.report.compare")
    _report = lazy_module("oracleladder.report.report")
    _site = lazy_module("oracleladder.viewer.site")


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

    async def kept_across(self, sets: Sequence[str]) -> _reanchor.KeptAcross:
        """Table 29: the families each screened set keeps, and how many of every other set's."""
        return _reanchor.kept_across({s: await self.set_verdicts(s) for s in sets})

    async def families(self, *, teacher: str | None = None, set_name: str | None = None) -> list[Family]:
        """The store's families (of one source/teacher: TEACHER, or TEACHER@coarse|fine where it has several
        granularities), or the final set of `screen(set_name=...)`."""
        if set_name is None:
            if teacher is None:
                return await self.store.families()
            try:
                source, granularity = parse_roadmap_set(teacher)
                found = await self.store.families(source=source, granularity=granularity)
                one_roadmap_set(teacher, found)
            except ValueError as exc:
                raise ExperimentError(str(exc)) from None
            return found
        if teacher is not None:
            raise ExperimentError(_SET, " and ", Arg("teacher"), " exclude each other (a set has its own source)")
        verdicts = await self.set_verdicts(set_name)
        if verdicts[0].source.startswith(RAW):
            raise ExperimentError(f"set '{set_name}' is a raw pool's screen, before any compile: its families are "
                                  "the roadmap set compiled from its survivors (give --teacher TEACHER)")
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
        the compile steps of a teacher's roadmap set before any screen. A raw pool's screen (`screen_pool`)
        comes before compile: ``source`` then names the roadmap set compiled from its survivors (none: the
        survivors are not compiled yet)."""
        store = self.store
        if set_name is None and source is None:  # the store's only set
            sets = await store.screen_sets()
            if len(sets) != 1:
                raise ExperimentError(f"{store.path} holds {len(sets)} screened sets ({', '.join(sets) or 'none'});"
                                      " name one with --set, or give --source for the compile steps alone")
            set_name = sets[0]
        verdicts = {v.pid: v for v in await self.set_verdicts(set_name)} if set_name is not None else {}
        screened = next(iter(verdicts.values())).source if verdicts else None
        if screened is not None and screened.startswith(RAW):
            return await self._raw_funnel(set_name or "", list(verdicts.values()), source)
        if screened is not None and source is not None:
            raise ExperimentError(_SET, " and ", Arg("source"), " exclude each other (a set has its own source), "
                                  "except for the set of a raw pool's screen (", Arg("source"),
                                  ": the teacher that compiled its survivors)")
        name = screened or source or ""  # before any screen: the compile steps, compiled families "not screened"
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

    async def _raw_funnel(self, set_name: str, verdicts: Sequence[ScreenVerdict], roadmaps: str | None) -> Funnel:
        """The funnel of a raw pool's screen: every screened problem's fate, through the compile of
        ``roadmaps`` (a teacher's roadmap set) when given."""
        if roadmaps is None:
            return build_funnel(set_name, verdicts[0].source, [after_raw_screen(v, None, None) for v in verdicts],
                                raw=True)
        try:
            teacher, granularity = parse_roadmap_set(roadmaps)
        except ValueError as exc:
            raise ExperimentError(str(exc)) from None
        families = {f.pid: f for f in await self.store.families(source=teacher, granularity=granularity)}
        fates = [after_raw_screen(v, await self.store.compile_attempts(v.pid, teacher, granularity=granularity),
                                  families.get(v.pid)) for v in verdicts]
        return build_funnel(set_name, roadmaps, fates, raw=True)

    async def gap_counts(self, anchors: Sequence[str], models: Sequence[str], *, source: str = "release",
                         k: int = 8, max_tokens: int = 4096, temperature: float | None = None,
                         stage0_max_tokens: int | None = None,
                         ) -> tuple[dict[str, int], dict[str, dict[str, int]], list[str]]:
        """Each model's results on a set from its stored rollouts at max_tokens (and temperature), their
        first K samples (refused, as a report is, where more than one setting is left), then the per-anchor
        subsets and composition-gap counts (reanchor.gap_counts). ``stage0_max_tokens``: Stage 0 read from
        the rollouts at that budget instead, C1-C3 still at max_tokens (Tables 5 and 6: the milestone test
        at the 4K screening budget, the parent probes at 16K)."""
        families, ladder = await self.roadmap_set(source), self.domain("math")

        def at(groups: list[Picked], model: str, budget: int) -> list[FamilyResults]:
            choice = Choice(max_tokens=budget, temperature=temperature, k=k)
            found = [g for g in groups if matches(g, choice)]
            return self._collected(ladder, families, pick(model, source, found, choice)[0], False) if found else []

        results = {}
        for model in models:  # a model with no results at these settings has none (the table says incomplete)
            groups = await self.result_groups(model, families[0].provenance.roadmap_set)
            results[model] = at(groups, model, max_tokens)
            if stage0_max_tokens not in (None, max_tokens):
                stage0 = {r.pid: r.stage0 for r in at(groups, model, stage0_max_tokens)}
                results[model] = [FamilyResults(r.pid, stage0=stage0.get(r.pid, {}), ladder=r.ladder)
                                  for r in results[model]]
        return _reanchor.gap_counts(results, list(anchors), k)

    async def result_groups(self, student: str, rollout_source: str) -> list[Picked]:
        """A student's results filed under ``rollout_source`` (a domain's `rollout_source` of a set) by the
        settings of their runs (`selection.groups`); [] for none."""
        store = self.store
        rollouts = await store.rollouts(student=student, source=rollout_source)
        failed = await store.failed_jobs(student=student, source=rollout_source)
        cells = await store.panel_cells(student, source=rollout_source)
        runs = {r.id: r for r in await store.runs()}
        return groups(student, rollouts, failed, cells, runs, await store.reusers(student, rollout_source))

    async def picked(self, student: str, *, source: str = "release", domain: str = "math",
                     choice: Choice = Choice(), by_run_only: bool = False) -> list[Picked]:
        """The groups of a student's results on a set that ``choice`` picks (`selection.pick`: one, or with
        ``choice.by_run`` each); refused naming the groups where they are more than one, and where the
        store holds none. ``by_run_only``: the groups are picked by run alone (a command whose --max-tokens is
        its judge's or reviewer's own)."""
        ladder = self.domain(domain)
        families = await self.domain_families(ladder, source)
        found = await self.result_groups(student, ladder.rollout_source(families[0], source))
        if not found:
            students = await self.store.students()
            raise ExperimentError(f"{self.store.path} holds no rollouts of student '{student}'"
                                  f"{did_you_mean(student, students)} on families from '{source}' (students in "
                                  f"the store: {', '.join(students) or 'none'}); run `ladder probe --student "
                                  f"{student} --source {source}` first")
        return pick(student, source, found, choice, by_run_only=by_run_only)

    @staticmethod
    def _collected(ladder: Domain, families: list, picked: Picked, use_corrections: bool) -> list[FamilyResults]:
        """One group's results: its rollouts' verdicts, or an imported panel's counts (math families)."""
        if picked.imported:
            return results_from_rollouts([(f.pid, [i for i, _ in f.tested(use_corrections)]) for f in families],
                                         ((c.pid, c.target, i, i < c.n_correct) for c in picked.cells
                                          for i in range(c.k)))
        return ladder.collect_results(families, picked.rollouts, use_corrections=use_corrections,
                                      keep_leaking=bool(picked.settings.keep_leaking))

    async def results(self, student: str, *, source: str = "release", use_corrections: bool = False,
                      domain: str = "math", choice: Choice = Choice()) -> tuple[list, list[FamilyResults], dict]:
        """The families of a roadmap set, the student's results on them at one setting (``choice``;
        refused where the store holds several and none is picked), and the verdicts they lack (ungraded
        rollouts, failed jobs: in no result)."""
        ladder = self.domain(domain)
        families = await self.domain_families(ladder, source)
        [p] = await self.picked(student, source=source, domain=domain, choice=replace(choice, by_run=False))
        return families, self._collected(ladder, families, p, use_corrections), _missing(p)

    async def graders(self, student: str, *, source: str = "release", choice: Choice = Choice()) -> str:
        """The grader (with its version) of a student's math rollouts on a roadmap set at one setting:
        "strict (strict-2)"."""
        [p] = await self.picked(student, source=source, choice=replace(choice, by_run=False))
        return _grader(p)

    async def format_audit(self, student: str, *, source: str = "release", choice: Choice = Choice()) -> FormatAudit:
        """The format audit (Table 24) of a student's rollouts on a roadmap set at one setting (an empty
        audit where there are none); the rollouts alone are read, the set's families need not be stored."""
        name, granularity = parse_roadmap_set(source)
        found = await self.result_groups(student, name if granularity in (None, "default") else source)
        if not found:
            return await fmt.format_audit(self.store, [], [])
        [p] = pick(student, source, found, replace(choice, by_run=False))
        return await fmt.format_audit(self.store, p.rollouts, p.failed)

    def check_html(self, domain: str = "math") -> None:
        """Refuses the HTML report for a domain whose answers the verifier does not grade."""
        if not self.domain(domain).verifier:
            raise ExperimentError(f"--html shows math roadmap sets; the {domain} ladder has report.md and report.json")

    async def report(self, students: Sequence[str], config: ReportConfig | None = None, *,
                     choice: Choice = Choice(), **options: Any) -> Report:
        """Outcome and taxonomy tables, controls and CIs of any number of students (Report.summary), each
        at one setting (``choice``; with ``choice.by_run`` one column per setting found); a family whose
        reference answer is unusable is listed, never graded. ``base``: the column the change tables
        (Tables 18, 38) read every other against (default: the first); ``order``, the columns as checkpoints left
        to right in Figure 7 (each column once; default: as picked); ``benchmark``, a plain benchmark probe's
        name (`benchmark`) whose pass@1 at each column's settings is Table 1's last column; ``against``, a second
        roadmap set of the same problems whose golds Table 37 reads in the same unaided attempts. These are
        a `ReportConfig`'s fields, given as ``config`` or as keywords."""
        c = configured(ReportConfig, config, options)
        ladder = self.domain(c.domain)
        families = await self.domain_families(ladder, c.source)
        picked = {p.label: p for name in dict.fromkeys(students)
                  for p in await self.picked(name, source=c.source, domain=c.domain, choice=choice)}
        if c.base is not None and c.base not in picked:
            raise ExperimentError(Arg("base", c.base), f" is not one of the report's columns ({', '.join(picked)})")
        if c.order is not None and sorted(c.order) != sorted(picked):
            raise ExperimentError(Arg("order"), f" must name each of the report's columns once ({', '.join(picked)}), "
                                  f"not {', '.join(c.order)}")
        ungradable = {f.pid: why for f in families if (why := ladder.ungradable(f, c.use_corrections))}
        results = {label: [r for r in self._collected(ladder, families, p, c.use_corrections) if r.pid not in ungradable]
                   for label, p in picked.items()}
        # answers the verifier graded: which grader, the format audit of their final answers, and (their
        # milestones' golds being text) the milestone answers in their unaided attempts
        graded = ladder.verifier
        reviews = {label: {r.pid: r.label for r in await self.store.reviews(p.student, c.source)}
                   for label, p in picked.items()}
        gradable = [f for f in families if f.pid not in ungradable]
        runs = {r.id: r for r in await self.store.runs()}
        other = None if c.against is None else await self.domain_families(ladder, c.against)
        return Report(
            source=c.source, domain=c.domain, tau=c.threshold, families=families, results=results,
            missing={label: _missing(p) for label, p in picked.items()}, ungradable=ungradable,
            graders={label: _grader(p) for label, p in picked.items()} if graded else None,
            formats={label: await fmt.format_audit(self.store, p.rollouts, p.failed)
                     for label, p in picked.items() if not p.imported} if graded else None,
            picked=picked, base=c.base, order=None if c.order is None else list(c.order), benchmark=c.benchmark,
            benchmarks={} if c.benchmark is None else await self._benchmarks(c.benchmark, picked),
            reviews={label: labels for label, labels in reviews.items() if labels},
            leaking=self._leaking(families, results, c.threshold, c.use_corrections) if c.domain == "math" else None,
            containment={label: roadmap.roadmap_match(gradable, p.rollouts, other) for label, p in picked.items()
                         if graded and any(r.target == C1.name for r in p.rollouts)},
            finish=await fmt.finish_reasons(self.store, [r for p in picked.values() for r in p.rollouts]),
            panel_truncation={label: _panels.stored_truncation(runs[i].config for i in p.run_ids if i in runs)
                              for label, p in picked.items() if p.imported})

    @staticmethod
    def _leaking(families: list[Family], results: dict[str, list[FamilyResults]], tau: int,
                 use_corrections: bool) -> dict[str, str]:
        """The leak level of each family some column solves at C3 only (Appendix S's leak residual): asked
        of those alone, for the verifier's equivalence is slow."""
        c3_only = {f.pid for fams in results.values() for f in fams
                   if parent_outcome(f.ladder, tau) is Outcome.ANSWERS_NEEDED}
        return {f.pid: level for f in families
                if f.pid in c3_only and (level := family_leak_level(f, use_corrections)) is not None}

    async def _benchmarks(self, name: str, picked: dict[str, Picked]) -> dict[str, float]:
        """Per column, the pass@1 of its student's plain benchmark probe ``name`` at the column's settings
        (none where there is none)."""
        out = {}
        for label, p in picked.items():
            same = [g for g in await self.result_groups(p.student, BENCHMARK + name)
                    if g.settings.pools_with(p.settings)]
            if same:
                _, pass1, _ = benchmark_scores(same[0].rollouts, same[0].k or 0)
                if pass1 is not None:
                    out[label] = pass1
        return out

    async def write_report(self, counted: Report, out: str | os.PathLike[str], *, html: bool = False) -> dict:
        """report.md, report.json and the plots in ``out`` (with ``html``, the site in out/html too);
        returns what report.json holds."""
        if html:
            self.check_html(counted.domain)
        out = Path(out)
        probes = await self.store.runs("probe")
        spent = {label: Spent.of([r for r in probes if r.id in p.run_ids], await self.store.reused(p.rollouts))
                 for label, p in counted.picked.items()}
        res = _report.write_report(_report.ReportInput(
            students=counted.results, tau=counted.tau, roadmap_set=counted.source, graders=counted.graders or {},
            ungradable=counted.ungradable, missing=counted.missing, formats=counted.formats or {},
            settings=counted.settings, base=counted.base,
            # Tables 7, 8 and 48 read a roadmap's milestones: math families have them
            families=[f for f in counted.families if f.pid not in counted.ungradable]
            if counted.domain == "math" else None,
            budgets=counted.budgets, order=counted.order, benchmark=counted.benchmark,
            benchmarks=counted.benchmarks, reviews=counted.reviews, leaking=counted.leaking,
            containment=counted.containment, spent=spent, panel_truncation=counted.panel_truncation,
            kept_leaking=[label for label, p in counted.picked.items() if p.settings.keep_leaking]), out)
        if html:
            records = await _site.read_records(self.store, {label: (p.rollouts, p.failed)
                                                            for label, p in counted.picked.items()})
            _site.write_site(out / "html", res, (out / "report.md").read_text(), counted.families, counted.results,
                            records, figures_from=out, reviews=counted.reviews,
                            compile_attempts=await self._compile_attempts(counted.families))
        return res

    async def _compile_attempts(self, families: Sequence[Family]) -> dict[str, list[CompileAttempt]]:
        """The teacher's attempts at each family (of its granularity), by pid, for the family pages."""
        out: dict[str, list[CompileAttempt]] = {}
        for source in sorted({f.provenance.source for f in families}):
            for a in await self.store.compile_attempts(None, source):
                out.setdefault(a.pid, []).append(a)
        grains = {f.pid: f.provenance.granularity for f in families}
        return {pid: [a for a in found if a.granularity == grains.get(pid)] for pid, found in out.items()}

    async def _compared(self, given: CompareInput) -> tuple[dict, tuple[list, list], tuple[list, list],
                                                            tuple[Picked, Picked]]:
        a, b, student, use_corrections = given.a, given.b, given.student, given.use_corrections
        ladder, one = self.domain("math"), replace(given.choice, by_run=False)
        sides = []
        for name in (a, b):
            families = await self.roadmap_set(name)
            [p] = await self.picked(student, source=name, choice=one)
            sides.append((families, self._collected(ladder, families, p, use_corrections), p))
        (families_a, results_a, picked_a), (families_b, results_b, picked_b) = sides
        graded_a, graded_b = _grader(picked_a), _grader(picked_b)
        if graded_a != graded_b and not given.allow_mixed_graders:
            raise ExperimentError(f"{a} was graded by {graded_a} and {b} by {graded_b}: a difference between them "
                                  "could be the grader's; regrade one, or pass --allow-mixed-graders")
        k = max((len(rolls) for r in results_a + results_b for rolls in r.ladder.values()), default=0)
        result = _compare.compare(families_a, families_b, results_a, results_b,
                                  is_atomic=lambda gold: atomicity_problem(gold) is None, k=k)
        result["settings"] = {a: picked_a.describe(), b: picked_b.describe()}
        result["teacher_prompts"] = {a: teacher_prompts(families_a), b: teacher_prompts(families_b)}
        runs = {r.id: r for r in await self.store.runs()}
        result["warnings"] = [w for name, p in ((a, picked_a), (b, picked_b)) for w in cut_off_warnings(
            f"{student} on {name}", None if p.imported else await fmt.format_audit(self.store, p.rollouts, p.failed),
            _panels.stored_truncation(runs[i].config for i in p.run_ids if i in runs) if p.imported else None)]
        return result, (families_a, families_b), (results_a, results_b), (picked_a, picked_b)

    async def compare(self, given: CompareInput) -> dict:
        """Two teachers or two granularities on the same problems (paper Appendix P), the student's results
        on each at one setting (`CompareInput`: refused when the two sets were graded by different graders
        unless it allows them). probe.compare's write_compare writes it (write_compare below writes it with
        its HTML)."""
        return (await self._compared(given))[0]

    async def write_compare(self, given: CompareInput, out: str | os.PathLike[str], *, html: bool = False) -> dict:
        """compare.md and compare.json in ``out`` (with ``html``, the comparison's site in out/html
        too); returns the comparison."""
        out = Path(out)
        a, b, student = given.a, given.b, given.student
        result, families, results, picked = await self._compared(given)
        _compare.write_compare(result, out, name_a=a, name_b=b, student=student)
        if html:
            ra, rb = [(await _site.read_records(self.store, {student: (p.rollouts, p.failed)}))[student]
                      for p in picked]
            records = (ra, rb)
            _site.write_compare_site(out / "html", result, (out / "compare.md").read_text(), (a, b), student,
                                     families, results, records)
        return result

    async def compare_primitive(self, source: str, student: str, *, threshold: int = 1,
                                use_corrections: bool = False, choice: Choice = Choice()) -> PrimitiveVsRoadmap:
        """The primitive against the roadmap on one roadmap set: C2-primitive vs C2 for one student at one
        setting (``choice``) (docs/primitive.md); refused when no family has both."""
        _, results, _ = await self.results(student, source=source, use_corrections=use_corrections, choice=choice)
        result = primitive_table(results, threshold)
        if not result.n:
            raise ExperimentError(f"no family of '{source}' has both C2-primitive and C2 rollouts of {student}; run "
                                  f"`ladder probe --student {student} --source {source} --primitive` first")
        return result

    async def write_primitive_compare(self, source: str, student: str, out: str | os.PathLike[str], *,
                                      threshold: int = 1, use_corrections: bool = False,
                                      choice: Choice = Choice()) -> PrimitiveVsRoadmap:
        """primitive_vs_roadmap.md/.json in ``out`` (compare_primitive); returns the comparison."""
        result = await self.compare_primitive(source, student, threshold=threshold, use_corrections=use_corrections,
                                              choice=choice)
        write_primitive_vs_roadmap(result, out, source, student)
        return result

    async def export_panels(self, student: str, out: str | os.PathLike[str], *, source: str = "release",
                            model: str | None = None, use_corrections: bool = False,
                            choice: Choice = Choice()) -> _panels.Written:
        """A student's results on a roadmap set at one setting as the release's panel records
        (`panels.write_panels`: OUT/oracle_panel/ and OUT/stage0_panel/), named ``model`` (default: the
        student), each with its answers cut off and unreadable; returns both files, the number of records and
        the warnings of answers cut off or unreadable."""
        ladder = self.domain()
        families = await self.roadmap_set(source)
        [p] = await self.picked(student, source=source, choice=replace(choice, by_run=False))
        finish = await fmt.finish_reasons(self.store, p.rollouts)
        cells: dict[tuple[str, str], list[Rollout]] = {}
        for r in p.rollouts:
            cells.setdefault((r.pid, r.target), []).append(r)
        return _panels.write_panels(out, model or student, self._collected(ladder, families, p, use_corrections),
                                    {cell: truncation(rs, finish) for cell, rs in cells.items()},
                                    [] if p.settings.max_tokens is None else [p.settings.max_tokens])

    async def runs(self) -> list[RunRecord]:
        """The store's runs with their status (running, done, interrupted), tokens and cost."""
        return await self.store.runs()


def _missing(p: Picked) -> dict:
    """The verdicts a group's results lack: its ungraded rollouts and failed jobs."""
    return _report.missing_counts([r.target for r in p.rollouts if not r.verdict.graded], [j.target for j in p.failed])


def _grader(p: Picked) -> str:
    """A group's grader with its version, "strict (strict-2)"; an imported panel's as its file states it."""
    g = p.settings.grader
    return f"{g} ({GRADER_VERSIONS[g]})" if g in GRADER_VERSIONS else (g or "unknown")
