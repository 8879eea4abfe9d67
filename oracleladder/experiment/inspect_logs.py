"""inspect_ai's logs of an exported roadmap set into the store (`ladder import-inspect`): each log a
probe run of the student ``inspect/MODEL``, its settings those the log says (the temperature and
max_tokens its model was asked at, the export's K, grader and conditions), so run selection, the report,
compare, the audits and the HTML read it as any probe run.

Every log is checked whole before anything is stored: a log of another task, a sample that is no job
of the set, or one whose prompt is not the one the set sends (an edited dataset) is one error naming
it, and nothing is imported. Each answer is stored as the call the toolkit's inspect wire makes for
that job (the same call key: a later `ladder probe --student inspect/MODEL` at those settings reads it
from the store) and graded again by the toolkit's verifier; inspect_ai's own score is kept beside it,
in the run's config. A sample that ended in an error is a failed job, never an answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_module
from ..clients import ChatRequest, ChatResult, Usage
from ..domains.math import MathDomain
from ..ladder import Job, ProbeConfig
from ..schemas import Family, Rollout
from ..store import FailedJob
from .errors import ExperimentError
from .inspect_set import METADATA, SCORER, TASK_NAME, ExportedSet
from .run import DONE, FINISHED_WITH_FAILURES

if TYPE_CHECKING:
    import inspect_ai.log as inspect_log

    from .stages import Experiment
else:  # the optional extra [inspect], loaded by the first import
    inspect_log = lazy_module("inspect_ai.log")



@dataclass(frozen=True)
class Answer:
    """One sample of a log as the store keeps it: its job, and its answer or its error."""

    job: Job[Family]
    text: str | None
    error: str | None
    result: ChatResult | None
    inspect_score: Any


@dataclass(frozen=True)
class CheckedLog:
    path: Path
    model: str  # inspect_ai's name of the model (PROVIDER/MODEL)
    config: ProbeConfig
    source: str
    families: int
    answers: list[Answer]
    eval_id: str


@dataclass(frozen=True)
class ImportedLog:
    """What one log added: its run, its student, the answers graded and the samples failed, and how
    many of the graded answers inspect_ai's score agrees with the verifier on."""

    path: Path
    run_id: str
    student: str
    answers: int
    failed: int
    agree: int


async def import_inspect(ex: Experiment, logs: Sequence[Path]) -> list[ImportedLog]:
    """Import the inspect_ai logs ``logs`` of `ladder export-inspect`'s task; each checked first."""
    checked = [await _check(ex, Path(path)) for path in logs]
    return [await _store(ex, log) for log in checked]


def _read(path: Path) -> Any:
    try:
        return inspect_log.read_eval_log(str(path))
    except ImportError:
        raise ExperimentError("import-inspect reads inspect_ai's logs with inspect_ai: "
                              "pip install 'oracleladder[inspect]'") from None
    except Exception as exc:  # a missing file, a file that is no log
        raise ExperimentError(f"{path}: not an inspect_ai log ({type(exc).__name__}: {exc})") from None


async def _check(ex: Experiment, path: Path) -> CheckedLog:
    """``path`` read and each of its samples checked against the set its task names."""
    log = _read(path)
    header = (log.eval.metadata or {}).get(METADATA)
    if log.eval.task != TASK_NAME or header is None:
        raise ExperimentError(f"{path}: a log of the task '{log.eval.task}', not of one `ladder export-inspect` "
                              "wrote: nothing imported")
    if not log.samples:
        raise ExperimentError(f"{path}: the log holds no samples (run without --no-log-samples): nothing imported")
    domain = MathDomain()
    source = str(header.get("source"))
    try:
        exported = ExportedSet.of_header(header, await ex.domain_families(domain, source))
    except (ValueError, TypeError) as exc:  # settings no export wrote
        raise ExperimentError(f"{path}: its task's OracleLadder settings cannot be read ({exc}): nothing imported") from None
    asked = log.plan.config.merge(log.eval.model_generate_config)  # the task's, then the eval's own options
    if asked.temperature is None or asked.max_tokens is None:
        raise ExperimentError(f"{path}: the log does not say the temperature and max_tokens its model was asked at")
    config = replace(exported.config, student=f"inspect/{log.eval.model}", temperature=asked.temperature,
                     max_tokens=asked.max_tokens)
    jobs = exported.jobs()
    answers = []
    for sample in log.samples:
        sid = str(sample.id)
        job = jobs.get(sid)
        if job is None:
            refused = f"not a job of the set '{source}'"
        elif sample.epoch != 1:
            refused = f"epoch {sample.epoch}: the set's K samples are its jobs, run at one epoch"
        elif _prompt(sample.input) != [(m["role"], m["content"]) for m in job.messages]:
            refused = f"its prompt is not the one the set '{source}' sends"
        else:
            answers.append(_answer(job, sample))
            continue
        raise ExperimentError(f"{path}: sample {sid}: {refused}: nothing imported from this log")
    return CheckedLog(path, log.eval.model, config, source, len(exported.families), answers, log.eval.eval_id)


def _prompt(given: str | list[Any]) -> list[tuple[str, str]]:
    """A sample's input as (role, text) pairs."""
    return [("user", given)] if isinstance(given, str) else [(m.role, m.text) for m in given]


def _answer(job: Job[Family], sample: Any) -> Answer:
    score = (sample.scores or {}).get(SCORER)
    value = None if score is None else score.value
    if sample.error is not None:
        return Answer(job, None, f"inspect_ai: {' '.join(sample.error.message.split())[:400]}", None, value)
    output, usage = sample.output, sample.output.usage
    result = ChatResult(text=output.completion, finish_reason=output.stop_reason, latency_s=output.time or 0.0,
                        tokens_in=usage.input_tokens if usage else 0, tokens_out=usage.output_tokens if usage else 0,
                        metered=usage is not None)
    return Answer(job, output.completion, None, result, value)


def request_of(job: Job[Family], model: str, config: ProbeConfig) -> ChatRequest:
    """The call the toolkit's inspect wire makes for ``job`` (`probe.runner.job_request` through a
    client of ``inspect/MODEL``): its key is the stored answer's."""
    return ChatRequest(provider="inspect", model=model, messages=job.messages, k=job.k,
                       params={"temperature": config.temperature, "max_tokens": config.max_tokens})


async def _store(ex: Experiment, log: CheckedLog) -> ImportedLog:
    domain = MathDomain(pool=ex.pool)
    config, student = log.config, log.config.student
    scores = {f"{a.job.pid}|{a.job.target}|{a.job.k}": a.inspect_score for a in log.answers}
    run_id = await ex.store.start_run("probe", {**config.__dict__, "source": log.source, "families": log.families,
                                                "prompts": domain.student_prompts(config),
                                                "inspect": {"log": str(log.path), "eval_id": log.eval_id,
                                                            "scores": scores}})
    answered = [a for a in log.answers if a.result is not None]
    verdicts = await asyncio.gather(*(domain.grade(a.job, a.text or "", config) for a in answered))
    agree = 0
    for a, verdict in zip(answered, verdicts):
        request = request_of(a.job, log.model, config)
        await ex.store.put_call(request, a.result, run_id=run_id, wait=False)
        await ex.store.put_rollout(Rollout(run_id=run_id, student=student, pid=a.job.pid, target=a.job.target,
                                           k=a.job.k, call_key=request.key(), response=a.text or "", verdict=verdict,
                                           source=domain.rollout_source(a.job.family, log.source)), wait=False)
        agree += (a.inspect_score == "C") == verdict.accepted
    failed = [a for a in log.answers if a.result is None]
    for a in failed:
        await ex.store.put_failed_job(FailedJob(run_id=run_id, student=student, source=log.source, pid=a.job.pid,
                                                target=a.job.target, k=a.job.k,
                                                call_key=request_of(a.job, log.model, config).key(),
                                                reason=a.error or "no answer"), wait=False)
    await ex.store.flush()
    usage = Usage(requests=len(answered), calls=len(log.answers), successes=len(answered), failures=len(failed),
                  tokens_in=sum(a.result.tokens_in for a in answered if a.result),
                  tokens_out=sum(a.result.tokens_out for a in answered if a.result), cost_usd=None,
                  prices="none: answered in inspect_ai")
    await ex.store.finish_run(run_id, FINISHED_WITH_FAILURES if failed else DONE, usage)
    return ImportedLog(log.path, run_id, student, len(answered), len(failed), agree)
