"""`ladder audit`: the paper's audits of a run (oracleladder/audit), one command each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..audit import judge as jdg
from ..audit import roadmap
from ..experiment import Choice, Experiment
from ..experiment.selection import pick
from ..report import markdown
from ..schemas.models import parse_roadmap_set
from ..store import DEFAULT_STORE, Store
from .common import (EXIT_INCOMPLETE, SourceOpt, StoreOpt, existing, fail, make_endpoint, run_experiment, say,
                     with_endpoint_options)
from .selecting import RunPick, with_choice

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                  help="The paper's audits of a run: format, roadmap-match, judge.")

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


async def _roadmap(ex: Experiment, student: str, source: str, picked: Choice,
                   against: str | None) -> roadmap.Containment:
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
    typer.echo(json.dumps({s: r.model_dump() for s, r in results.items()}) if as_json
               else "\n".join(roadmap.markdown(results)))


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
    existing(store)
    endpoint = make_endpoint(judge_model, endpoint_options)
    result = run_experiment(store, lambda ex: ex.judge_audit(endpoint, student, sheet, source=source, n=n, seed=seed,
                                                             max_tokens=max_tokens, choice=Choice(run=run)),
                            endpoint)
    if as_json:
        typer.echo(json.dumps(result.flat()))
    else:
        say(f"judged {result.sampled} rejected rollouts ({result.usage.requests} requests, "
            f"{result.usage.cache_hits} from the cache): the judge accepts {result.judge_accepts}, "
            f"written to {sheet} (key: {jdg.key_path(sheet)}); {result.unreadable} unreadable "
            f"verdicts, {result.failed} failed calls. Label each case correct, malformed_reference, "
            f"incorrect or undecidable, then run `ladder audit judge --read {sheet}`.")
    if result.failed:  # those rollouts count as judged by no one; a rerun asks them again
        raise typer.Exit(EXIT_INCOMPLETE)
