"""`ladder audit`: the paper's audits of a run, one command each."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..cli_common import (DEFAULT_STORE, EXIT_INCOMPLETE, SourceOpt, StoreOpt, fail, make_endpoint, run_experiment,
                          say, with_endpoint_options, writable)
from ..report import markdown
from ..report.tables import FormatAudit
from ..schemas.models import parse_roadmap_set
from ..store import Store
from . import format as fmt
from . import judge as jdg
from . import roadmap

app = typer.Typer(no_args_is_help=True, help="The paper's audits of a run: format, roadmap-match, judge.")

StudentOpt = Annotated[str, typer.Option("--student", help="The student whose rollouts to audit.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def _reading(path: Path):  # type: ignore[no-untyped-def]
    if not path.is_file():
        fail(f"{path}: no such store")
    return Store.open(path, readonly=not writable(path))


async def read_format_audit(store_path: Path, student: str, source: str) -> FormatAudit:
    """The format audit of a student's rollouts on a roadmap set, from the store at ``store_path``
    (opened read-only where it cannot be written)."""
    async with _reading(store_path) as store:
        return await fmt.format_audit(store, student, source)


@app.command("format")
def format_(student: StudentOpt, source: SourceOpt = "release", store: StoreOpt = DEFAULT_STORE,
            as_json: JsonOpt = False) -> None:
    """Format audit (paper Table 24): each rollout as no_boxed, no_boxed_trunc, unparsable,
    parsed_wrong or parsed_correct, per condition; ungraded rollouts and failed jobs apart."""
    audit = asyncio.run(read_format_audit(store, student, source))
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


async def _roadmap(store_path: Path, student: str, source: str) -> dict:
    async with _reading(store_path) as store:
        families = await _families(store, source)
        rollouts = await store.rollouts(student=student, source=families[0].provenance.roadmap_set,
                                        target=roadmap.C1)
    if not rollouts:
        fail(f"{store_path} holds no C1 attempts of student '{student}' on roadmap set '{source}'; "
             f"run `ladder probe --student {student} --conditions C1` first")
    return roadmap.roadmap_match(families, rollouts)


@app.command("roadmap-match")
def roadmap_match(student: Annotated[list[str], typer.Option("--student", help="A student (repeat for several).")],
                  source: SourceOpt = "release", store: StoreOpt = DEFAULT_STORE, as_json: JsonOpt = False) -> None:
    """Milestone answers in the students' own unaided (C1) attempts (paper Table 35): own rate,
    cross-problem control, ratio, over all golds and over golds the statement does not contain."""
    results = {s: asyncio.run(_roadmap(store, s, source)) for s in student}
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
) -> None:
    """Judge audit of the grader (paper Appendix V.1): a seeded sample of rejected rollouts,
    stratified by rejection reason, graded by an LLM judge; the cases it accepts go to a
    grader-blind sheet for a person to label (correct, malformed_reference, incorrect, undecidable).
    `--read SHEET` turns the filled-in sheet into the result table, projected to the whole run."""
    if read is not None:
        try:
            result = jdg.read_sheet(read, jdg.key_path(read))
        except (OSError, jdg.SheetError) as exc:
            fail(str(exc))
        typer.echo(json.dumps(result) if as_json else "\n".join(jdg.markdown(result)))
        return
    if not (judge_model and student and sheet):
        fail("ladder audit judge needs --judge, --student and --sheet (or --read SHEET)")
    if not store.is_file():
        fail(f"{store}: no such store")
    endpoint = make_endpoint(judge_model, endpoint_options)
    summary = run_experiment(store, lambda ex: ex.judge_audit(endpoint, student, sheet, source=source, n=n, seed=seed,
                                                              max_tokens=max_tokens), endpoint)
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        say(f"judged {summary['sampled']} rejected rollouts ({summary['requests']} requests, "
            f"{summary['cache_hits']} from the cache): the judge accepts {summary['judge_accepts']}, "
            f"written to {sheet} (key: {jdg.key_path(sheet)}); {summary['unreadable']} unreadable "
            f"verdicts, {summary['failed']} failed calls. Label each case correct, malformed_reference, "
            f"incorrect or undecidable, then run `ladder audit judge --read {sheet}`.")
    if summary["failed"]:  # those rollouts count as judged by no one; a rerun asks them again
        raise typer.Exit(EXIT_INCOMPLETE)
