"""The domain interface: what the compile loop (`compiler.loop.Compiler`) and the probe loop
(`probe.runner.run_probe`) ask of a domain, and nothing else.

A domain says what a problem is and how a pool of them is read; what the teacher is asked and what
typed reply it gives; how a reply is checked, re-asked about and kept; which jobs the ladder runs
(Stage 0 and the conditions) with their prompts; how an answer is graded; how the families are found
again and their rollouts collected. The loops own everything else: attempts, caching, failures,
workers, runs.

The compile loop asks only the compile half (`CompileDomain`), so a teacher task that probes nothing
of its own runs in it too: the primitive of an existing family (`domains.primitive.PrimitiveDomain`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, BeforeValidator

from ..schemas import CheckResult, Condition, FamilyReport, Rollout, Verdict
from ..schemas.jsonl import InputError, OnDuplicate
from ..store import Store
from ..verify import grader_name
from ..workers import WorkerPool
from .outcomes import FamilyResults

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11's

    from ..clients import Client


class HasPid(Protocol):
    @property
    def pid(self) -> str: ...


P = TypeVar("P", bound=BaseModel)  # a problem (stored with `Store.put_problem`)
F = TypeVar("F", bound=HasPid)  # a family: a problem with its accepted plan, what the ladder probes
R = TypeVar("R", bound=BaseModel)  # the teacher's typed reply


def at_most(limit: int, what: str) -> BeforeValidator:
    """A bound on a list or a text of a teacher's reply (``what``: its items, "milestones" or
    "characters"), for its `Annotated` field: a reply past it is
    not a valid reply (one failed attempt, its reason readable), refused as it is read, before any
    check or confirming call is spent on it. Not in the JSON schema the teacher is sent: the bound is
    far above what the prompt asks, and a schema change would change every request's call key."""
    def check(value: object) -> object:
        if isinstance(value, (list, str)) and len(value) > limit:
            raise ValueError(f"{len(value)} {what}; at most {limit}")
        return value
    return BeforeValidator(check)


@dataclass(frozen=True)
class Settings:
    """The run's options a domain may read (each reads those it has; the CLI passes them all)."""

    granularity: str = "default"  # how finely the teacher splits a problem
    independent_solve: bool = True  # confirm each milestone by a separate solve
    fields: tuple[str, ...] = ()  # a pool's columns, NAME=COLUMN
    null_values: tuple[str, ...] = ()  # a pool's cell texts that mean "missing" (none unless named)
    encoding: str | None = None  # a CSV pool's encoding, when it is not UTF-8
    teacher_prompt: str = "toolkit"  # the teacher's prompt: the toolkit's, or the paper's as published


@dataclass(frozen=True)
class Attempt:
    """One teacher attempt at one problem, as the compile loop makes it."""

    index: int  # 0 for the first
    source: str  # the teacher's name, under which everything is stored
    version: str  # the teacher prompt's version
    client: Client  # the teacher's client (a domain may confirm a plan with more calls)
    max_tokens: int


@dataclass(frozen=True)
class Checked(Generic[F]):
    """A reply as checked: what it makes (a family) and every check run on it."""

    family: F
    report: FamilyReport

    @property
    def errors(self) -> list[CheckResult]:
        return self.report.failures()


@dataclass(frozen=True)
class ProbeConfig:
    student: str  # provider/model string, also the student's name in the store
    k: int = 8
    conditions: tuple[Condition, ...] | None = None  # None: every condition of the domain's ladder
    stage0: bool = True
    max_tokens: int = 4096
    temperature: float = 1.0
    seed: int = 0  # draws the controls' substitute content
    use_corrections: bool = False  # grade against corrected reference answers (math)
    grader: str = "strict"  # the math verifier's: paper, strict or extended (oracleladder.verify.GRADERS)
    primitive_fallback: bool = False  # C2-primitive: a KEY_MOVE description where a family has no primitive
    system_prompt: bool = True  # False: the student's system message left out of every request (the raw retest)
    keep_leaking: bool = False  # math: probe the milestones the leak rule drops too (`Family.leaking`)

    def __post_init__(self) -> None:
        grader_name(self.grader)  # an unknown grader is refused here, before a run is stored

    @classmethod
    def stored(cls, config: object, student: str) -> ProbeConfig:
        """How a stored probe run graded ``student``'s answers, from its config (`RunRecord.config`;
        None for a run without one: the defaults): its grader and ``use_corrections``. The one reader
        of a stored run's grader: a run from before graders had names says only ``"extended": true``
        (strict when false or absent)."""
        c = config if isinstance(config, dict) else {}
        return cls(student=student, use_corrections=c.get("use_corrections", False),
                   keep_leaking=bool(c.get("keep_leaking")),
                   grader="extended" if c.get("extended") else c.get("grader", "strict"))


@dataclass(frozen=True)
class Job(Generic[F]):
    """One rollout to make: the family, the target (a condition, or "m<i>" for Stage 0), the sample."""

    family: F
    target: str
    k: int
    messages: list[dict[str, str]] = field(hash=False, compare=False)

    @property
    def pid(self) -> str:
        return self.family.pid


class CompileDomain(ABC, Generic[P, F, R]):
    """What a domain brings to the compile loop: the teacher's messages and reply, its checks, its
    re-ask, and what is stored of the item and of each attempt.

    A domain whose checks or grading run in worker processes (``uses_pool``: SymPy, which can hang)
    is handed the run's `WorkerPool` as ``pool``; entered (``with domain:``) without one, it starts
    its own for the block."""

    response_model: ClassVar[type[BaseModel]]  # the teacher's reply
    check_stage: ClassVar[str] = "checking the plan"  # what `check` does, for its failures
    confirm_stage: ClassVar[str] = "confirming the plan"  # what `confirm` does, for its failures
    granularity: str | None = None  # filed with each compile attempt (a roadmap set's granularity)
    uses_pool: ClassVar[bool] = False  # its checks or grading call tasks in a WorkerPool
    pool: WorkerPool | None = None  # that pool: the run's, or its own while entered
    _own_pool: WorkerPool | None = None

    def __enter__(self) -> Self:
        if self.uses_pool and self.pool is None:
            self.pool = self._own_pool = WorkerPool()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._own_pool is not None:
            self._own_pool.close()
            self.pool = self._own_pool = None

    def worker_pool(self) -> WorkerPool:
        """The pool its checks and grading run in."""
        if self.pool is None:
            raise RuntimeError(f"{type(self).__name__} runs in a worker pool: give it one (`pool`), or enter it "
                               "(`with domain:`)")
        return self.pool

    def unusable(self, problem: P) -> CheckResult | None:
        """A failed check when no plan could ever be checked against ``problem``: skipped before the
        teacher is paid."""
        return None

    @abstractmethod
    def teacher_messages(self, problem: P) -> tuple[list[dict[str, str]], str]:
        """The first attempt's messages and the prompt's version."""

    @abstractmethod
    async def check(self, reply: R, problem: P, attempt: Attempt) -> Checked[F]:
        """Every check of a reply (an exception that is not the plan's fault, e.g. a ProviderError or
        GradingFailed, ends the attempt as an infrastructure failure)."""

    async def confirm(self, checked: Checked[F], problem: P, attempt: Attempt) -> Checked[F]:
        """Further checks of a reply that passed `check` (e.g. solving each milestone alone)."""
        return checked

    @abstractmethod
    def reask(self, checked: Checked[F]) -> str:
        """The user turn that shows the teacher what failed in its reply."""

    def stored_plan(self, reply: R, version: str) -> Any:
        """The reply as the compile attempt stores it."""
        return reply.model_dump(mode="json")

    async def keep(self, store: Store, checked: Checked[F], source: str, *, attempt: int, version: str) -> None:
        """Store what a checked attempt leaves beside the attempt itself (e.g. the accepted family);
        called before the attempt is stored, so a passing attempt never lacks what it made."""
        return None

    async def store_problem(self, store: Store, problem: P) -> None:
        """Store the item before its first attempt (a problem: `Store.put_problem`)."""
        await store.put_problem(problem)  # type: ignore[arg-type]

    async def store_attempt(self, store: Store, problem: P, source: str, attempt: int, *, plan: Any,
                            errors: list[dict[str, Any]], passed: bool) -> None:
        """Store one teacher attempt: ``plan`` from `stored_plan` (None when the reply was no plan),
        ``errors`` the failed checks (or the reason the attempt ended)."""
        pid = problem.pid  # type: ignore[attr-defined]
        await store.put_compile_attempt(pid, source, attempt, plan=plan, errors=errors, passed=passed,
                                        granularity=self.granularity)


class Domain(CompileDomain[P, F, R]):
    """What one domain (math, code, ...) brings to the compile and probe loops. Enter it
    (``with domain:``) around a run."""

    name: ClassVar[str]  # its --domain name
    conditions: tuple[Condition, ...]  # the ladder's conditions, in their default order
    optional_conditions: tuple[Condition, ...] = ()  # run only when asked for (the primitive rung)
    verifier: ClassVar[bool] = False  # answers graded by oracleladder.verify: graders, format audit, HTML report

    @classmethod
    def from_settings(cls, settings: Settings) -> Domain[Any, Any, Any]:
        return cls()

    @abstractmethod
    def read_problems(self, path: Path, on_duplicate: OnDuplicate) -> list[P]:
        """The problems of a pool (a path, or a name the domain knows)."""

    # ------------------------------------------------------------------ probe

    @abstractmethod
    async def load_families(self, store: Store, source: str) -> list[F]:
        """The families of one set (e.g. a teacher's accepted plans); an InputError saying what to run
        first when there are none."""

    def rollout_source(self, family: F, source: str) -> str:
        """The name the rollouts of ``family`` are filed under, ``source`` being the set probed."""
        return source

    @abstractmethod
    def plan_jobs(self, families: Sequence[F], config: ProbeConfig, donors: Sequence[F]) -> list[Job[F]]:
        """Every rollout of Stage 0 and the ladder's conditions (``config.conditions``, default
        ``conditions``), in a stable order; controls borrow from ``donors``."""

    @abstractmethod
    def student_prompts(self, config: ProbeConfig) -> dict[str, str]:
        """The prompt templates the jobs of ``config`` are written with, name -> version: a probe run
        records them, and a report never pools results made under two versions of one."""

    @abstractmethod
    async def grade(self, job: Job[F], response: str, config: ProbeConfig) -> Verdict:
        """The verdict on one answer (ungraded, never an exception, when grading itself failed)."""

    @abstractmethod
    def collect_results(self, families: Sequence[F], rollouts: Sequence[Rollout], *,
                        use_corrections: bool = False, keep_leaking: bool = False) -> list[FamilyResults]:
        """Per family, the K verdicts of each Stage 0 target and of each condition (graded rollouts only);
        ``keep_leaking``: of a run that kept the milestones the leak rule drops."""

    def target_gold(self, family: F, target: str, use_corrections: bool = False) -> str | None:
        """The gold a rollout of ``target`` is graded against, as text (what an audit shows a judge
        or a person); None where the domain's golds are not text (code is graded by its tests)."""
        return None

    def ungradable(self, family: F, use_corrections: bool = False) -> str | None:
        """Why no answer of ``family`` can be graded (the report lists it apart), or None."""
        return None

    # ------------------------------------------------------------------ the raw screen

    def direct_messages(self, problem: P) -> list[dict[str, str]]:
        """A raw problem asked directly, as its compiled family's C1 asks it (so a later screen of the
        compiled set reuses the calls): the raw screen's prompt (`ladder screen POOL`)."""
        raise InputError(f"the {self.name} domain cannot screen raw problems: compile them, then screen the set")

    async def grade_direct(self, problem: P, response: str, config: ProbeConfig) -> Verdict:
        """The verdict on a direct answer to a raw problem (ungraded, never an exception, when grading
        itself failed); a domain with `direct_messages` has it."""
        raise NotImplementedError
