"""The stages' options, each declared once with its default and help: `ProbeConfig`, `CompileConfig`,
`ScreenConfig`, `JudgeConfig`, `ReviewConfig`, `PrimConfig`, `PrimReportConfig`, `PrimAuditConfig`,
`ReportConfig`; and what a comparison of two roadmap sets reads, `CompareInput`. The Python API takes one
(``ex.probe(student, ProbeConfig(k=4))``) or the same fields as keywords (``ex.probe(student, k=4)``);
the CLI makes each command's options from these fields (`Flag`: how the CLI spells one), and
``--config FILE`` (TOML) gives them from a file. Fields several stages share (the token budget, the
sampling, the roadmap set, the shard) are declared once, in the mixins below."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..construction.screen import RULES
from ..ladder import WHOLE, Shard
from ..prim.dimensions import DIMENSIONS
from ..prim.scoring import TAU
from ..report.palette import number_word
from ..schemas import LADDER
from ..verify import grader_name
from .errors import Arg, ExperimentError
from .selection import Choice


@dataclass(frozen=True)
class Flag:
    """How the CLI spells a config field: its option (``"--max-tokens"``, ``"--stage0/--no-stage0"``),
    its metavar, the type it reads where the field's own is not one a command line holds (``--shard
    I/N``: a string, which the field's validator reads), and ``off``: a switch that turns the field off
    (``--no-system-prompt``)."""

    decls: str
    metavar: str | None = None
    cli_type: Any = None
    off: bool = False

    @property
    def name(self) -> str:
        """The option as an error names it: its first spelling."""
        return self.decls.split("/")[0]


def flag_of(kind: type[BaseModel], name: str) -> Flag:
    return next(m for m in kind.model_fields[name].metadata if isinstance(m, Flag))


def _words(value: object) -> object:
    """A list option given as a comma list, or repeated with commas in it (``--conditions C1,C2``)."""
    if isinstance(value, str):
        value = [value]
    if isinstance(value, (list, tuple)):
        return tuple(w.strip() for v in value for w in str(v).split(",") if w.strip())
    return value


def one_of(known: Sequence[str], what: str) -> Callable[[str], str]:
    """A field's check that its value is one of ``known``."""
    def check(value: str) -> str:
        if value not in known:
            raise ValueError(f"unknown {what} '{value}'; known: {', '.join(known)}")
        return value
    return check


class StageConfig(BaseModel):
    """The options of one stage; an unknown one, or a value of the wrong kind, is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


# options several stages share at defaults of their own: each stage's field is ``max_tokens: MaxTokens = N``
MaxTokens = Annotated[int, Flag("--max-tokens"), Field(ge=1, description=(
    "Token budget of each answer (a reasoning model's reasoning counts in it)."))]
K = Annotated[int, Flag("--k"), Field(ge=1, description="Attempts per milestone and per condition.")]
Seed = Annotated[int, Flag("--seed"), Field(description="Seed of the sample and of the sheet's order.")]  # an audit's
Tau = Annotated[float, Flag("--tau"), Field(ge=0.0, le=1.0, description=(  # PRIM's
    "A primitive is correct at Score >= tau."))]


class Budgeted(StageConfig):
    max_tokens: MaxTokens = 4096


class Sampling(Budgeted):
    k: K = 8
    temperature: Annotated[float, Flag("--temperature"), Field(ge=0.0, description=(
        "Sampling temperature (reasoning models take only their default; a later probe at the same settings "
        "reuses what is stored)."))] = 1.0


class Sampled(Sampling):
    grader: Annotated[str, Flag("--grader"), Field(description=(
        "paper (the release's default cascade, for tables set beside the paper's), strict (default) or "
        "extended."))] = "strict"

    @field_validator("grader")
    @classmethod
    def _known_grader(cls, value: str) -> str:
        return grader_name(value)


class InDomain(StageConfig):
    domain: Annotated[str, Flag("--domain"), Field(description=(
        "math, code (families compiled with --domain code), or another registered domain (docs/domains.md); "
        "screen: with POOL only."))] = "math"


class Thresholded(StageConfig):
    threshold: Annotated[int, Flag("--threshold"), Field(ge=1, description=(
        "tau: correct attempts of K that count as solved."))] = 1


class Limited(StageConfig):
    limit: Annotated[int | None, Flag("--limit"), Field(ge=1, description=(
        "Only the first N families (the controls still draw from the whole set)."))] = None


class Corrected(StageConfig):
    use_corrections: Annotated[bool, Flag("--use-corrections"), Field(description=(
        "Grade against corrected reference answers."))] = False


class OnSet(StageConfig):
    source: Annotated[str, Flag("--source"), Field(description=(
        "Which roadmap set: 'release', a teacher model string, or TEACHER@coarse|fine."))] = "release"


class Sharded(StageConfig):
    shard: Annotated[Shard, Flag("--shard", metavar="I/N", cli_type=str | None), Field(description=(
        "Only shard I of N (from 1): the families (compile: the problems) split by a stable hash of their pid, "
        "the controls still drawn from the whole set; N runs into N stores, then `ladder merge`, give the "
        "whole run (docs/cluster.md)."))] = WHOLE

    @field_validator("shard", mode="before")
    @classmethod
    def _parsed(cls, value: object) -> object:
        return WHOLE if value is None else Shard.parse(value) if isinstance(value, str) else value


class Planned(StageConfig):
    dry_run: Annotated[bool, Flag("--dry-run"), Field(description=(
        "Say how many calls the run would make after the cache, and their tokens and cost (online and "
        "batch); make none."))] = False


class Columns(StageConfig):
    fields: Annotated[tuple[str, ...], Flag("--field", metavar="NAME=COLUMN", cli_type=list[str] | None), Field(
        description="The pool's column for one of pid, problem, answer, solution, e.g. problem=question; "
                    "repeat the option.")] = ()

    @field_validator("fields", mode="before")
    @classmethod
    def _field_list(cls, value: object) -> object:
        return () if value is None else value


class OnDuplicate(str, Enum):
    error = "error"
    keep_first = "keep-first"
    keep_last = "keep-last"


class Pooled(Columns):
    """How a pool file of problems is read."""

    null_values: Annotated[tuple[str, ...], Flag("--null-values", metavar="TEXT,...", cli_type=str | None), Field(
        description="Cell texts of the pool that mean a missing value, e.g. NA,null (default: none; every cell "
                    "is read as written).")] = ()
    encoding: Annotated[str | None, Flag("--encoding"), Field(description=(
        "The encoding of a CSV pool that is not UTF-8, e.g. latin-1."))] = None
    on_duplicate: Annotated[OnDuplicate, Flag("--on-duplicate"), Field(description=(
        "A pid repeated in the input file: an error naming both lines, or keep its first or last "
        "record."))] = OnDuplicate.error

    @field_validator("null_values", mode="before")
    @classmethod
    def _null_list(cls, value: object) -> object:
        # cell texts as written: a space in one is part of it
        return () if value is None else tuple(v for v in value.split(",") if v) if isinstance(value, str) else value


def pid_list(value: object) -> object:
    """``--pids FILE|LIST``: the pids of a file (one a line, or comma-separated; ``#`` starts a comment)
    or of a comma list (or a list of pids)."""
    if not isinstance(value, str):
        return value
    path = Path(value)
    text = value
    if path.is_file():
        text = "\n".join(line.split("#")[0] for line in path.read_text(encoding="utf-8").splitlines())
    pids = tuple(p for p in text.replace(",", " ").split() if p)
    if not pids:
        raise ValueError(f"'{value}' names no pid")
    return pids


class ProbeConfig(InDomain, Planned, Corrected, Limited, Sharded, OnSet, Sampled):
    """A probe of a student on one roadmap set (`Experiment.probe`)."""

    # the help names the conditions declared (`schemas.LADDER`) when this module is loaded
    conditions: Annotated[tuple[str, ...] | None, Flag("--conditions", cli_type=list[str] | None), Field(description=(
        f"A condition to run (repeat the option, or comma-separate): {', '.join(s.short for s in LADDER)} (or the "
        f"released names {', '.join(s.name for s in LADDER)}); default all {number_word(len(LADDER.default))} "
        "(code: C1, C2, C3)."))] = None
    stage0: Annotated[bool, Flag("--stage0/--no-stage0"), Field(description="Run the milestone test (Stage 0).")] = True
    seed: Annotated[int, Flag("--seed"), Field(description="Seed of the controls' substitute content.")] = 0
    primitive: Annotated[bool, Flag("--primitive"), Field(description=(
        "Also run the primitive rung, C2-primitive and its control C2-primitive-random, on the families that have "
        "a primitive (docs/primitive.md); the others are skipped and counted."))] = False
    include_unusable: Annotated[bool, Flag("--include-unusable"), Field(description=(
        "Also ask the parent jobs of the families whose reference answer is unusable (`ladder check`; the report "
        "leaves them out), which are skipped by default."))] = False
    primitive_fallback: Annotated[bool, Flag("--primitive-fallback"), Field(description=(
        "For the primitive rung, a family without a primitive uses its first KEY_MOVE milestone's description "
        "(marked as the fallback)."))] = False
    pids: Annotated[tuple[str, ...] | None, Flag("--pids", metavar="FILE|LIST", cli_type=str | None), Field(
        description="Only these families: a comma list of pids, or a file of pids (one a line, or "
                    "comma-separated).")] = None
    system_prompt: Annotated[bool, Flag("--no-system-prompt", off=True), Field(description=(
        "Leave the student's system message out of every request (the paper's raw-output retest, Table 43): "
        "other requests, other calls, and a setting of the run that reports never pool with the default."))] = True
    keep_leaking: Annotated[bool, Flag("--keep-leaking"), Field(description=(
        "Keep the milestones whose gold leaks the reference answer in Stage 0, C2 and C3 (the leak rule drops "
        "them by default): to replicate a run that kept them."))] = False

    @field_validator("conditions", mode="before")
    @classmethod
    def _condition_list(cls, value: object) -> object:
        return _words(value) or None  # none named: the domain's

    @field_validator("pids", mode="before")
    @classmethod
    def _pid_list(cls, value: object) -> object:
        return pid_list(value)


GRANULARITIES = ("coarse", "default", "fine")


class CompileConfig(Planned, Sharded, Pooled, InDomain, Budgeted):
    """A compile of a pool of problems by a teacher (`Experiment.compile`); ``max_attempts`` and
    ``max_tokens`` also the primitives' and INTEGRATE steps' (`compile_primitives`, `compile_integrate`)."""

    granularity: Annotated[str, Flag("--granularity"), AfterValidator(one_of(GRANULARITIES, "granularity")), Field(description=(
        "coarse (3 milestones), default, or fine (8-10)."))] = "default"
    max_attempts: Annotated[int, Flag("--max-attempts"), Field(ge=1, description="Teacher attempts per problem.")] = 3
    independent_solve: Annotated[bool, Flag("--independent-solve/--no-independent-solve"), Field(description=(
        "Check each milestone by a separate solve of its prompt alone."))] = True
    teacher_prompt: Annotated[str, Flag("--teacher-prompt"), Field(description=(
        "toolkit (default): the toolkit's teacher prompt, Appendix U's rules plus ANSWER FORMAT, NO-LEAK and "
        "PRIMITIVE sections (and the granularity's); paper: Appendix U's prompt as published, nothing added (math, "
        "default granularity; the paper publishes no code teacher prompt). Its name and hash go in each family's "
        "provenance, the report header and `compare`."))] = "toolkit"
    screened: Annotated[str | None, Flag("--set"), Field(description=(
        "Compile only the problems of PROBLEMS that survived this set's raw screen (`ladder screen PROBLEMS --rule "
        "direct-only --set NAME`); a problem it dropped or left unscreened is not sent to the teacher."))] = None


class ScreenConfig(Sharded, Pooled, InDomain, OnSet, Sampled):
    """An anchor screen of a roadmap set (`Experiment.screen`), or of a raw pool (`screen_pool`)."""

    set_name: Annotated[str | None, Flag("--set"), Field(description=(
        "Name of the diagnostic set the verdicts are filed under (default: the anchor)."))] = None
    rule: Annotated[str, Flag("--rule"), AfterValidator(one_of(RULES, "rule")), Field(description=(
        "default (fails all K direct attempts, solves every tested milestone in one of K) or direct-only "
        "(Appendix N: the milestone test only measured; the only rule for a raw POOL, which has no "
        "roadmaps)."))] = "default"


class BenchmarkConfig(Columns, Sampled):
    """A plain benchmark probe (`Experiment.benchmark`)."""

    name: Annotated[str | None, Flag("--name"), Field(description=(
        "The benchmark's name (default: the file's stem); `ladder report --benchmark NAME` reads it."))] = None


class ReanchorConfig(OnSet, Sampling):
    """The rollouts `ladder reanchor --anchors` reads (and probes, with --base-url)."""

    stage0_max_tokens: Annotated[int | None, Flag("--stage0-max-tokens"), Field(ge=1, description=(
        "The budget of the Stage 0 rollouts read (and probed), C1-C3 staying at --max-tokens (Tables 5-6: the "
        "milestone test at the 4K screening budget); default --max-tokens."))] = None


class JudgeConfig(OnSet, Budgeted):
    """The judge audit of the grader (`Experiment.judge_audit`)."""

    n: Annotated[int, Flag("--n"), Field(ge=1, description=(
        "Graded rollouts to sample, stratified by the verifier's verdict (accepted, or its rejection "
        "reason)."))] = 40
    seed: Seed = 0


class ReviewConfig(Thresholded, OnSet, Budgeted):
    """The automated rubric review (`Experiment.review_audit`)."""


class PrimConfig(Planned, Limited, Sharded, Corrected, OnSet, Sampled):
    """A PRIM probe of a student's four dimensions (`Experiment.prim_probe`, docs/prim.md)."""

    k: K = 1
    # the help names the dimensions declared (`prim.dimensions.DIMENSIONS`) when this module is loaded
    dimensions: Annotated[tuple[str, ...] | None, Flag("--dimensions", cli_type=list[str] | None), Field(description=(
        f"The dimensions to probe (a comma list, or repeat the option): {', '.join(DIMENSIONS.names)}; "
        f"default all {number_word(len(DIMENSIONS.names))}."))] = None
    sources: Annotated[tuple[str, ...], Flag("--primitive-source", cli_type=list[str] | None), Field(description=(
        "Execution's primitives (a comma list, or repeat the option): gold, teacher, teacher-problem-only, self "
        "(the student's own Discovery output), or plan (the teacher's plan); default gold."))] = ("gold",)
    teacher: Annotated[str | None, Flag("--teacher"), Field(description=(
        "Whose teacher primitives Execution shows, when several teachers wrote them (default: the last "
        "stored)."))] = None

    @field_validator("dimensions", mode="before")
    @classmethod
    def _dimension_list(cls, value: object) -> object:
        return _words(value) or None  # none named: every declared one

    @field_validator("sources", mode="before")
    @classmethod
    def _source_list(cls, value: object) -> object:
        return _words(value) or cls.model_fields["sources"].default


class ReportConfig(InDomain, Corrected, Thresholded, OnSet):
    """A report of students' results (`Experiment.report`); which results: `Choice`."""

    base: Annotated[str | None, Flag("--base"), Field(description=(
        "The student (a report column) the change tables (Tables 18, 38) read the others against; default the "
        "first."))] = None
    order: Annotated[tuple[str, ...] | None, Flag("--order", cli_type=list[str] | None), Field(description=(
        "The report's columns as checkpoints left to right in Figure 7 (repeat, each once); default as "
        "given."))] = None
    benchmark: Annotated[str | None, Flag("--benchmark"), Field(description=(
        "A plain benchmark probe's name (`ladder benchmark --name`): its pass@1 at each column's settings is "
        "Table 1's MATH score."))] = None
    against: Annotated[str | None, Flag("--against"), Field(description=(
        "A second roadmap set of the same problems: Table 37's ratio of the two sets' golds in the same unaided "
        "attempts."))] = None


class PrimReportConfig(OnSet):
    """A PRIM report of a student (`Experiment.prim_report`; `prim_across` reads its tau and threshold)."""

    tau: Tau = TAU
    threshold: Annotated[int, Flag("--threshold"), Field(ge=1, description=(
        "A problem passes a dimension with at least this many of its K samples right."))] = 1
    rescue_source: Annotated[str, Flag("--rescue-source"), Field(description=(
        "Table 10's primitive source."))] = "teacher-problem-only"
    after: Annotated[str | None, Flag("--after"), Field(description=(
        "Another checkpoint (probed with `ladder prim probe --dimensions generation`): which of the student's "
        "Generation failures it repairs, by quadrant, and what it loses (Tables 3 / 11)."))] = None
    answer_judge: Annotated[str | None, Flag("--answer-judge"), Field(description=(
        "Also count an answer right where this answer judge (`ladder prim answers`) reads it correct; the report "
        "says so."))] = None


class PrimAuditConfig(OnSet):
    """The sample of a judge's PRIM scores on its audit sheet (`Experiment.prim_audit`)."""

    n: Annotated[int, Flag("--n"), Field(ge=2, description=(
        "Scores to sample, half judged correct and half incorrect."))] = 40
    routes: Annotated[bool, Flag("--routes"), Field(description=(
        "The alternative-route audit: sample only primitives the judge scored incorrect, for a person to label "
        "alternative (a different but valid route the single gold misses) or none."))] = False
    seed: Seed = 0
    tau: Tau = TAU


@dataclass(frozen=True, kw_only=True)
class CompareInput:
    """What a comparison of two roadmap sets reads (`Experiment.compare`, `write_compare`), each part by its
    name: the student's results on sets ``a`` and ``b`` at one setting (``choice``), graded against the
    corrected reference answers with ``use_corrections``; two sets graded by different graders are refused
    unless ``allow_mixed_graders``."""

    a: str
    b: str
    student: str
    use_corrections: bool = False
    allow_mixed_graders: bool = False
    choice: Choice = Choice()


C = TypeVar("C", bound=StageConfig)


def configured(kind: type[C], config: C | None, options: Mapping[str, object]) -> C:
    """A stage's config: ``config``, with the keywords of a Python API call over it (either may be
    left out); a bad one is an ExperimentError naming the argument as each surface spells it."""
    try:
        return kind(**{**(dict(config) if config is not None else {}), **options})
    except ValidationError as exc:
        name, value, why = _first_error(exc)
        arg = Arg(name, value, flag=flag_of(kind, name).name if name in kind.model_fields else None)
        raise ExperimentError(arg, f": {why}") from None


def _first_error(exc: ValidationError) -> tuple[str, object, str]:
    """A config's first refused field: its name, the value given, and why, in one line."""
    error = exc.errors()[0]
    name = str(error["loc"][0]) if error["loc"] else ""
    why = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        why = "no such option"
    return name, error.get("input"), why

