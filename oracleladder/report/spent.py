"""What the runs that made a student's answers spent, and how many of those answers later runs reused
from the cache (a cached rerun pays nothing and takes no answer over: `store.rollouts`)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ..store.runs import RunRecord


class Spent(BaseModel):
    model_config = ConfigDict(frozen=True)

    runs: int  # the probe runs that made the answers
    tokens_in: int
    tokens_out: int
    cost_usd: float | None  # None: a run with no known price leaves the total unknown, never understated
    reused: int  # of the answers, how many later runs asked again and took from the cache
    reruns: int  # the later runs that did

    @classmethod
    def of(cls, runs: Sequence[RunRecord], reused: tuple[int, int]) -> Spent:
        known = runs and all(r.cost_usd is not None for r in runs)
        return cls(runs=len(runs), tokens_in=sum(r.tokens_in for r in runs), tokens_out=sum(r.tokens_out for r in runs),
                   cost_usd=sum(r.cost_usd or 0.0 for r in runs) if known else None,
                   reused=reused[0], reruns=reused[1])

    def said(self) -> str:
        cost = "unknown" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        line = f"made by {self.runs} probe runs: tokens {self.tokens_in} in / {self.tokens_out} out, cost {cost}"
        return line + (f"; {self.reused} answers reused from the cache by {self.reruns} later runs (paid once, "
                       "counted once)" if self.reused else "")
