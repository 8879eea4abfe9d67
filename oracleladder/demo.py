"""`ladder demo`: the whole pipeline, offline, on the embedded model, in a few minutes on 2 cores.

It imports the demo set (``data/families_demo.jsonl``: small problems written for the demo, which
SmolLM2-135M partly solves, beside released families it does not), probes the embedded model on
Stage 0 and the ladder C1-C3, writes the report with its HTML version, and sums up what the report
found. The model's answers are constrained by ``boxed_grammar``: without it the 135M model states
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
from .experiment import Endpoint, Experiment, Progress, Report
from .ladder.outcomes import FamilyResults, Gap, Outcome, classify, parent_outcome
from .report.palette import GAP_HELP, OUT_HELP, n_families

DEMO_FAMILIES = resources.files("oracleladder.data") / "families_demo.jsonl"
WRITTEN_PREFIX = "demo-"  # the pids of the families written for the demo; the others are released
SOURCE = "demo"
STUDENT = "local"
# Chosen by measuring on 2 cores (docs/demo.md): a spread of outcomes and gaps within 5 minutes.
K = 4
REASONING_CHARS = 200
MAX_TOKENS = boxed_max_tokens(REASONING_CHARS)  # no answer under the grammar is cut off
TEMPERATURE = 0.7
CONDITIONS = ("C1", "C2", "C3")  # the ladder; the controls would double the time
RUNGS = (("C1 (alone)", "C1_direct"), ("C2 (with the roadmap)", "C2_descriptions"),
         ("C3 (with its answers too)", "C3_gold_answers"))
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
    written: int  # families written for the demo
    released: int  # families of the OracleLadder release
    requests: int  # calls made to the model (the others came from the store's cache)
    cache_hits: int
    seconds: float
    diagnoses: list[Diagnosis]
    html: Path


def student() -> Endpoint:
    """The embedded model with the demo's grammar (one generation at a time: llama.cpp runs one)."""
    return Endpoint(STUDENT, concurrency=1, extra_body={GRAMMAR_FIELD: boxed_grammar(REASONING_CHARS)})


async def run(ex: Experiment, out: Path, *, families: int | None = None, k: int = K, max_tokens: int = MAX_TOKENS,
              progress: Progress | None = None) -> DemoRun:
    """Import the demo set, probe the embedded model on its first ``families`` (all by default), and
    write the report and its HTML version in ``out``."""
    start = time.perf_counter()
    await ex.import_families(Path(str(DEMO_FAMILIES)), source=SOURCE)
    summary = await ex.probe(student(), k=k, conditions=CONDITIONS, max_tokens=max_tokens, temperature=TEMPERATURE,
                             source=SOURCE, limit=families, progress=progress)
    report = await ex.report([STUDENT], source=SOURCE)
    await ex.write_report(report, out, html=True)
    diagnoses = diagnose(report)
    written = sum(d.pid.startswith(WRITTEN_PREFIX) for d in diagnoses)
    return DemoRun(k=k, written=written, released=len(diagnoses) - written, requests=summary.usage.requests,
                   cache_hits=summary.usage.cache_hits, seconds=time.perf_counter() - start, diagnoses=diagnoses,
                   html=out / "html" / "index.html")


def diagnose(report: Report) -> list[Diagnosis]:
    """Each reported family's outcome and gap, as the report counts them (tau = 1, strict milestone test)."""
    problems = {f.pid: f.parent_prompt for f in report.families}
    return [Diagnosis(r.pid, problems[r.pid], r, parent_outcome(r.ladder, report.tau), classify(r, report.tau))
            for r in report.results[STUDENT]]


def summary(demo: DemoRun) -> list[RenderableType]:
    """What the terminal shows at the end: the counts, one family as an example of a gap, and where
    the report is."""
    n = len(demo.diagnoses)
    solved = [any(r) for d in demo.diagnoses for r in d.results.stage0.values()]
    head = Text(f"{n_families(n)} ({demo.written} written for the demo, {demo.released} from the OracleLadder "
                f"release), K = {demo.k} attempts at each milestone and rung; {sum(solved)} of {len(solved)} "
                f"milestones solved alone (Stage 0). {demo.requests} calls to the embedded model, "
                f"{demo.cache_hits} from the cache, {demo.seconds / 60:.1f} min in all.")
    parts: list[RenderableType] = [head, counts_table(demo.diagnoses)]
    example = next((d for gap in EXAMPLE_ORDER for d in demo.diagnoses if d.gap is gap), None)
    if example is not None:
        parts.append(explain(example))
    parts.append(Text(f"HTML report: {demo.html} (`ladder demo --open` opens it); report.md and report.json "
                      f"in {demo.html.parent.parent}. The answers were constrained to end in a box (a grammar): "
                      "the report says so."))
    return parts


def counts_table(diagnoses: list[Diagnosis]) -> Table:
    """How many families each outcome and each reasoning gap holds, with what it means."""
    table = Table(title="What the report found", title_justify="left", caption_justify="left",
                  caption="MS test: every milestone solved alone at least once in K attempts")
    table.add_column("label")
    table.add_column("means")
    table.add_column("families", justify="right")
    outcomes = Counter(d.outcome for d in diagnoses)
    gaps = Counter(d.gap for d in diagnoses)
    for outcome in (o for o in Outcome if o is not Outcome.PRIMITIVE_NEEDED):
        table.add_row(f"outcome {outcome.value}", OUT_HELP[outcome], str(outcomes[outcome]))
    table.add_section()
    for gap in (g for g in Gap if g is not Gap.PRIMITIVE):
        table.add_row(f"gap {gap.value}", GAP_HELP[gap], str(gaps[gap]))
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
