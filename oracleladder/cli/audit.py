"""`ladder audit`: the paper's audits of a run (oracleladder/audit), one command each."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..audit import judge as jdg
from ..audit import roadmap
from ..experiment import Choice, Endpoint, Experiment
from ..experiment.results import JudgeAuditResult, ReviewAuditResult
from ..experiment.selection import pick
from ..report import markdown
from ..schemas.models import parse_roadmap_set
from ..store import DEFAULT_STORE, Store
from .common import (EXIT_INCOMPLETE, SourceOpt, StoreOpt, existing, fail, make_endpoint, run_experiment, say,
                     with_endpoint_options)
from .selecting import RunPick, with_choice

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                  help="The paper's audits of a run: format, roadmap-match, judge, review.")

StudentOpt = Annotated[str, typer.Option("--student", help="The student whose rollouts to audit.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


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
    for line in markdown.cut_off_warnings({student: audit}):
        say(f"warning: {line}")
    typer.echo("\n".join(markdown.format_audit({student: audit})))


async def _families(store: Store, source: str) -> list:
    try:
        name, granularity = parse_roadmap_set(source)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    families = await store.families(source=name, granularity=granularity)
    if not families:
        fail(f"{store.path} holds no families of roadmap set '{source}'")
    return families


async def _roadmap(ex: Experiment, student: str, source: str, picked: Choice, against: str | None) -> dict:
    families = await _families(ex.store, source)
    found = await ex.result_groups(student, families[0].provenance.roadmap_set)
    rollouts = [r for g in pick(student, source, found, picked) for r in g.rollouts] if found else []
    if not any(r.target == roadmap.C1 for r in rollouts):
        fail(f"{ex.path} holds no C1 attempts of student '{student}' on roadmap set '{source}'; "
             f"run `ladder probe --student {student} --conditions C1` first")
    other = None if against is None else await _families(ex.store, against)
    return roadmap.roadmap_match(families, rollouts, other)


@app.command("roadmap-match")
@with_choice()
def roadmap_match(student: Annotated[list[str], typer.Option("--student", help="A student (repeat for several).")],
                  source: SourceOpt = "release", store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False,
                  against: Annotated[Optional[str], typer.Option(
                      "--against", help="A second roadmap set of the same problems: Table 37's ratio of the two "
                      "sets' own rates on the same attempts.")] = None,
                  picked: Choice = Choice()) -> None:
    """Milestone answers in the students' own unaided (C1) attempts (paper Tables 35 to 37): own rate,
    cross-problem control, ratio, over all golds and over golds the statement does not contain; the own
    rate by whether the student solves the milestone alone (its Stage 0) and by gold length; each
    student's attempts at one setting (--max-tokens, --run, ...)."""
    existing(store)
    results = {s: run_experiment(store, lambda ex: _roadmap(ex, s, source, picked, against), reading=True)
               for s in student}
    typer.echo(json.dumps(results) if as_json else "\n".join(roadmap.markdown(results)))


@app.command("judge")
@with_endpoint_options
def judge(
    judge_model: Annotated[Optional[str], typer.Option("--judge", help="provider/model of the LLM judge.")] = None,
    student: Annotated[Optional[str], typer.Option("--student", help="The student whose rejected rollouts to sample.")] = None,
    n: Annotated[int, typer.Option("--n", min=1, help="Rejected rollouts to sample, stratified by rejection reason.")] = 40,
    seed: Annotated[int, typer.Option(help="Seed of the sample and of the sheet's order.")] = 0,
    sheet: Annotated[Optional[Path], typer.Option("--sheet", help="CSV to write: the grader-blind sheet (its key beside it, SHEET.key.json).")] = None,
    read: Annotated[Optional[Path], typer.Option("--read", help="A filled-in sheet: print the result table.")] = None,
    source: SourceOpt = "release",
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each judge answer.")] = 4096,
    endpoint_options: dict[str, Any] = {},  # noqa: B006 - replaced by the endpoint options (with_endpoint_options)
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
    run: RunPick = None,
) -> None:
    """Judge audit of the grader (paper Appendix V.1): a seeded sample of rejected rollouts,
    stratified by rejection reason, graded by an LLM judge; the cases it accepts go to a
    grader-blind sheet for a person to label (correct, malformed_reference, incorrect, undecidable).
    `--read SHEET` turns the filled-in sheet into the result table, projected to the whole run. The
    student's rollouts at one setting (`--run ID` picks it where there are several)."""
    if read is not None:
        try:
            result = jdg.read_sheet(read, jdg.key_path(read))
        except (OSError, jdg.SheetError) as exc:
            fail(str(exc))
        typer.echo(json.dumps(result) if as_json else "\n".join(jdg.markdown(result)))
        return
    if not (judge_model and student and sheet):
        fail("ladder audit judge needs --judge, --student and --sheet (or --read SHEET)")
    def said(result: JudgeAuditResult) -> None:
        say(f"judged {result.sampled} rejected rollouts ({result.usage.requests} requests, "
            f"{result.usage.cache_hits} from the cache): the judge accepts {result.judge_accepts}, "
            f"written to {sheet} (key: {jdg.key_path(sheet)}); {result.unreadable} unreadable "
            f"verdicts, {result.failed} failed calls. Label each case correct, malformed_reference, "
            f"incorrect or undecidable, then run `ladder audit judge --read {sheet}`.")
    _asked(store, judge_model, endpoint_options, as_json, said,
           lambda ex, endpoint: ex.judge_audit(endpoint, student, sheet, source=source, n=n, seed=seed,
                                               max_tokens=max_tokens, choice=Choice(run=run)))


@app.command("review")
@with_endpoint_options
def review(
    reviewer: Annotated[str, typer.Option("--reviewer", help="provider/model of the LLM reviewer.")],
    student: Annotated[list[str], typer.Option("--student", help="A student whose composition-gap families to "
                                                                 "review (repeat for several).")],
    source: SourceOpt = "release",
    threshold: Annotated[int, typer.Option("--threshold", min=1, help="tau: correct attempts of K that count as solved.")] = 1,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Token budget of each reviewer answer.")] = 4096,
    endpoint_options: dict[str, Any] = {},  # noqa: B006 - replaced by the endpoint options (with_endpoint_options)
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
    run: RunPick = None,
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
    _asked(store, reviewer, endpoint_options, as_json, said,
           lambda ex, endpoint: ex.review_audit(endpoint, student, source=source, threshold=threshold,
                                                max_tokens=max_tokens, choice=Choice(run=run)))


def _asked(store: Path, model: str, endpoint_options: dict[str, Any], as_json: bool, said: Callable[[Any], None],
           work: Callable[[Experiment, Endpoint], Awaitable[JudgeAuditResult | ReviewAuditResult]]) -> None:
    """An audit that asks a model: ``work`` run with its endpoint, its result printed as JSON or ``said``;
    exit 3 where calls failed for good (what they were about is left undone; a rerun asks them again)."""
    existing(store)
    endpoint = make_endpoint(model, endpoint_options)
    result = run_experiment(store, lambda ex: work(ex, endpoint), endpoint)
    if as_json:
        typer.echo(json.dumps(result.flat()))
    else:
        said(result)
    if result.failed:
        raise typer.Exit(EXIT_INCOMPLETE)
