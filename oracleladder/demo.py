"""`ladder demo`: the whole pipeline, offline, on the embedded model, in a few minutes on 2 cores.

It imports the demo set (``data/families_demo.jsonl``: small problems written for the demo, which
SmolLM2-135M partly solves), probes the embedded model on Stage 0 and the ladder C1-C3, writes the
report with its HTML version, and sums up what the report found beside what the same probe found
over ten seed offsets (a 135M model's labels move with the sampling). The model's answers are constrained by ``boxed_grammar``: without it the 135M model states
its results in prose and boxes none, so every family would be Unrecovered. The report says the
grammar was used. docs/demo.md gives the settings and what they were chosen on.
"""

from __future__ import annotations

import time
import webbrowser
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from .clients.local import GRAMMAR_FIELD, boxed_grammar, boxed_max_tokens
from .experiment import Choice, Endpoint, Experiment, ProbeResult, Progress, Report
from .ladder.outcomes import FamilyResults, Gap, Outcome, classify, parent_outcome
from .report.palette import GAP_HELP, OUT_HELP

DEMO_FAMILIES = resources.files("oracleladder.data") / "families_demo.jsonl"
SOURCE = "demo"
STUDENT = "local"
# Measured on 2 cores at 10 seed offsets (bench/demo_seeds.py, docs/demo.md). Temperature 0.1, nearly greedy:
# each family's answer is its most likely one, and the seed offsets draw among the near ties, as another
# machine's floating-point order would, so the picture measured over them does not hang on one of them.
# K = 1 (tau = 1): a label is one answer's, the most likely; more attempts would only add chances at a lucky one.
K = 1
REASONING_CHARS = 200
MAX_TOKENS = boxed_max_tokens(REASONING_CHARS)  # no answer under the grammar is cut off
TEMPERATURE = 0.1
CONDITIONS = ("C1", "C2", "C3")  # the ladder; the controls would double the time
RUNGS = (("C1 (alone)", "C1_direct"), ("C2 (with the roadmap)", "C2_descriptions"),
         ("C3 (with its answers too)", "C3_gold_answers"))
# What bench/demo_seeds.py found at SEED_OFFSETS seed offsets (docs/demo.md): the fewest and the most
# families each label held. The summary shows them beside one run's counts.
SEED_OFFSETS = 10
OVER_SEEDS: dict[str, tuple[int, int]] = {
    "outcome Direct": (1, 2), "outcome Roadmap-Needed": (0, 2), "outcome Answers-Needed": (0, 1),
    "outcome Unrecovered": (1, 2), "gap Direct": (1, 2), "gap Roadmap-gap": (0, 0),
    "gap Milestone-execution-gap": (0, 0), "gap Composition-gap": (1, 1), "gap Missing-milestone-gap": (0, 2),
    "gap Capability-gap": (0, 1)}
# the gap shown as an example, the most telling first
EXAMPLE_ORDER = (Gap.COMPOSITION, Gap.MS_EXEC, Gap.ROADMAP, Gap.MISSING_MS, Gap.CAPABILITY)


@dataclass(frozen=True)
class Diagnosis:
    """One family's place in the report: its outcome (Algorithm 3) and reasoning gap (taxonomy)."""

    pid: str
    problem: str
    results: FamilyResults
    outcome: Outcome
    gap: Gap


@dataclass(frozen=True)
class DemoRun:
    """What the demo did and found."""

    k: int  # attempts per milestone and per condition
    measured: bool  # the demo as measured over the seed offsets (every family, the default K and budget)
    requests: int  # calls made to the model (the others came from the store's cache)
    cache_hits: int
    seconds: float
    diagnoses: list[Diagnosis]
    html: Path


def seed_tag(seed: int) -> str | None:
    """The cache tag of the seed offset ``seed``: the embedded model derives each call's sampling seed
    from the call's key, which holds the tag, so each offset samples other answers (and is other
    calls in the store). Offset 0 has none: the demo's calls keep the keys they always had."""
    return f"seed {seed}" if seed else None


def student(seed: int = 0) -> Endpoint:
    """The embedded model with the demo's grammar (one generation at a time: llama.cpp runs one),
    sampling at the seed offset ``seed``."""
    return Endpoint(STUDENT, concurrency=1, extra_body={GRAMMAR_FIELD: boxed_grammar(REASONING_CHARS)},
                    cache_tag=seed_tag(seed))


async def run(ex: Experiment, out: Path, *, families: int | None = None, k: int = K, max_tokens: int = MAX_TOKENS,
              seed: int = 0, progress: Progress | None = None) -> DemoRun:
    """Import the demo set, probe the embedded model on its first ``families`` (all by default) at the
    seed offset ``seed``, and write the report and its HTML version in ``out``."""
    start = time.perf_counter()
    await ex.import_families(Path(str(DEMO_FAMILIES)), source=SOURCE)
    summary = await ex.probe(student(seed), k=k, conditions=CONDITIONS, max_tokens=max_tokens, temperature=TEMPERATURE,
                             source=SOURCE, limit=families, progress=progress)
    assert isinstance(summary, ProbeResult)  # a probe that ran: no dry_run
    # this setting's answers only: a demo store of an earlier version holds answers at another temperature or K
    report = await ex.report([STUDENT], source=SOURCE,
                             choice=Choice(k=k, temperature=TEMPERATURE, max_tokens=max_tokens))
    await ex.write_report(report, out, html=True)
    diagnoses = diagnose(report)
    return DemoRun(k=k, measured=families is None and k == K and max_tokens == MAX_TOKENS,
                   requests=summary.usage.requests,
                   cache_hits=summary.usage.cache_hits, seconds=time.perf_counter() - start, diagnoses=diagnoses,
                   html=out / "html" / "index.html")


def diagnose(report: Report) -> list[Diagnosis]:
    """Each reported family's outcome and gap, as the report counts them (tau = 1, strict milestone test)."""
    problems = {f.pid: f.parent_prompt for f in report.families}
    return [Diagnosis(r.pid, problems[r.pid], r, parent_outcome(r.ladder, report.tau), classify(r, report.tau))
            for r in report.results[STUDENT]]


def summary(demo: DemoRun) -> list[RenderableType]:
    """What the terminal shows at the end: the counts (beside their range over the seed offsets
    measured), one family as an example of a gap, and where the report is."""
    n = len(demo.diagnoses)
    solved = [any(r) for d in demo.diagnoses for r in d.results.stage0.values()]
    head = Text(f"{n} small arithmetic {'family' if n == 1 else 'families'} written for the demo, K = {demo.k} "
                f"attempt{'' if demo.k == 1 else 's'} at each milestone and "
                f"rung; {sum(solved)} of {len(solved)} milestones solved alone (Stage 0). {demo.requests} calls to "
                f"the embedded model, {demo.cache_hits} from the cache, {demo.seconds / 60:.1f} min in all.")
    moves = Text(f"Labels on a 135M model move with sampling: even at temperature {TEMPERATURE}, another seed "
                 "(--seed N) or another machine moves some families"
                 + (f"; the last column is the range over {SEED_OFFSETS} seed offsets (docs/demo.md)."
                    if demo.measured else "."))
    parts: list[RenderableType] = [head, moves, counts_table(demo.diagnoses, demo.measured)]
    example = next((d for gap in EXAMPLE_ORDER for d in demo.diagnoses if d.gap is gap), None)
    if example is not None:
        parts.append(explain(example))
    parts.append(Text(f"HTML report: {demo.html} (`ladder demo --open` opens it); report.md and report.json "
                      f"in {demo.html.parent.parent}. The answers were constrained to end in a box (a grammar): "
                      "the report says so."))
    return parts


def counts_table(diagnoses: list[Diagnosis], ranges: bool) -> Table:
    """How many families each outcome and each reasoning gap holds, with what it means, and (``ranges``)
    the fewest and most it held over the seed offsets measured."""
    table = Table(title="What the report found", title_justify="left", caption_justify="left",
                  caption="MS test: every milestone solved alone at least once in K attempts")
    table.add_column("label")
    table.add_column("means")
    table.add_column("families", justify="right")
    if ranges:
        table.add_column(f"over {SEED_OFFSETS} seeds", justify="right")
    outcomes, gaps = Counter(d.outcome for d in diagnoses), Counter(d.gap for d in diagnoses)

    def row(label: str, means: str, families: int) -> None:
        lo, hi = OVER_SEEDS[label]
        table.add_row(label, means, str(families), *([str(lo) if lo == hi else f"{lo}-{hi}"] if ranges else []))

    for outcome in (o for o in Outcome if o is not Outcome.PRIMITIVE_NEEDED):
        row(f"outcome {outcome.value}", OUT_HELP[outcome], outcomes[outcome])
    table.add_section()
    for gap in (g for g in Gap if g is not Gap.PRIMITIVE):
        row(f"gap {gap.value}", GAP_HELP[gap], gaps[gap])
    return table


def explain(d: Diagnosis) -> RenderableType:
    """One family as an example: its problem and its correct attempts of K on each rung."""
    problem = d.problem.split("Problem:", 1)[-1].strip()
    stage0 = ", ".join(f"milestone {t[1:]} {_tally(r)}" for t, r in d.results.stage0.items())
    ladder = ", ".join(f"{name} {_tally(d.results.ladder.get(condition, []))}" for name, condition in RUNGS)
    return Group(Text(f"Example, a {d.gap.value} ({GAP_HELP[d.gap]}): {d.pid}", style="bold"),
                 Text(f"  {problem}"),
                 Text(f"  Each milestone alone (Stage 0): {stage0}"),
                 Text(f"  The whole problem: {ladder}"))


def _tally(rolls: list[bool]) -> str:
    return f"{sum(rolls)}/{len(rolls)}"


def open_report(html: Path) -> bool:
    """Open the HTML report in a browser; False where there is none."""
    return webbrowser.open(html.resolve().as_uri())
