"""PRIM's benchmark side (its Table 4) and the answer judge it shares with `ladder prim answers`: a plain
benchmark's free-form answers (HLE-Math style: a word, an expression no symbolic grader decides) read by
the LLM exact-match judge (`prim.judge.judge_answer`), its verdicts stored apart under the rollout they
judged; and a table of a student's benchmarks side by side, each at its own pass@k, with their average
(PRIM averages Generation over its four benchmarks, at pass@4 on HMMT25 and Omni-MATH)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..prim.judge import ANSWER_PROMPTS, judge_answer, prompt_version
from ..prim.probe import problem_text
from ..report.markdown import table
from ..runtime import gather_or_cancel
from ..schemas import Family, Rollout
from ..store import AnswerVerdict
from .benchmark_scores import BENCHMARK, benchmark_scores
from .core import ExperimentCore
from .endpoint import JUDGE_CONCURRENCY, Endpoint, as_endpoint
from .errors import ExperimentError
from .results import PrimAnswersResult, Result
from .run import calling
from .selection import Choice, Picked, pick


class BenchmarkRow(Result):
    """One benchmark of the table: its K, the problems with K graded answers, pass@1 and the table's
    score (pass@``at``), each counting an answer right where the grader accepts it or, with an answer
    judge, the judge reads it correct (``judged``: the answers right by the judge alone)."""

    name: str
    k: int
    complete: int
    pass_at_1: float | None
    at: int
    score: float | None
    judged: int


class BenchmarkTable(Result):
    student: str
    answer_judge: str | None
    rows: list[BenchmarkRow]
    average: float | None  # the mean of the rows' scores (None where one has none)

    def markdown(self) -> list[str]:
        def pct(x: float | None) -> str:
            return "—" if x is None else f"{100 * x:.2f}"
        judged = f", an answer also right where {self.answer_judge} reads it correct" if self.answer_judge else ""
        head = ["Benchmark", "K", "Problems", "pass@1", "Score", "Right by the judge alone"]
        rows = [[r.name, r.k, r.complete, pct(r.pass_at_1), f"{pct(r.score)} (pass@{r.at})", r.judged]
                for r in self.rows]
        return [f"## Benchmarks: {self.student} (PRIM Table 4{judged})", "",
                *table(head, [*rows, ["Avg.", "", "", "", pct(self.average), ""]]), ""]


@dataclass(frozen=True)
class Rejected:
    """What an answer judge is asked about: a student's rejected ``rollouts`` on ``families``, read against
    the corrected reference answers where the run graded against them (``corrected``)."""

    student: str
    rollouts: Sequence[Rollout]
    families: Mapping[str, Family]
    corrected: bool


class AnswerJudging(ExperimentCore):
    """`Experiment`'s answer judge over a student's rejected answers (through `PrimStages`)."""

    async def _judge_answers(self, judge: str | Endpoint, kind: str, meta: dict, rejected: Rejected,
                             max_tokens: int) -> PrimAnswersResult:
        """The answer judge on each rejected answer (the question, the end of the response, the reference
        answer, corrected where the run graded against corrections), each verdict stored under its rollout."""
        endpoint, student, families = as_endpoint(judge), rejected.student, rejected.families
        meta = {"judge": endpoint.model, "student": student, **meta, "answers": len(rejected.rollouts),
                "prompts": prompt_version(ANSWER_PROMPTS), "max_tokens": max_tokens}
        async with calling(self.store, endpoint, kind, meta, concurrency=JUDGE_CONCURRENCY,
                           notify=self._notify, cluster=self.cluster) as (client, run):
            async def one(r: Rollout) -> AnswerVerdict:
                family = families[r.pid]
                asked = await judge_answer(client, problem_text(family), r.response,
                                           family.reference_answer(rejected.corrected), max_tokens)
                verdict = ("missing" if asked.reply is None else
                           "correct" if asked.reply.correct == "yes" else "incorrect")
                extracted = None if asked.reply is None else str(asked.reply.extracted_final_answer)
                return AnswerVerdict(student=student, source=r.source, pid=r.pid, target=r.target, k=r.k,
                                     judge=endpoint.model, verdict=verdict, extracted=extracted, reason=asked.why,
                                     call_keys=asked.keys, run_id=run.id, rollout_call=r.call_key)

            verdicts = await gather_or_cancel(*(one(r) for r in rejected.rollouts))
            for v in verdicts:
                await self.store.put_answer_verdict(v, wait=False)
            await self.store.flush()
            run.incomplete = any(v.verdict == "missing" for v in verdicts)
        return PrimAnswersResult(run_id=run.id, judged=len(verdicts),
                                 correct=sum(v.verdict == "correct" for v in verdicts),
                                 missing=sum(v.verdict == "missing" for v in verdicts), usage=client.usage,
                                 budget_stop=client.budget_stop)

    async def _benchmark_group(self, student: str, name: str, choice: Choice) -> Picked:
        """The student's plain benchmark probe ``name`` at one setting (by its run where there are several)."""
        found = await self.result_groups(student, BENCHMARK + name)
        if not found:
            raise ExperimentError(f"{self.store.path} holds no benchmark '{name}' of student '{student}': run "
                                  f"`ladder benchmark --name {name}` first")
        return pick(student, BENCHMARK + name, found, choice, by_run_only=True)[0]

    async def benchmark_answers(self, judge: str | Endpoint, student: str, name: str, *, max_tokens: int = 2048,
                                choice: Choice = Choice()) -> PrimAnswersResult:
        """The answer judge on each answer of the student's plain benchmark probe ``name`` (`benchmark`, at one
        setting: ``choice`` by its run) that the grader rejected; `benchmark_table` counts its verdicts."""
        group = await self._benchmark_group(student, name, choice)
        families = {f.pid: f for f in await self.roadmap_set(BENCHMARK + name)}
        todo = [r for r in group.rollouts if r.verdict.graded and not r.verdict.accepted and r.pid in families]
        return await self._judge_answers(judge, "benchmark-answers", {"benchmark": name,
                                         "student_settings": group.describe()},
                                         Rejected(student, todo, families, bool(group.settings.use_corrections)),
                                         max_tokens)

    async def benchmark_table(self, student: str, names: Sequence[str], *, answer_judge: str | None = None,
                              at: Mapping[str, int] | None = None, choice: Choice = Choice()) -> BenchmarkTable:
        """The student's plain benchmarks side by side (PRIM's Table 4): each one's pass@1 and its score at
        pass@``at[name]`` (default 1, never past its K), an answer right where the grader accepts it or the
        ``answer_judge`` (`benchmark_answers`) reads it correct, and the mean of the scores."""
        rows = []
        for name in names:
            group = await self._benchmark_group(student, name, choice)
            made = {r.call_key for r in group.rollouts}
            right = set() if answer_judge is None else {
                v.rollout_call for v in await self.store.answer_verdicts(student=student, judge=answer_judge,
                                                                         source=BENCHMARK + name)
                if v.verdict == "correct" and v.rollout_call in made}
            k, want = group.k or 0, (at or {}).get(name, 1)
            if want > k:
                raise ExperimentError(f"pass@{want} of benchmark '{name}' needs {want} answers per problem; it has {k}")
            complete, pass1, _ = benchmark_scores(group.rollouts, k, right)
            rows.append(BenchmarkRow(name=name, k=k, complete=complete, pass_at_1=pass1, at=want,
                                     score=pass1 if want == 1 else benchmark_scores(group.rollouts, want, right)[2],
                                     judged=sum(r.call_key in right for r in group.rollouts if not r.verdict.accepted)))
        scores = [r.score for r in rows]
        return BenchmarkTable(student=student, answer_judge=answer_judge, rows=rows,
                              average=None if None in scores or not scores else sum(scores) / len(scores))  # type: ignore[arg-type]
