"""What each stage returns: a typed result, its calls' figures in ``usage``.

``flat()`` is what the stage's ``--json`` prints: the fields as JSON values, the usage figures
spread at the top level where the ``usage`` field stands (the shape of the summaries before
results were typed, which scripts read)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ..clients import ChatRequest, Client, Usage, prompt_bound
from ..report.tables import ReviewRow, Truncation
from ..schemas import CheckResult, Correction


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


class ImportResult(Result):
    """Families imported, the corrections merged into them, per family the milestones the leak rule
    drops (`Family.leaking`), and per family the shown texts that state an answer (a milestone's
    description or prompt, dropped among ``leaking``; a primitive, dropped): the checks that found them."""

    families: int
    corrections: list[Correction] = []
    leaking: dict[str, list[int]] = {}
    shown_leaks: dict[str, list[CheckResult]] = {}


E = TypeVar("E", bound="Estimate")


class Estimate(Result):
    """A dry run: the calls a run would make after the cache, their tokens and their cost, at most:
    prompts at their bound (``clients.prompt_bound``: their UTF-8 bytes), answers at their whole
    max_tokens; what ``--max-cost`` reserves for them."""

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
        tokens_in = sum(prompt_bound(r) for r in requests)
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
    budget_raised: int  # problems whose teacher reply was cut off and asked again at twice --max-tokens
    failed_checks: dict[str, int]
    failed_why: dict[str, list[str]]  # pid -> "check: reason" of its last attempt's failures
    infrastructure_failed_why: dict[str, str]
    usage: Usage
    budget_stop: str | None
    batch_rows_submitted: int | None
    not_compiled_for_budget: int


class IntegrateResult(Result):
    """`compile --integrate-only`: the INTEGRATE steps written on a roadmap set's families."""

    run_id: str
    families: int
    had_integrate: int
    compiled: int
    failed_why: dict[str, str]
    infrastructure_failures: int
    usage: Usage
    budget_stop: str | None


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


class BenchmarkResult(ProbeResult):
    """A plain benchmark probe (`Experiment.benchmark`): the problems asked, those left out for want of a
    reference answer, those with K graded answers (``complete``: the scores' denominator), and the mean
    pass@1 and unbiased pass@K over them (None: no problem complete)."""

    name: str
    k: int
    problems: int
    no_answer: int
    complete: int
    pass_at_1: float | None
    pass_at_k: float | None
    max_tokens: int
    truncation: Truncation  # its answers cut off at max_tokens, and why those with nothing to grade were


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
    judge_accepts: int  # cases written to the sheet: rejected rollouts the judge accepts
    paired: dict  # Tables 46 and 45 (audit.judge.paired)
    failed: int  # judge calls that failed for good (a rerun asks them again)
    unreadable: int
    usage: Usage
    batch_rows_submitted: int | None


class ReviewAuditResult(Result):
    """`ladder audit review`: the reviewer on each composition-gap family of each student, and Table 42."""

    run_id: str
    families: int  # distinct composition-gap families asked about, each once over the students
    labeled: int
    unreviewed: int  # no reply in the JSON asked for, after its re-ask: in no category
    failed: int  # calls that failed for good (a rerun asks them again)
    usage: Usage
    batch_rows_submitted: int | None
    table: dict[str, ReviewRow]  # Table 42, per student


class PrimProbeResult(Result):
    """`ladder prim probe`: PRIM's dimensions probed on one roadmap set."""

    run_id: str
    families: int
    rollouts: int
    usage: Usage
    ungraded: int
    skipped: dict[str, int]  # per target, the jobs not planned for want of a solution or a primitive
    budget_stop: str | None
    batch_rows_submitted: int | None
    failed_jobs: list[JobFailure]


class PrimScoreResult(Result):
    """`ladder prim score`: a student's Discovery and Digestion primitives scored by a judge."""

    run_id: str
    scored: int  # judged, and primitives the student wrote unreadably (scored 0)
    unreadable: int
    missing: int  # the judge gave no readable reply after its re-ask, or its call failed: no score
    without_gold: int  # primitives of problems with no gold primitive: not scored
    correct: dict[str, int]  # per target, primitives with Score >= tau
    tau: float
    usage: Usage
    budget_stop: str | None  # --max-cost stopped the judge: the scores it did not ask are missing


class GoldImportResult(Result):
    """`ladder prim import`: the gold primitives stored; per problem, why its gold was left out (it states
    a gold of its family: the leak check of a teacher's primitive); the problems whose gold went in
    unchecked (no family of theirs in the store)."""

    imported: int
    leaking: dict[str, str] = {}
    unchecked: list[str] = []


class PrimCompileResult(Result):
    """`ladder prim compile`: a teacher's primitives (from the problem alone) or plans."""

    run_id: str
    kind: str
    families: int
    had: int  # families that already had this teacher's guidance of this kind
    compiled: int
    failed_why: dict[str, str]
    infrastructure_failures: int
    usage: Usage
    budget_stop: str | None


class PrimAnswersResult(Result):
    """`ladder prim answers`: the answer judge on the Generation and Execution answers the grader rejected."""

    run_id: str
    judged: int
    correct: int  # answers the judge reads as correct (the grader did not)
    missing: int  # no readable judge reply after its re-ask, or its call failed
    usage: Usage
    budget_stop: str | None
