"""The Python API: one experiment's store, and what the `ladder` commands do with it.

    async with Experiment("ladder.sqlite") as ex:
        await ex.import_families("families.jsonl")
        probed = await ex.probe(Endpoint("openai/gpt-5.4-mini"), k=8)
        report = await ex.report(["openai/gpt-5.4-mini"])
    print(probed.usage.requests, "requests")

`SyncExperiment` offers the same methods as plain calls (a notebook, a script). The CLI is a thin
layer over this package: it parses options, calls an Experiment, prints.

- `endpoint`: `Endpoint` (where and how a model is called, the defaults of its options) and its client;
- `run`: a run's lifecycle in the store, around the client of its endpoint;
- `results`: the typed result of each stage;
- `reader`: `Reader`, the read side (results, report, compare, funnel, gap counts), no client; `report`:
  the `Report` it returns (its tables as dicts, DataFrames, a notebook view);
- `selection`: which of a student's results a reader reads (`Choice`; settings never pooled);
- `panels`: per-family results out and in, in the release's panel records;
- `release`: the release's audit, repair and comparator files read, Tables 17 and 39-41 from them;
- `replication`: several roadmap sets side by side, each for its own student and tau (Table 2);
- `configs`: each stage's options (`ProbeConfig`, `CompileConfig`, ...), declared once with their defaults;
- `stages`: `Experiment`, a Reader that also runs the stages that write (`core`, and a module per stage:
  `compiling`, `probing`, `screening`, `audits`, `prim`);
- `files`: families in released-format files (`load_families`, `check`);
- `sync`: `SyncExperiment`.
"""

from __future__ import annotations

from ..ladder import Shard
from .configs import GRANULARITIES
from .endpoint import CONCURRENCY, JUDGE_CONCURRENCY, START_CONCURRENCY, TEACHER_CONCURRENCY, Endpoint, request_body
from .errors import EndpointError, ExperimentError
from .files import CheckResult, check, load_families
from .reader import Reader
from .report import Report
from .results import (
                      BenchmarkResult,
                      CompileEstimate,
                      CompileResult,
                      Estimate,
                      GoldImportResult,
                      ImportResult,
                      IntegrateResult,
                      JobFailure,
                      JudgeAuditResult,
                      PrimAnswersResult,
                      PrimCompileResult,
                      PrimitivesResult,
                      PrimProbeResult,
                      PrimScoreResult,
                      ProbeEstimate,
                      ProbeResult,
                      RegradeResult,
                      Result,
                      ScreenResult,
)
from .run import BUDGET_STOPPED, FINISHED_WITH_FAILURES, Progress
from .selection import Choice
from .stages import Experiment
from .sync import SyncExperiment

__all__ = [
    "BUDGET_STOPPED", "BenchmarkResult", "CONCURRENCY", "CheckResult", "Choice", "CompileEstimate", "CompileResult", "Endpoint", "EndpointError",
    "Estimate", "Experiment", "ExperimentError", "GoldImportResult", "ImportResult", "IntegrateResult", "FINISHED_WITH_FAILURES", "GRANULARITIES", "JUDGE_CONCURRENCY",
    "JobFailure", "JudgeAuditResult", "PrimAnswersResult", "PrimCompileResult", "PrimProbeResult", "PrimScoreResult",
    "PrimitivesResult", "ProbeEstimate", "ProbeResult", "Progress", "Reader", "RegradeResult", "Report", "Result",
    "START_CONCURRENCY", "ScreenResult", "Shard", "SyncExperiment", "TEACHER_CONCURRENCY", "check",
    "load_families", "request_body",
]
