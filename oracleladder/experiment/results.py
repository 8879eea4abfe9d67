"""What each stage returns: a typed result, its calls' figures in ``usage``.

``flat()`` is what the stage's ``--json`` prints: the fields as JSON values, the usage figures
spread at the top level where the ``usage`` field stands (the shape of the summaries before
results were typed, which scripts read)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ..clients import ChatRequest, Client, Usage


class Result(BaseModel):
    """A stage's result."""

    def flat(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in self.model_dump(mode="json", by_alias=True).items():
            if name == "usage":
                out.update(value)
            else:
                out[name] = value
        return out


E = TypeVar("E", bound="Estimate")


class Estimate(Result):
    """A dry run: the calls a run would make after the cache, their tokens and their cost; prompts
    estimated at 4 characters a token, answers at their whole max_tokens (an upper bound)."""

    dry_run: bool = True
    calls: int
    tokens_in: int
    tokens_out_max: int
    cost_usd_max: float | None  # None: no price for the model
    batch_cost_usd_max: float | None
    prices: str  # the price table's name

    @classmethod
    def of(cls: type[E], client: Client, requests: Sequence[ChatRequest], **counts: int) -> E:
        """The estimate of ``requests`` at ``client``'s prices, with the run's own ``counts``."""
        tokens_in = sum(client.prompt_tokens(r) for r in requests)
        tokens_out = sum(int(r.params.get("max_tokens") or 0) for r in requests)
        online, batch = (client.prices.cost(client.name, tokens_in, tokens_out, batch=b) for b in (False, True))
        return cls(calls=len(requests), tokens_in=tokens_in, tokens_out_max=tokens_out, cost_usd_max=online,
                   batch_cost_usd_max=batch, prices=client.prices.name, **counts)


class CompileEstimate(Estimate):
    problems: int
    unusable: int  # skipped for their reference answer: no call


class ProbeEstimate(Estimate):
    jobs: int
    families: int
    unusable: int = 0  # families whose parent jobs are skipped for their reference answer


class CompileResult(Result):
    all_failed: str | None  # every call failed for one reason of the endpoint's: that reason, in one line
    run_id: str
    compiled: int
    failed: int  # problems whose every attempt failed a check
    infrastructure_failures: int  # problems a provider or grader failure left unfinished (a rerun retries)
    attempts_per_family: dict[int, int]  # attempts a compiled family took -> how many families
    failed_checks: dict[str, int]
    failed_why: dict[str, list[str]]  # pid -> "check: reason" of its last attempt's failures
    infrastructure_failed_why: dict[str, str]
    usage: Usage
    budget_stop: str | None
    batch_rows_submitted: int | None
    not_compiled_for_budget: int


class PrimitivesResult(Result):
    run_id: str
    families: int
    had_primitive: int
    compiled: int
    failed_why: dict[str, str]
    infrastructure_failures: int
    usage: Usage
    budget_stop: str | None


class JobFailure(BaseModel):
    """A probe job whose call failed for good (a rerun asks it again)."""

    pid: str
    target: str
    k: int
    reason: str


class ProbeResult(Result):
    run_id: str
    families: int
    usage: Usage
    ungraded: int  # answers whose grading failed (`ladder regrade`)
    without_primitive: int  # families the primitive conditions skipped for want of a primitive
    budget_stop: str | None
    batch_rows_submitted: int | None
    failed_jobs: list[JobFailure]
    endpoint_lost: str | None = None  # the endpoint stopped answering mid-run: why, in one line
    unusable: int = 0  # families whose parent jobs were skipped for their reference answer


class ScreenResult(ProbeResult):
    set_name: str = Field(serialization_alias="set")
    verdicts: dict[str, int]  # verdict -> families


class RegradeResult(Result):
    run_id: str
    regraded: int
    still_ungraded: int
    accepted: int


class JudgeAuditResult(Result):
    run_id: str
    sampled: int
    judge_accepts: int  # cases written to the sheet
    failed: int  # judge calls that failed for good (a rerun asks them again)
    unreadable: int
    usage: Usage
    batch_rows_submitted: int | None
