"""`ladder compile` (and `--primitives-only`, `--integrate-only`), `ladder check` and `ladder attempts`: families made by
a teacher, every validator run on a file or a set of them, and a teacher's attempts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..domains import get_domain
from ..experiment import (
    CompileResult,
    Endpoint,
    Estimate,
    Experiment,
    IntegrateResult,
    PrimitivesResult,
    check as check_families,
)
from ..experiment.configs import CompileConfig
from ..ladder import WHOLE
from ..report.palette import n_families
from ..store import DEFAULT_STORE
from .common import (
    EXIT_INCOMPLETE,
    Calling,
    CorrectionsOpt,
    OnDuplicate,
    OnDuplicateOpt,
    StoreOpt,
    calling,
    console,
    existing,
    fail,
    make_endpoint,
    run_experiment,
    say,
)
from .display import bar, cost_said, estimate_said, say_budget, timeouts_said
from .options import with_config


@calling(priced=True, cluster=True)
@with_config
def compile(  # noqa: A001 - the CLI verb of ARCHITECTURE.md
    teacher: Annotated[str, typer.Option("--teacher", help="provider/model of the teacher, e.g. openai/gpt-5.4.")],
    problems: Annotated[Path | None, typer.Argument(help="Math: a JSONL, CSV or Parquet pool with NuminaMath's, MATH's (answer boxed in the solution) or AIME-style field names (pid/id/unique_id, problem, answer, solution); see --field. Code: humaneval[:N] or a JSONL of stdin/stdout problems. Not with --primitives-only.")] = None,
    *,
    config: CompileConfig,
    structured: Annotated[str, typer.Option("--structured", help="How the teacher's JSON is asked for, in instructor's modes: json_schema (a JSON-schema response_format), json_object (a JSON-object response_format, the schema in the prompt), tools (a forced tool call; Anthropic: a forced tool_use), md_json (the schema in the prompt), or auto: the provider's strongest the server takes, learned from its rejections.")] = "auto",
    calls: Calling,
    primitives_only: Annotated[bool, typer.Option("--primitives-only", help="Write only the primitive (the key idea, docs/primitive.md) of each family of --source that has none, from its problem and roadmap; takes no PROBLEMS.")] = False,
    integrate_only: Annotated[bool, typer.Option("--integrate-only", help="Write only the INTEGRATE step (its prompt and gold, which must equal the reference answer) of each family of --source that has none (released families have none); takes no PROBLEMS.")] = False,
    source: Annotated[str, typer.Option(help="With --primitives-only or --integrate-only: the roadmap set whose families get them.")] = "release",
) -> None:
    """Compile milestone families with a teacher: validators, retry on error, every attempt stored."""
    if primitives_only or integrate_only:
        flag = "--primitives-only" if primitives_only else "--integrate-only"
        if (problems is not None or config.domain != "math" or config.dry_run or config.screened is not None
                or config.teacher_prompt != "toolkit" or config.shard != WHOLE or calls.cluster is not None
                or (primitives_only and integrate_only)):
            fail(f"{flag} takes no PROBLEMS (it reads the families of --source), math only, no --dry-run, --set, "
                 "--teacher-prompt, --shard or --ray, not with the other of --primitives-only and --integrate-only")
        # online calls: neither has ever taken --batch
        endpoint = make_endpoint(teacher, {**calls.endpoint_options, "batch": False}, structured=structured)
        _fill(calls, endpoint, source, config, integrate_only)
        return
    if problems is None:
        fail("missing PROBLEMS: a pool of problems to compile (or --primitives-only, --integrate-only)")
    get_domain(config.domain)  # an unknown name fails here, before the store is touched
    endpoint = calls.endpoint(teacher, structured=structured)
    result = calls.run(endpoint, lambda ex: ex.compile(problems, endpoint, config, progress=bar),
                       reading=config.dry_run)
    if isinstance(result, Estimate):
        calls.said(result, estimate_said(result, f"about {result.calls} teacher calls: a first attempt for each of "
                                                 f"the {result.calls} of {result.problems} problems not yet compiled "
                                                 f"by this teacher ({result.unusable} skipped for their reference "
                                                 "answer; re-asks and independent solves add more; cached attempts "
                                                 "cost nothing)"))
        return
    calls.said(result)  # its JSON; the lines below once it is known that not every call failed
    if result.all_failed:
        fail(f"every teacher call failed: {result.all_failed}", 1)
    if not calls.as_json:
        _say_compiled(result)
    say_budget(result.budget_stop)
    if result.infrastructure_failures or result.budget_stop:
        raise typer.Exit(EXIT_INCOMPLETE)
    if not result.compiled:
        fail(f"compiled none of the {result.failed} problems: each failed its checks (see above; `ladder check` "
             "and --max-attempts)", 1)


def _say_compiled(result: CompileResult) -> None:
    console.print(f"compiled {result.compiled}, failed {result.failed}, infrastructure failures "
                  f"{result.infrastructure_failures}; attempts per family {result.attempts_per_family}; "
                  + (f"{result.budget_raised} cut-off replies asked again at twice --max-tokens; "
                     if result.budget_raised else "") +
                  f"tokens {result.usage.tokens_in} in / {result.usage.tokens_out} out; {cost_said(result.usage)}"
                  f"{timeouts_said(result.usage)}", soft_wrap=True, highlight=False, markup=False)
    for pid, errs in result.failed_why.items():
        console.print(f"  failed {pid}: {errs[0] if errs else ''}", soft_wrap=True, highlight=False, markup=False)
    for pid, reason in result.infrastructure_failed_why.items():
        say(f"  {pid}: {reason}")
    if result.infrastructure_failures:
        say("a provider or grader failure says nothing about the roadmap: rerun the same command to compile "
            "those problems again (stored calls are not asked again)")


def _fill(calls: Calling, endpoint: Endpoint, source: str, config: CompileConfig, integrate: bool) -> None:
    """compile --primitives-only or --integrate-only: the primitive or the INTEGRATE step of each family
    of ``source`` that has none."""
    async def fill(ex: Experiment) -> PrimitivesResult | IntegrateResult:
        return await (ex.compile_integrate if integrate else ex.compile_primitives)(
            endpoint, config, source=source, progress=bar)

    result = calls.run(endpoint, fill)
    had = result.had_integrate if isinstance(result, IntegrateResult) else result.had_primitive
    calls.said(result, f"{'INTEGRATE steps' if integrate else 'primitives'}: {result.compiled} written, "
                       f"{len(result.failed_why)} failed, {had} of {n_families(result.families)} already had one; "
                       f"tokens {result.usage.tokens_in} in / {result.usage.tokens_out} out; {cost_said(result.usage)}",
               *(f"  failed {pid}: {why}" for pid, why in result.failed_why.items()))
    if result.infrastructure_failures or result.budget_stop:
        raise typer.Exit(EXIT_INCOMPLETE)


def check(
    families: Annotated[Path | None, typer.Argument(help="Families in the released record format (or --source).")] = None,
    source: Annotated[str | None, typer.Option("--source", help="Instead of a file: the store's roadmap set ('release', a teacher, TEACHER@coarse|fine), as compiled.")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per family, then the totals.")] = False,
    use_corrections: CorrectionsOpt = False,
    on_duplicate: OnDuplicateOpt = OnDuplicate.error,
) -> None:
    """Run every deterministic validator on existing families: a file's, or a roadmap set of the store."""
    if (families is None) == (source is None):
        fail("give FAMILIES (a file) or --source SET (a roadmap set of the store)")
    if source is not None:
        existing(store)
        checked = run_experiment(store, lambda ex: ex.check(source, use_corrections=use_corrections), reading=True)
    elif families is not None:  # the other of the two, as checked above
        checked = check_families(families, use_corrections=use_corrections, on_duplicate=on_duplicate.value)
    if as_json:
        for family, report in zip(checked.families, checked.reports):
            typer.echo(json.dumps({
                "pid": report.pid, "passed": report.passed, "leak_level": checked.leak_level(family),
                "checks": [c.model_dump(mode="json") for c in report.checks],
            }))
        typer.echo(json.dumps({"totals": checked.totals}))
        return
    for report in checked.reports:
        for c in report.failures():
            # numbered from 1 like the reasons ("duplicates milestone 1's gold"); m<i> is its record id
            where = f"milestone {c.milestone + 1} (m{c.milestone})" if c.milestone is not None else "family"
            console.print(f"{report.pid} {where} [{c.check}] {c.reason}", soft_wrap=True, highlight=False, markup=False)
    console.print_json(json.dumps(checked.totals))



def attempts(
    teacher: Annotated[str, typer.Option("--teacher", help="The teacher (provider/model) whose attempts to show.")],
    pid: Annotated[str | None, typer.Option("--pid", help="Only this problem's attempts.")] = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON line per attempt.")] = False,
) -> None:
    """A teacher's compile attempts per problem: each plan, and the errors and reasons it got."""
    existing(store)
    found = run_experiment(store, lambda ex: ex.attempts(teacher, pid), reading=True)
    for a in found:
        if as_json:
            typer.echo(a.model_dump_json())
            continue
        granularity = f" ({a.granularity})" if a.granularity else ""
        say(f"{a.pid}{granularity} attempt {a.attempt + 1}: {'passed' if a.passed else 'failed'}")
        milestones = a.plan.get("milestones") if isinstance(a.plan, dict) else None
        for i, m in enumerate(milestones if isinstance(milestones, list) else [], 1):
            if isinstance(m, dict):
                say(f"  {i}. {m.get('type')}: {m.get('description')} -> {m.get('canonical_answer')}")
        for e in a.errors:
            where = f"milestone {e['milestone'] + 1}" if isinstance(e, dict) and e.get("milestone") is not None else "plan"
            say(f"  [{e.get('check')}] {where}: {e.get('reason')}" if isinstance(e, dict) else f"  {e}")
