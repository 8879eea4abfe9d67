"""`ladder audit`: the paper's audits of a run (oracleladder/audit), one command each."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from ..audit import human as hum, judge as jdg, lengths as lg, retest as rt, roadmap
from ..domains.math import MathDomain
from ..experiment import Choice, Endpoint, Experiment, release as rel
from ..experiment.configs import JudgeConfig, ReviewConfig
from ..experiment.results import JudgeAuditResult, ReviewAuditResult
from ..experiment.selection import Picked
from ..report import markdown
from ..schemas.models import Family
from ..schemas.rubric import RubricLabel
from ..schemas.sheets import SheetError, key_path
from ..store import DEFAULT_STORE
from .common import (
    EXIT_INCOMPLETE,
    Calling,
    CorrectionsOpt,
    PidsOpt,
    ResultJsonOpt,
    SourceOpt,
    StoreOpt,
    calling,
    existing,
    fail,
    listed,
    pids_given,
    run_experiment,
    say,
)
from .options import with_config
from .selecting import with_choice

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                  help="The paper's audits of a run: format, roadmap-match, lengths, judge, human, retest, review; and the release's own audit files (release).")

StudentOpt = Annotated[str, typer.Option("--student", help="The student whose rollouts to audit.")]
JsonOpt = ResultJsonOpt


@app.command("format")
@with_choice()
def format_(student: StudentOpt, source: SourceOpt = "release", store: StoreOpt = DEFAULT_STORE,
            as_json: JsonOpt = False, picked: Choice = Choice()) -> None:
    """Format audit (paper Table 24): each rollout as no_boxed, no_boxed_trunc, unparsable,
    parsed_wrong or parsed_correct, per condition; ungraded rollouts and failed jobs apart; the
    student's rollouts at one setting (--max-tokens, --run, ...)."""
    existing(store)
    audit = run_experiment(store, lambda ex: ex.format_audit(student, source=source, choice=picked), reading=True)
    if not audit.table:
        fail(f"{store} holds no rollouts of student '{student}' on roadmap set '{source}'")
    if as_json:
        typer.echo(json.dumps(audit.model_dump()))
        return
    for line in audit.warnings(student):
        say(f"warning: {line}")
    typer.echo("\n".join(markdown.format_audit({student: audit})))


@app.command("roadmap-match")
@with_choice()
def roadmap_match(student: Annotated[list[str], typer.Option("--student", help="A student (repeat for several).")],
                  source: SourceOpt = "release", store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False,
                  against: Annotated[str | None, typer.Option(
                      "--against", help="A second roadmap set of the same problems: Table 37's ratio of the two "
                      "sets' own rates on the same attempts.")] = None,
                  picked: Choice = Choice()) -> None:
    """Milestone answers in the students' own unaided (C1) attempts (paper Tables 35 to 37): own rate,
    cross-problem control, ratio, over all golds and over golds the statement does not contain; the own
    rate by whether the student solves the milestone alone (its Stage 0) and by gold length; each
    student's attempts at one setting (--max-tokens, --run, ...)."""
    existing(store)
    def audit(s: str) -> Callable[[Experiment], Awaitable[roadmap.Containment]]:
        return lambda ex: ex.roadmap_audit(s, source=source, against=against, choice=picked)

    results = {s: run_experiment(store, audit(s), reading=True) for s in student}
    typer.echo(json.dumps({s: r.model_dump() for s, r in results.items()}) if as_json
               else "\n".join(roadmap.markdown(results)))


@app.command("lengths")
@with_choice()
def lengths(student: Annotated[list[str], typer.Option("--student", help="A student (repeat for several).")],
            threshold: Annotated[int, typer.Option("--threshold", min=1, help="tau: a milestone is solved alone with at least tau correct of K.")] = 1,
            bins: Annotated[str, typer.Option("--bins", help="The length bins' cut points in characters, a rising comma list (the paper's: 20,60).")] = "20,60",
            figure: Annotated[Path | None, typer.Option("--figure", help="Also draw the solve rate by length to this PNG.")] = None,
            source: SourceOpt = "release", use_corrections: CorrectionsOpt = False,
            store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False, picked: Choice = Choice()) -> None:
    """Milestone solve rate by gold answer length (the paper's length analysis, Appendix N): per length
    bin, the tested milestones each student solves alone (Stage 0, >= tau of K), families with a milestone
    left out by the leak rule left out whole; each student's results at one setting (--max-tokens, --run, ...)."""
    try:
        cuts = lg.parse_bins(bins)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--bins") from None
    existing(store)

    async def read(ex: Experiment, s: str) -> lg.SolveByLength:
        [group] = await ex.picked(s, source=source, choice=picked)
        families, results, _ = await ex.results(s, source=source, use_corrections=use_corrections, choice=picked)
        return lg.solve_by_length(s, group.describe(), families, results, tau=threshold, cuts=cuts,
                                  use_corrections=use_corrections)

    results = [run_experiment(store, functools.partial(read, s=s), reading=True) for s in student]
    if not any(b.milestones for r in results for b in r.bins):
        fail(f"no Stage 0 result of {', '.join(student)} on '{source}' at this setting: probe with Stage 0 first")
    if figure is not None:
        lg.figure(results).savefig(figure, dpi=110, bbox_inches="tight")
    typer.echo(json.dumps([r.model_dump() for r in results]) if as_json else "\n".join(lg.markdown(results)))


def _ask(calls: Calling, model: str, said: Callable[[A], None], work: Callable[[Experiment, Endpoint], Awaitable[A]],
         incomplete: Callable[[A], bool] = lambda result: False) -> None:
    """An audit that asks a model: ``work`` run with its endpoint, its result printed as JSON or ``said``;
    exit 3 where calls failed for good (what they were about is left undone; a rerun asks them again) or
    the result is ``incomplete``."""
    existing(calls.store)
    endpoint = calls.endpoint(model)
    result = calls.run(endpoint, lambda ex: work(ex, endpoint))
    if calls.as_json:
        typer.echo(json.dumps(result.flat()))
    else:
        said(result)
    if result.failed or incomplete(result):
        raise typer.Exit(EXIT_INCOMPLETE)


A = TypeVar("A", JudgeAuditResult, ReviewAuditResult)


@app.command("judge")
@calling(JsonOpt, run=True)
@with_config
def judge(
    judge_model: Annotated[str | None, typer.Option("--judge", help="provider/model of the LLM judge.")] = None,
    student: Annotated[str | None, typer.Option("--student", help="The student whose graded rollouts to sample.")] = None,
    sheet: Annotated[Path | None, typer.Option("--sheet", help="CSV to write: the grader-blind sheet (its key beside it, SHEET.key.json).")] = None,
    read: Annotated[Path | None, typer.Option("--read", help="A filled-in sheet: print the result table.")] = None,
    *,
    config: JudgeConfig,
    calls: Calling,
) -> None:
    """Judge audit of the grader in both directions (paper Appendix V): a seeded sample of graded
    rollouts, stratified by the verifier's verdict (accepted, or its rejection reason), graded by an
    LLM judge: the paired grades (Table 46) and by answer schema (Table 45), the rule-of-three bound
    where a cell is empty; the rejected cases the judge accepts go to a grader-blind sheet for a
    person to label (correct, malformed_reference, incorrect, undecidable).
    `--read SHEET` turns the filled-in sheet into the result table, projected to the whole run. The
    student's rollouts at one setting (`--run ID` picks it where there are several)."""
    if read is not None:
        try:
            result = jdg.read_sheet(read, key_path(read))
        except SheetError as exc:
            fail(str(exc))
        typer.echo(json.dumps(result) if calls.as_json else "\n".join(jdg.markdown(result)))
        return
    if not (judge_model and student and sheet):
        fail("ladder audit judge needs --judge, --student and --sheet (or --read SHEET)")
    def said(result: JudgeAuditResult) -> None:
        say(f"judged {result.sampled} graded rollouts ({result.usage.requests} requests, "
            f"{result.usage.cache_hits} from the cache): the judge accepts {result.judge_accepts} the verifier "
            f"rejected, written to {sheet} (key: {key_path(sheet)}); {result.unreadable} unreadable "
            f"verdicts, {result.failed} failed calls. Label each case correct, malformed_reference, "
            f"incorrect or undecidable, then run `ladder audit judge --read {sheet}`.")
        typer.echo("\n".join(jdg.paired_markdown(result.paired, judge_model, student)))
    _ask(calls, judge_model, said,
         lambda ex, endpoint: ex.judge_audit(endpoint, student, sheet, config, choice=calls.choice))


@app.command("review")
@calling(JsonOpt, run=True)
@with_config
def review(
    reviewer: Annotated[str, typer.Option("--reviewer", help="provider/model of the LLM reviewer.")],
    student: Annotated[list[str], typer.Option("--student", help="A student whose composition-gap families to "
                                                                 "review (repeat for several).")],
    config: ReviewConfig,
    calls: Calling,
) -> None:
    """Automated rubric review (paper Appendix S.1, Table 42): an LLM reviewer labels each composition-gap
    family of each student with the rubric (Verifier_Artifact, Beyond_Capability, Not_Standalone,
    Decomposition_Incomplete, Genuine_Composition) and the verifier and format error flags, from the
    problem, the roadmap, the student's attempts and the grader's verdicts. A reply that is not the JSON
    asked for is asked again once, then left unreviewed. Prints Table 42: the families flagged as grading
    errors, and the composition gap's share before and after removing them; `ladder report` shows it too.
    Each student's results at one setting (`--run ID` picks it where there are several)."""
    def said(result: ReviewAuditResult) -> None:
        say(f"reviewed {result.families} composition-gap families ({result.usage.requests} requests, "
            f"{result.usage.cache_hits} from the cache): {result.labeled} labeled, {result.unreviewed} unreviewed "
            f"(no readable reply after a re-ask), {result.failed} failed calls.")
        typer.echo("\n".join([f"## Automated rubric review (Table 42), reviewer {reviewer}", "",
                               *markdown.review_table(result.table)]))
        if _nothing_reviewed(result):
            say(f"no family was reviewed: {reviewer} gave no readable reply (the JSON of the rubric) for any")
    _ask(calls, reviewer, said, lambda ex, endpoint: ex.review_audit(endpoint, student, config, choice=calls.choice),
         incomplete=_nothing_reviewed)


def _nothing_reviewed(result: ReviewAuditResult) -> bool:
    """Every family left unreviewed: a reviewer that never answers in the rubric's JSON, a result
    without a label (exit 3, as `prim score` with its scores missing)."""
    return result.families > 0 and result.unreviewed == result.families


async def _student_results(ex: Experiment, student: str, source: str,
                           picked: Choice) -> tuple[list[Family], Picked, dict]:
    """A math roadmap set's families, the student's results on it at one setting, and what a sheet's key
    says of them."""
    families = await ex.roadmap_set(source)
    [group] = await ex.picked(student, source=source, choice=picked)
    if group.imported:
        fail(f"the results of student '{student}' on '{source}' at this setting are an imported panel: the audit "
             "reads attempts; pick a probed run (--run)")
    return families, group, {"student": student, "source": source, "settings": group.describe(),
                             "runs": group.run_ids}


async def _human_sheets(ex: Experiment, student: str, source: str, picked: Choice, folder: Path, sample: int | None,
                        seed: int, raters: list[str], validation: int, show_grader: bool) -> dict:
    families, group, meta = await _student_results(ex, student, source, picked)
    results = ex.domain("math").collect_results(families, group.rollouts,
                                                use_corrections=bool(group.settings.use_corrections))
    pids = sorted(hum.unrecovered(results))
    if not pids:
        fail(f"student '{student}' has no unrecovered family on '{source}' at {group.describe()}")
    chosen = set(pids if sample is None or sample >= len(pids) else random.Random(seed).sample(pids, sample))
    return hum.write_sheets(folder, [f for f in families if f.pid in chosen],
                            [r for r in group.rollouts if r.pid in chosen], raters=raters, validation=validation,
                            seed=seed, show_grader=show_grader, meta={**meta, "unrecovered": len(pids)})


@app.command("human")
@with_choice()
def human(
    student: Annotated[str | None, typer.Option("--student", help="The student whose unrecovered families to audit.")] = None,
    sheets: Annotated[Path | None, typer.Option("--sheets", help="Folder to write: a grader-blind sheet per rater (rater-NAME.csv), the validation sheet and the key (audit.key.json).")] = None,
    read: Annotated[Path | None, typer.Option("--read", help="A folder of filled-in sheets: print agreement, kappa and Tables 39 and 40.")] = None,
    sample: Annotated[int | None, typer.Option("--sample", min=1, help="Audit a seeded sample of N unrecovered families (default: all).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the sample and of each rater's order.")] = 0,
    raters: Annotated[list[str] | None, typer.Option("--raters", help="The two raters' names (comma list or repeat; default a,b).")] = None,
    validation: Annotated[int, typer.Option("--validation", min=0, help="Also write a validation sheet of a second, seeded sample of N of the families.")] = 0,
    show_grader: Annotated[bool, typer.Option("--show-grader", help="Show the student's name and the verifier's verdicts in the sheets (they are blind by default).")] = False,
    priority: Annotated[str | None, typer.Option("--priority", help="The order that resolves a disagreement, all five categories as a comma list (default the paper's: Verifier_Artifact, Beyond_Capability, Not_Standalone, Decomposition_Incomplete, Genuine_Composition).")] = None,
    repairs: Annotated[Path | None, typer.Option("--repairs", help="A CSV of each repaired family's outcome (columns family, outcome: unlocked, unrecovered or not_applicable): Table 40 and the bounds.")] = None,
    figure: Annotated[Path | None, typer.Option("--figure", help="With --repairs: write Figure 9 (the triage) to this PNG.")] = None,
    review: Annotated[bool, typer.Option("--review", help="With --read: the automated review's agreement with the resolved labels (raw and Cohen's kappa of the verifier-or-format verdict), from the student's stored `ladder audit review` labels.")] = False,
    source: SourceOpt = "release",
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
    picked: Choice = Choice(),
) -> None:
    """Human audit of unrecovered families (paper Appendix S): grader-blind sheets for two raters (each
    in its own order) and an optional validation sheet; `--read FOLDER` checks the filled-in sheets and
    gives the raw agreement and Cohen's kappa, the labels resolved by the priority rule (Table 39), the
    validation pass, and with `--repairs` the post-repair triage, its bounds (Table 40) and Figure 9;
    with `--review`, the automated review's agreement with the resolved labels (Appendix S.1: 69%, kappa 0.14).
    The student's results at one setting (--max-tokens, --run, ...)."""
    if read is not None:
        try:
            order = hum.CATEGORIES if priority is None else hum.parse_priority(priority)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--priority") from None
        if figure is not None and repairs is None:
            fail("--figure draws Table 40's triage: give --repairs too")
        try:
            result = hum.read_audit(read, priority=order, repairs=repairs)
        except SheetError as exc:
            fail(str(exc))
        if review:
            if not (result["student"] and result["source"]):
                fail(f"{read / hum.KEY} names no student and roadmap set: --review reads that student's review")
            existing(store)
            labels = run_experiment(store, lambda ex: _review_labels(ex, result["student"], result["source"]),
                                    reading=True)
            result["review"] = hum.review_agreement({p: la["resolved"] for p, la in result["labels"].items()}, labels)
        if figure is not None:
            hum.write_figure(result["triage"], figure)
        typer.echo(json.dumps(result) if as_json else "\n".join(hum.markdown(result)))
        return
    if not (student and sheets):
        fail("ladder audit human needs --student and --sheets (or --read FOLDER)")
    names = listed(raters) or ["a", "b"]
    if len(set(names)) != 2 or "validation" in names:
        fail(f"--raters names two raters (not 'validation'); got {', '.join(names)}")
    existing(store)
    try:
        key = run_experiment(store, lambda ex: _human_sheets(ex, student, source, picked, sheets, sample, seed, names,
                                                              validation, show_grader), reading=True)
    except FileExistsError as exc:  # the sheets may hold a person's labels
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps(key))
        return
    checked = f", a validation sheet of {len(key['validation']['families'])}" if key["validation"] else ""
    say(f"{len(key['families'])} of the {key['unrecovered']} unrecovered families of {student} written to "
        f"{sheets}: a sheet per rater ({', '.join(key['raters'].values())}){checked}. Each rater writes one of "
        f"{', '.join(hum.CATEGORIES)} in the category column, then run `ladder audit human --read {sheets}`.")


async def _review_labels(ex: Experiment, student: str, source: str) -> dict[str, RubricLabel | None]:
    """The student's stored review labels by family (`ladder audit review`; None: unreviewed)."""
    return {r.pid: r.label for r in await ex.store.reviews(student, source)}


async def _retest_sheet(ex: Experiment, student: str, source: str, picked: Choice, pids: Sequence[str], sheet: Path,
                        seed: int) -> int:
    families, group, meta = await _student_results(ex, student, source, picked)
    by_pid = {f.pid: f for f in families}
    unknown = [p for p in pids if p not in by_pid]
    if unknown:
        fail(f"roadmap set '{source}' holds no family {', '.join(unknown)}")
    rollouts = [r for r in group.rollouts if r.pid in set(pids)]
    if not rollouts:
        fail(f"student '{student}' has no attempt on those families at {group.describe()}")
    return rt.write_sheet(sheet, MathDomain(), by_pid, rollouts, seed=seed, meta=meta)


@app.command("retest")
@with_choice()
def retest(
    student: Annotated[str | None, typer.Option("--student", help="The student whose attempts to grade by hand.")] = None,
    pids: PidsOpt = None,
    sheet: Annotated[Path | None, typer.Option("--sheet", help="CSV to write: every attempt of the families, to grade by hand (its key beside it, SHEET.key.json).")] = None,
    read: Annotated[list[Path] | None, typer.Option("--read", help="A graded sheet: store its verdicts apart (SHEET.verdicts.jsonl) and print them beside the verifier's (repeat for several students' sheets).")] = None,
    figure: Annotated[Path | None, typer.Option("--figure", help="With --read: draw the attempts correct by hand per family, one bar per sheet, to this PNG (the explainer's Figure 8).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the sheet's order.")] = 0,
    source: SourceOpt = "release",
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
    picked: Choice = Choice(),
) -> None:
    """The raw-output retest graded by hand (paper Table 43): every attempt of the chosen families at one
    setting (e.g. the run of `ladder probe --pids ... --no-system-prompt --temperature 0.7`; --run picks
    it) on a sheet, without the verifier's verdicts; `--read SHEET` keeps the person's verdicts apart and
    shows them beside the verifier's, per family and condition; `--figure PNG` draws them, one bar per
    sheet (the explainer's Figure 8: two students' sheets of the same families side by side)."""
    if read:
        try:
            results = [rt.read_sheet(sheet) for sheet in read]
        except SheetError as exc:
            fail(str(exc))
        if figure is not None:
            rt.figure(results).savefig(figure, dpi=110, bbox_inches="tight")
        shown = results[0] if len(results) == 1 else results  # one sheet: its result, as before several were read
        typer.echo(json.dumps(shown) if as_json else "\n".join(line for r in results for line in rt.markdown(r)))
        return
    if figure is not None:
        fail("--figure draws graded sheets: give --read SHEET")
    chosen = pids_given(pids)
    if not (student and chosen and sheet):
        fail("ladder audit retest needs --student, --pids and --sheet (or --read SHEET)")
    existing(store)
    try:
        n = run_experiment(store, lambda ex: _retest_sheet(ex, student, source, picked, chosen, sheet, seed),
                           reading=True)
    except FileExistsError as exc:  # the sheet may hold a person's verdicts
        fail(str(exc))
    if as_json:
        typer.echo(json.dumps({"attempts": n, "sheet": str(sheet), "key": str(key_path(sheet))}))
    else:
        say(f"{n} attempts written to {sheet} (key: {key_path(sheet)}); write yes or no in the correct column, "
            f"then run `ladder audit retest --read {sheet}`.")


@app.command("release")
def release(
    folder: Annotated[Path, typer.Argument(help="The release's data/ folder (audit_*.jsonl, human_validation.jsonl, the repairs' oracle files, math_hard100_panel*.jsonl, oracle_panel_16k/).")],
    student: Annotated[str, typer.Option("--student", help="The audited model, as the panel names it: its panel gives Table 41's original triage.")] = "mile_2k_step_180",
    as_json: JsonOpt = False,
) -> None:
    """The paper's Tables 17 and 39-41 rebuilt from the release's own files: the MATH hard-100 score
    beside each model's fingerprint; the two raters' agreement, the consensus labels and the validation
    pass; the post-repair triage and its bounds; the fingerprint of the fresh oracle pass after repair per
    rater category beside the original triage. A record that does not fit its file's model is one line
    naming the file and line (exit 2)."""
    result = rel.read_release(folder, student)
    typer.echo(json.dumps(result) if as_json else "\n".join(rel.markdown(result)))
