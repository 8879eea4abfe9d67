"""The format audit (paper Appendix L, Table 24): every rollout in one bucket, per student and
condition, so a reader sees whether a student failed or its answer was cut off or never boxed.

Buckets, from the stored verdict and the stored finish reason of the rollout's call:
``no_boxed`` (no box), ``no_boxed_trunc`` (no box, and the answer hit ``--max-tokens``),
``unparsable`` (a box the verifier could not read: a parse error, or its time limit),
``parsed_wrong`` and ``parsed_correct``. Ungraded rollouts and failed jobs are no verdict on the
student and are counted apart, as the report does. The audit is one of the report's tables
(`report.tables.FormatAudit`, in report.json; `report.markdown` renders it in report.md and for
`ladder audit format`); a table's answers cut off, and why those it could not read were
(`report.tables.Truncation`), are the report's too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from ..clients.base import TRUNCATED
from ..clients.local import GRAMMAR_FIELD
from ..report.tables import BUCKETS, STAGE0, FormatAudit, FormatRow
from ..report.tables.truncation import REFUSALS, WARN_SHARE
from ..schemas.conditions import LADDER
from ..schemas.models import Rollout
from ..schemas.types import GradeStatus
from ..store import FailedJob, Store


async def finish_reasons(store: Store, rollouts: Iterable[Rollout]) -> dict[str, str | None]:
    """The stored finish reason of each rollout's call, by call key (None: the call is not stored)."""
    out = {}
    for r in rollouts:
        result = await store.get_call(r.call_key)
        out[r.call_key] = result.finish_reason if result else None
    return out


def bucket(rollout: Rollout, truncated: bool) -> str | None:
    """The rollout's bucket; None when its grading failed (ungraded: no verdict to bucket)."""
    v = rollout.verdict
    if v.status is GradeStatus.UNGRADED:
        return None
    if v.reason == "no boxed":
        return "no_boxed_trunc" if truncated else "no_boxed"
    if v.status is GradeStatus.LIMIT or v.reason.startswith("parse error") or v.reason == "timeout":
        return "unparsable"
    return "parsed_correct" if v.accepted else "parsed_wrong"


def _row(target: str) -> str:
    return STAGE0 if target.startswith("m") else target


def format_table(rollouts: Iterable[Rollout], finish: dict[str, str | None],
                 failed: Iterable[FailedJob] = ()) -> dict[str, FormatRow]:
    """A row per condition (Stage 0 milestones together) that has rollouts or failed jobs. ``finish``
    maps a call key to its stored finish reason."""
    rows: dict[str, Counter[str]] = {}
    for r in rollouts:
        c = rows.setdefault(_row(r.target), Counter())
        cut = finish.get(r.call_key) in TRUNCATED
        b = bucket(r, cut)
        c[b or "ungraded"] += 1
        c["truncated"] += cut and b is not None
        c["refused"] += b == "no_boxed" and finish.get(r.call_key) in REFUSALS
    for job in failed:
        rows.setdefault(_row(job.target), Counter())["failed"] += 1
    out = {}
    for name in (*LADDER.every, STAGE0):  # the primitive rung where it was run
        if name in rows:
            c = rows[name]
            out[name] = FormatRow(n=sum(c[b] for b in BUCKETS), **{b: c[b] for b in BUCKETS},
                                  truncated=c["truncated"], ungraded=c["ungraded"], failed=c["failed"],
                                  refused=c["refused"])
    return out


def cut_off(table: dict[str, FormatRow], share: float = WARN_SHARE) -> list[str]:
    """The conditions where more than ``share`` of the graded rollouts were cut off."""
    return [name for name, row in table.items() if row.n and row.truncated > share * row.n]


async def format_audit(store: Store, rollouts: Sequence[Rollout], failed: Sequence[FailedJob]) -> FormatAudit:
    """The format audit of one group of a student's rollouts and failed jobs (one run setting:
    `experiment.selection`), with the finish reason of each answer's call in ``store`` and the runs'
    ``--max-tokens`` from their stored config."""
    finish = await finish_reasons(store, rollouts)
    configs = {run.id: run.config for run in await store.runs()}
    made = [cfg for cfg in (configs.get(run_id) for run_id in {r.run_id for r in rollouts}) if isinstance(cfg, dict)]
    max_tokens = sorted({cfg["max_tokens"] for cfg in made if "max_tokens" in cfg})
    grammars = sorted({cfg["extra_body"][GRAMMAR_FIELD] for cfg in made if GRAMMAR_FIELD in cfg.get("extra_body", {})})
    table = format_table(list(rollouts), finish, list(failed))
    return FormatAudit(max_tokens=max_tokens, table=table, cut_off=cut_off(table), grammars=grammars)
