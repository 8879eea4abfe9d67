"""`ladder prim`: PRIM's four-dimension diagnosis beside the ladder (docs/prim.md) — import gold
primitives, compile a teacher's primitives and plans, probe the four dimensions, score a student's
primitives with a judge, report."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from ..experiment import Choice, Endpoint, Experiment, PrimAnswersResult, PrimScoreResult, ProbeEstimate
from ..experiment.configs import PrimAuditConfig, PrimConfig, PrimReportConfig
from ..prim import audit as prim_audit
from ..prim.analysis import PrimReport
from ..prim.scoring import TAU
from ..report.palette import n_families
from ..schemas.sheets import SheetError, key_path
from ..store import DEFAULT_STORE
from .common import (
    EXIT_INCOMPLETE,
    Calling,
    MaxTokensOpt,
    Options,
    PrimRoutesOpt,
    PrimSampleOpt,
    PrimSeedOpt,
    PrimThresholdOpt,
    ProbedOpt,
    RunPick,
    SourceOpt,
    StoreOpt,
    SummaryJsonOpt,
    TauOpt,
    calling,
    calling_options,
    console,
    existing,
    fail,
    listed,
    probing,
    run_experiment,
    say,
    with_group,
)
from .display import bar, cost_said, print_failed_jobs, probe_estimate_said, say_budget
from .options import with_config
from .selecting import with_choice

app = typer.Typer(no_args_is_help=True, help="PRIM's diagnosis: Discovery, Generation, Digestion, Execution.")


@app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="JSONL: pid, essential_property, solution_principle, core_concept, primary_type, secondary_types, family (routed from the primary type when absent), solution.")],
    field: Annotated[list[str] | None, typer.Option("--field", help="NAME=COLUMN: read our field NAME from the file's COLUMN (repeat the option).")] = None,
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Import gold primitives and reference solutions; a bad line imports nothing."""
    result = run_experiment(store, lambda ex: ex.import_primitives(file, fields=tuple(field or ())))
    for pid, why in result.leaking.items():
        say(f"gold primitive of {pid} left out [primitive_leak]: {why}")
    if result.unchecked:
        say(f"{len(result.unchecked)} gold primitive(s) imported unchecked for leaks: the store holds no family of "
            f"{', '.join(result.unchecked)} (`ladder import` the families first)")
    console.print(f"imported {result.imported} gold primitives from {file} into {store}")


@calling(priced=True)
def compile(  # noqa: A001 - the command's name
    teacher: Annotated[str, typer.Option("--teacher", help="The teacher's provider/model.")],
    kind: Annotated[str, typer.Option("--kind", help="teacher-problem-only: the teacher's primitive from the problem alone (PRIM Fig. 10); plan: its plan of 3-6 steps (Fig. 11); teacher: its primitive from the answer and the reference solution, classified in the taxonomy (Fig. 7).")] = "teacher-problem-only",
    source: SourceOpt = "release",
    max_attempts: Annotated[int, typer.Option("--max-attempts", min=1, help="Teacher attempts per family (a failed check is re-asked with its errors).")] = 3,
    max_tokens: MaxTokensOpt = 4096,
    *,
    calls: Calling,
) -> None:
    """The teacher's guidance for Execution: a primitive from the problem alone, or a plan; checked, re-asked, every attempt stored."""
    endpoint = calls.endpoint(teacher)
    result = calls.run(endpoint, lambda ex: ex.prim_compile(endpoint, kind=kind, source=source,
                                                            max_attempts=max_attempts, max_tokens=max_tokens,
                                                            progress=bar))
    calls.said(result, f"run {result.run_id}: {result.compiled} of {n_families(result.families - result.had)} given "
                       f"a {kind} ({result.had} had one); {len(result.failed_why)} failed their checks, "
                       f"{result.infrastructure_failures} infrastructure failures",
               *(f"  {pid}: {why}" for pid, why in result.failed_why.items()))
    say_budget(result.budget_stop)
    if result.infrastructure_failures or result.budget_stop:
        raise typer.Exit(EXIT_INCOMPLETE)


app.command()(compile)


@probing
@with_config
def probe(
    student: ProbedOpt,
    config: PrimConfig,
    calls: Calling,
) -> None:
    """Probe PRIM's four dimensions of a student: Discovery, Generation (C1), Digestion, Execution. Cached and resumable."""
    endpoint = calls.endpoint(student)
    result = calls.run(endpoint, lambda ex: ex.prim_probe(endpoint, config, progress=bar))
    if isinstance(result, ProbeEstimate):
        calls.said(result, probe_estimate_said(result))
        return
    usage = result.usage
    calls.said(result, f"run {result.run_id}: {n_families(result.families)}, {result.rollouts} rollouts, "
                       f"{usage.requests} requests, {usage.cache_hits} cache hits; {cost_said(usage)}",
               *(f"{target}: {n} jobs skipped (no reference solution or no such primitive)"
                 for target, n in result.skipped.items()))
    say_budget(result.budget_stop)
    print_failed_jobs(result.failed_jobs, result.ungraded, student, config.source)
    if result.failed_jobs or result.ungraded or result.budget_stop:
        raise typer.Exit(EXIT_INCOMPLETE)


app.command()(probe)


@dataclass(frozen=True)
class Judging:
    """What the judge commands (score, answers, benchmark-answers) share besides their own options
    (`with_judging`): the judge's token budget, and its endpoint, the store, --json and --run."""

    max_tokens: int
    calls: Calling

    @property
    def choice(self) -> Choice:
        return self.calls.choice

    def ask(self, judge: str, work: Callable[[Experiment, Endpoint], Awaitable[J]], summary: Callable[[J], str]) -> None:
        """``work`` run with the judge's endpoint, its result said (or its JSON); exit 3 where a reply was
        not the JSON asked for."""
        endpoint = self.calls.endpoint(judge)
        result = self.calls.run(endpoint, lambda ex: work(ex, endpoint))
        self.calls.said(result, summary(result))
        say_budget(result.budget_stop)
        if result.missing:
            raise typer.Exit(EXIT_INCOMPLETE)


J = TypeVar("J", PrimScoreResult, PrimAnswersResult)
JUDGING: Options = {"max_tokens": (MaxTokensOpt, 2048),  # a judge's reply: a score or a verdict and a line
                    **calling_options(SummaryJsonOpt, priced=True, run=True)}


def with_judging(command: Callable[..., None]) -> Callable[..., None]:
    """Gives a judge command the `JUDGING` options in place of its ``judging`` parameter (a `Judging`)."""
    return with_group(command, "judging", JUDGING, lambda given: Judging(given["max_tokens"], Calling.of(given)))


# the judge of `answers` and `benchmark-answers`
AnswerJudgeOpt = Annotated[str, typer.Option("--judge", help="The answer judge's provider/model; the endpoint options are the judge's.")]


@with_judging
def score(
    judge: Annotated[str, typer.Option("--judge", help="The judge's provider/model; the endpoint options are the judge's.")],
    student: Annotated[str, typer.Option("--student", help="The student whose Discovery and Digestion primitives to score.")],
    tau: TauOpt = TAU,
    source: SourceOpt = "release",
    *,
    judging: Judging,
) -> None:
    """Score a student's primitives against the gold ones with a judge (validity, gate, mechanism), those made at one setting (`--run ID` picks it where there are several). Cached."""
    judging.ask(judge, lambda ex, endpoint: ex.prim_score(endpoint, student, source=source, tau=tau,
                                                          max_tokens=judging.max_tokens, choice=judging.choice),
                lambda result: f"run {result.run_id}: {result.scored} primitives scored ({result.unreadable} "
                               f"unreadable, scored 0), {result.missing} missing (no readable judge reply), "
                               f"{result.without_gold} without a gold primitive; correct at tau {result.tau}: "
                               + (", ".join(f"{t} {n}" for t, n in result.correct.items()) or "none"))


app.command()(score)


@with_judging
def answers(
    judge: AnswerJudgeOpt,
    student: Annotated[str, typer.Option("--student", help="The student whose rejected Generation and Execution answers to judge.")],
    source: SourceOpt = "release",
    *,
    judging: Judging,
) -> None:
    """An LLM answer judge on the Generation and Execution answers the grader rejected (free-form answers no symbolic grader decides), those made at one setting (`--run ID` picks it where there are several); its verdicts kept apart."""
    judging.ask(judge, lambda ex, endpoint: ex.prim_answers(endpoint, student, source=source,
                                                            max_tokens=judging.max_tokens, choice=judging.choice),
                lambda result: f"run {result.run_id}: {result.judged} rejected answers judged, {result.correct} "
                               f"read correct, {result.missing} missing (no readable judge reply); `ladder prim "
                               f"report --answer-judge {judge}` counts them")


app.command()(answers)


@app.command("benchmark-answers")
@with_judging
def benchmark_answers(
    judge: AnswerJudgeOpt,
    student: Annotated[str, typer.Option("--student", help="The student of the plain benchmark probe (`ladder benchmark`).")],
    name: Annotated[str, typer.Option("--name", help="The benchmark's name (`ladder benchmark --name`).")],
    *,
    judging: Judging,
) -> None:
    """PRIM's benchmark side: the answer judge of `ladder prim answers` on a plain benchmark's answers the grader rejected (free-form answers, HLE-Math style); `ladder prim benchmarks --answer-judge` counts its verdicts."""
    judging.ask(judge, lambda ex, endpoint: ex.benchmark_answers(endpoint, student, name, max_tokens=judging.max_tokens,
                                                                 choice=judging.choice),
                lambda result: f"run {result.run_id}: {result.judged} rejected answers of benchmark '{name}' "
                               f"judged, {result.correct} read correct, {result.missing} missing (no readable judge "
                               f"reply); `ladder prim benchmarks --answer-judge {judge}` counts them")


@app.command("benchmarks")
def benchmarks(
    student: Annotated[str, typer.Option("--student", help="The student of the plain benchmark probes.")],
    name: Annotated[list[str], typer.Option("--name", help="A benchmark (`ladder benchmark --name`; a comma list, or repeat the option).")],
    answer_judge: Annotated[str | None, typer.Option("--answer-judge", help="Also count an answer right where this answer judge (`ladder prim benchmark-answers`) reads it correct.")] = None,
    pass_at: Annotated[list[str] | None, typer.Option("--pass-at", metavar="NAME=K", help="Score benchmark NAME at pass@K (default pass@1; PRIM: HMMT25=4, Omni-MATH=4); repeat.")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON.")] = False,
    run: RunPick = None,
) -> None:
    """PRIM's Table 4: the student's plain benchmarks side by side, each at its pass@k, and their average."""
    at: dict[str, int] = {}
    for spec in listed(pass_at) or []:
        bench, _, k = spec.partition("=")
        if not k.isdigit() or int(k) < 1:
            fail(f"--pass-at {spec}: give NAME=K, K a whole number from 1")
        at[bench] = int(k)
    existing(store)
    result = run_experiment(store, lambda ex: ex.benchmark_table(student, listed(name), answer_judge=answer_judge,
                                                                 at=at, choice=Choice(run=run)), reading=True)
    typer.echo(json.dumps(result.flat()) if as_json else "\n".join(result.markdown()))


@with_choice(by_run=True)
@with_config
def report(
    student: Annotated[str, typer.Option("--student", help="The student probed with `ladder prim probe`.")],
    judge: Annotated[str, typer.Option("--judge", help="Whose scores of the student's primitives to read (`ladder prim score`).")],
    out: Annotated[Path, typer.Option("--out", help="Folder for report.json, report.md and the figures.")],
    *,
    config: PrimReportConfig,
    html: Annotated[bool, typer.Option("--html", help="Also write the HTML report (OUT/html/index.html): the tables and figures, and a page per problem with its primitives and what the student wrote, with the judge's verdicts and evidence.")] = False,
    store: StoreOpt = DEFAULT_STORE,
    picked: Choice = Choice(),
) -> None:
    """PRIM's tables (1, 2/8, 7, 9, 10, Figure 2's counts; 3/11 with --after) and the side-by-side with the ladder, as report.json and report.md, and its figures (2, 3, 4, 12) as PNG; the student's results at one setting (--max-tokens, --run, ...; --by-run: a report per setting, in OUT/SETTING/)."""
    existing(store)

    async def write(ex: Experiment) -> list[tuple[Path, PrimReport]]:
        groups = await ex.prim_groups(student, source=config.source, choice=picked) if picked.by_run else []
        # side by side: each setting's report in a folder of its own, named as its column would be
        folders = {out / g.label.split("@", 1)[1]: replace(picked, by_run=False, run=g.run_ids[0])
                   for g in groups if len(groups) > 1} or {out: replace(picked, by_run=False)}
        return [(folder, await ex.prim_report(student, judge, config, out=folder, html=html, choice=choice))
                for folder, choice in folders.items()]

    for folder, r in run_experiment(store, write, reading=True):
        say(f"wrote {folder / 'report.json'}, {folder / 'report.md'} and the figures"
            + (f" and {folder / 'html' / 'index.html'}" if html else "")
            + f": {r.problems} problems, {r.missing_scores} missing scores"
            + ("" if r.settings is None else f", at {r.settings}"))
        for line in r.warnings:
            say(f"warning: {line}")


app.command()(report)


def across(
    student: Annotated[list[str], typer.Option("--student", help="A student probed with `ladder prim probe` (repeat the option).")],
    judge: Annotated[str, typer.Option("--judge", help="Whose scores of the students' primitives to read.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for across.json, across.md and the figures.")],
    tau: TauOpt = TAU,
    threshold: PrimThresholdOpt = 1,
    source: SourceOpt = "release",
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """PRIM across students (Figures 2 and 3): each one's Discovery against its Generation, and its D±G± counts, with both figures as PNG."""
    existing(store)
    run_experiment(store, lambda ex: ex.prim_across(student, judge, source=source, tau=tau, threshold=threshold,
                                                    out=out), reading=True)
    say(f"wrote {out / 'across.json'} and {out / 'across.md'}: {len(student)} students")


app.command()(across)


def audit(
    judge: Annotated[str | None, typer.Option("--judge", help="Whose scores to audit.")] = None,
    student: Annotated[str | None, typer.Option("--student", help="Whose primitives they scored.")] = None,
    sheet: Annotated[Path | None, typer.Option("--sheet", help="CSV to write: the judge-blind sheet (its key beside it, SHEET.key.json).")] = None,
    read: Annotated[Path | None, typer.Option("--read", help="A filled-in sheet: print the agreement and Cohen's kappa.")] = None,
    n: PrimSampleOpt = 40,
    routes: PrimRoutesOpt = False,
    seed: PrimSeedOpt = 0,
    tau: TauOpt = TAU,
    source: SourceOpt = "release",
    store: StoreOpt = DEFAULT_STORE,
    run: RunPick = None,
) -> None:
    """The judge's audit: a judge-blind sheet of a sample of its scores for a person to label correct or
    incorrect (`--routes`: of its incorrect ones, for a valid alternative route), of the primitives made at
    one setting (`--run ID` picks it where there are several); `--read SHEET` gives the agreement and
    Cohen's kappa (and with --routes, the alternatives' share)."""
    if read is not None:
        try:
            result = prim_audit.read_sheet(read)
        except SheetError as exc:
            fail(str(exc))
        typer.echo(json.dumps(result))
        return
    if not (judge and student and sheet):
        fail("ladder prim audit needs --judge, --student and --sheet (or --read SHEET)")
    existing(store)
    sample = PrimAuditConfig(source=source, n=n, routes=routes, seed=seed, tau=tau)
    cases = run_experiment(store, lambda ex: ex.prim_audit(judge, student, sheet, sample, choice=Choice(run=run)),
                           reading=True)
    labels = " or ".join(prim_audit.LABELS["routes" if routes else "judge"])
    say(f"wrote {cases} cases to {sheet} (key: {key_path(sheet)}); label each {labels}, "
        f"then run `ladder prim audit --read {sheet}`")


app.command()(audit)
