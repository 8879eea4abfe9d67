"""A plain benchmark's scores (`ladder benchmark`, PRIM's benchmark and a report's Table 1 column): where its
problems are filed and its pass@1 and pass@k from the graded answers."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from statistics import fmean

from ..report.stats import pass_at_k
from ..schemas import Rollout

BENCHMARK = "benchmark:"  # the roadmap set a plain benchmark's problems are filed under: benchmark:NAME


def benchmark_scores(rollouts: Sequence[Rollout], k: int,
                     judged: Collection[str] = ()) -> tuple[int, float | None, float | None]:
    """A plain benchmark's graded answers (the first ``k`` of each problem): the problems with ``k`` graded
    answers, and their mean pass@1 and unbiased pass@k (None: no problem has ``k``); an answer is right
    where the grader accepts it or its call key is in ``judged`` (an answer judge read it correct)."""
    correct: dict[str, list[bool]] = {}
    for r in rollouts:
        if r.verdict.graded and r.k < k:
            correct.setdefault(r.pid, []).append(r.verdict.accepted or r.call_key in judged)
    done = [c for c in correct.values() if len(c) == k]
    if not done:
        return 0, None, None
    return len(done), fmean(sum(c) / k for c in done), fmean(pass_at_k(k, sum(c), k) for c in done)
