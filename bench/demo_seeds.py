"""How `ladder demo`'s labels move with the sampling: the demo set (or another set of families) probed
as the demo probes it, at N seed offsets, each into its own store in DIR (a rerun asks only the calls
not made yet: a smaller K, fewer offsets or a subset of the families cost nothing).

    python bench/demo_seeds.py --offsets 10 [--families FILE] [--pids a,b] [--k 4] [--tau 1] [--temperature T] [--dir DIR]
    LADDER_LOCAL_THREADS=2 python bench/demo_seeds.py ...   # llama.cpp's thread count (default: half the cores)
    python bench/demo_seeds.py --smoke    # a few seconds: 1 offset, 1 family, K = 1, 8 tokens

Prints each family's outcome and gap over the offsets with its attempts solved per rung, then each
offset's count of families per outcome and of families in a ladder gap other than Capability-gap,
in how many offsets the demo's picture holds (at least three outcomes, and a family in such a gap),
and the range of each label's count over the offsets (what `oracleladder.demo.OVER_SEEDS` holds).
docs/demo.md has its output for the demo set at N = 10.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oracleladder import (  # noqa: E402 - after the path insert
    Choice,
    Experiment,
    demo,
)
from oracleladder.clients.local import default_threads  # noqa: E402
from oracleladder.ladder.outcomes import Gap, Outcome  # noqa: E402

DEFAULT_DIR = Path("demo-seeds")
LADDER_GAPS = (Gap.ROADMAP, Gap.MS_EXEC, Gap.COMPOSITION, Gap.MISSING_MS)  # a ladder gap, not Capability-gap
# two tables: an Outcome and a Gap of one name ("Direct") are equal str enums
SHORT_OUTCOME = {Outcome.DIRECT: "D", Outcome.ROADMAP_NEEDED: "R", Outcome.ANSWERS_NEEDED: "A", Outcome.UNRECOVERED: "U"}
SHORT_GAP = {Gap.DIRECT: "d", Gap.ROADMAP: "r", Gap.MS_EXEC: "e", Gap.COMPOSITION: "c", Gap.MISSING_MS: "m",
             Gap.CAPABILITY: "x"}


async def probe_offset(store: Path, families: Path, seed: int, *, k: int, tau: int, max_tokens: int,
                       temperature: float, pids: list[str], limit: int | None) -> list[demo.Diagnosis]:
    """The families' diagnoses at the seed offset ``seed``, probed as the demo probes them."""
    async with Experiment(store) as ex:
        await ex.import_families(families, source=demo.SOURCE)
        result = await ex.probe(demo.student(seed), k=k, conditions=demo.CONDITIONS, max_tokens=max_tokens,
                                temperature=temperature, source=demo.SOURCE, pids=pids, limit=limit)
        if result.failed_jobs or result.endpoint_lost or result.ungraded:  # a failure is no answer of the model
            raise SystemExit(f"offset {seed}: {len(result.failed_jobs)} calls failed, {result.ungraded} ungraded"
                             f"{', ' + result.endpoint_lost if result.endpoint_lost else ''}")
        # this setting's first K attempts: a store probed at a larger K or at another setting holds more
        choice = Choice(k=k, temperature=temperature, max_tokens=max_tokens)
        report = await ex.report([demo.STUDENT], source=demo.SOURCE, threshold=tau, choice=choice)
    print(f"offset {seed}: {result.usage.requests} calls, {result.usage.cache_hits} from the cache", flush=True)
    return [d for d in demo.diagnose(report) if d.pid in pids][:limit]


def holds(diagnoses: list[demo.Diagnosis]) -> bool:
    """The demo's picture: at least three outcomes, and a family in a ladder gap other than Capability-gap."""
    return len({d.outcome for d in diagnoses}) >= 3 and any(d.gap in LADDER_GAPS for d in diagnoses)


def solved(diagnoses: list[list[demo.Diagnosis]], pid: str) -> str:
    """A family's attempts solved over every offset: each milestone alone, then each rung."""
    mine = [d.results for run in diagnoses for d in run if d.pid == pid]
    rolls = {**{t: [x for r in mine for x in r.stage0[t]] for t in mine[0].stage0},
             **{name.split()[0]: [x for r in mine for x in r.ladder.get(c, [])] for name, c in demo.RUNGS}}
    return " ".join(f"{t} {sum(x)}/{len(x)}" for t, x in rolls.items())


def ranges(runs: list[list[demo.Diagnosis]]) -> dict[str, tuple[int, int]]:
    """The fewest and most families each label held over the offsets, as `demo.OVER_SEEDS` reads them."""
    counts = [Counter([f"outcome {d.outcome.value}" for d in run] + [f"gap {d.gap.value}" for d in run]) for run in runs]
    return {label: (min(c[label] for c in counts), max(c[label] for c in counts)) for label in demo.OVER_SEEDS}


def render(offsets: list[int], runs: list[list[demo.Diagnosis]]) -> str:
    pids = [d.pid for d in runs[0]]
    legend = ", ".join(f"{c} {label.value}" for table in (SHORT_OUTCOME, SHORT_GAP) for label, c in table.items())
    lines = [f"{len(offsets)} seed offsets ({offsets[0]}..{offsets[-1]}); each family's outcome/gap per offset",
             f"({legend})", ""]
    for pid in pids:
        labels = [next(d for d in run if d.pid == pid) for run in runs]
        outcomes = Counter(d.outcome.value for d in labels)
        gaps = Counter(d.gap.value for d in labels)
        lines += [f"{pid}: {' '.join(SHORT_OUTCOME[d.outcome] + '/' + SHORT_GAP[d.gap] for d in labels)}",
                  f"  outcomes {dict(outcomes.most_common())}",
                  f"  gaps {dict(gaps.most_common())}",
                  f"  solved {solved(runs, pid)}"]
    lines += ["", "offset  Direct Roadmap-Needed Answers-Needed Unrecovered  ladder-gaps  holds"]
    for seed, run in zip(offsets, runs):
        outcomes = Counter(d.outcome for d in run)
        ladder = sum(d.gap in LADDER_GAPS for d in run)
        lines.append(f"{seed:>6}  {outcomes[Outcome.DIRECT]:>6} {outcomes[Outcome.ROADMAP_NEEDED]:>14} "
                     f"{outcomes[Outcome.ANSWERS_NEEDED]:>14} {outcomes[Outcome.UNRECOVERED]:>11}  {ladder:>11}  "
                     f"{'yes' if holds(run) else 'no'}")
    lines.append(f"the picture holds in {sum(map(holds, runs))} of {len(runs)} offsets "
                 "(at least three outcomes, and a family in a gap other than Direct and Capability-gap)")
    lines.append(f"ranges over the offsets (demo.OVER_SEEDS): {ranges(runs)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--offsets", type=int, default=10, help="seed offsets 0..N-1 (default 10)")
    parser.add_argument("--first", type=int, default=0, help="the first offset (default 0, the demo's own)")
    parser.add_argument("--families", type=Path, default=Path(str(demo.DEMO_FAMILIES)), help="a JSONL set")
    parser.add_argument("--pids", help="only these families (comma-separated)")
    parser.add_argument("--k", type=int, default=demo.K)
    parser.add_argument("--tau", type=int, default=1, help="correct attempts of K that solve a rung (default 1)")
    parser.add_argument("--max-tokens", type=int, default=demo.MAX_TOKENS)
    parser.add_argument("--temperature", type=float, default=demo.TEMPERATURE)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="one store per offset (default demo-seeds/)")
    parser.add_argument("--smoke", action="store_true", help="1 offset, 1 family, K = 1, 8 tokens, a temporary dir")
    args = parser.parse_args()
    if args.offsets < 1 or args.k < 1 or args.tau < 1 or args.max_tokens < 1:
        parser.error("--offsets, --k, --tau and --max-tokens are at least 1")
    if args.tau > args.k:
        parser.error("--tau is at most --k")
    if args.temperature < 0:
        parser.error("--temperature is at least 0")
    # the file's families only: a store of another run may hold more under the same roadmap set
    pids = args.pids.split(",") if args.pids else [json.loads(line)["pid"] for line in args.families.open()]
    limit = None
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            args.offsets, args.k, args.max_tokens, args.dir, limit = 1, 1, 8, Path(tmp), 1
        args.dir.mkdir(parents=True, exist_ok=True)
        offsets = list(range(args.first, args.first + args.offsets))
        start = time.perf_counter()
        runs = [asyncio.run(probe_offset(args.dir / f"offset-{seed}.sqlite", args.families, seed, k=args.k,
                                         tau=args.tau, max_tokens=args.max_tokens, temperature=args.temperature, pids=pids,
                                         limit=limit)) for seed in offsets]
    print(f"K = {args.k}, tau = {args.tau}, max_tokens = {args.max_tokens}, temperature = {args.temperature}, "
          f"llama.cpp threads = {default_threads()}, {time.perf_counter() - start:.0f} s\n")
    print(render(offsets, runs))


if __name__ == "__main__":
    main()
