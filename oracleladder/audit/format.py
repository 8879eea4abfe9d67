"""The format audit (paper Appendix L, Table 24): every rollout in one bucket, per student and
condition, so a reader sees whether a student failed or its answer was cut off or never boxed.

Buckets, from the stored verdict and the stored finish reason of the rollout's call:
``no_boxed`` (no box), ``no_boxed_trunc`` (no box, and the answer hit ``--max-tokens``),
``unparsable`` (a box the verifier could not read: a parse error, or its time limit),
``parsed_wrong`` and ``parsed_correct``. Ungraded rollouts and failed jobs are no verdict on the
student and are counted apart, as the report does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..clients.local import GRAMMAR_FIELD
from ..schemas.models import CONDITION_NAMES, CONDITIONS, PRIMITIVE_CONDITIONS, Rollout, parse_roadmap_set
from ..schemas.types import GradeStatus
from ..store import FailedJob, Store
from .markdown import table

BUCKETS = ("no_boxed", "no_boxed_trunc", "unparsable", "parsed_wrong", "parsed_correct")
# the finish reasons of an answer cut off by the token budget: OpenAI's wire, Anthropic's wire
TRUNCATED = ("length", "max_tokens")
STAGE0 = "Stage 0"
ROWS = (*CONDITIONS, *PRIMITIVE_CONDITIONS, STAGE0)  # the primitive rung where it was run
WARN_SHARE = 0.10  # the report warns when more of a condition's rollouts than this were cut off


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
                 failed: Iterable[FailedJob] = ()) -> dict[str, dict]:
    """Per condition (Stage 0 milestones together) that has rollouts or failed jobs: the count of
    each bucket, ``n`` (bucketed rollouts, the shares' denominator), ``truncated`` (those of them whose
    answer hit the token budget, boxed or not), ``ungraded`` and ``failed``. ``finish`` maps a
    call key to its stored finish reason."""
    rows: dict[str, Counter[str]] = {}
    for r in rollouts:
        c = rows.setdefault(_row(r.target), Counter())
        cut = finish.get(r.call_key) in TRUNCATED
        b = bucket(r, cut)
        c[b or "ungraded"] += 1
        c["truncated"] += cut and b is not None
    for job in failed:
        rows.setdefault(_row(job.target), Counter())["failed"] += 1
    out = {}
    for name in ROWS:
        if name in rows:
            c = rows[name]
            out[name] = {"n": sum(c[b] for b in BUCKETS), **{b: c[b] for b in BUCKETS},
                         "truncated": c["truncated"], "ungraded": c["ungraded"], "failed": c["failed"]}
    return out


def cut_off_warnings(table: dict[str, dict], share: float = WARN_SHARE) -> list[str]:
    """The conditions where more than ``share`` of the graded rollouts were cut off."""
    return [name for name, row in table.items() if row["n"] and row["truncated"] > share * row["n"]]


async def format_audit(store: Store, student: str, source: str = "release") -> dict:
    """The format audit of a student's rollouts on one roadmap set, read from ``store``: the table
    (``format_table``), the conditions to warn about, and the ``--max-tokens`` of the runs that
    made the rollouts and the grammars (GBNF) that constrained their decoding (from their stored config)."""
    name, granularity = parse_roadmap_set(source)
    roadmap_set = name if granularity in (None, "default") else source
    rollouts = await store.rollouts(student=student, source=roadmap_set)
    failed = await store.failed_jobs(student=student, source=roadmap_set)
    finish = {}
    for r in rollouts:
        result = await store.get_call(r.call_key)
        finish[r.call_key] = result.finish_reason if result else None
    configs = {run.id: run.config for run in await store.runs()}
    made = [cfg for cfg in (configs.get(run_id) for run_id in {r.run_id for r in rollouts}) if isinstance(cfg, dict)]
    max_tokens = sorted({cfg["max_tokens"] for cfg in made if "max_tokens" in cfg})
    grammars = sorted({cfg["extra_body"][GRAMMAR_FIELD] for cfg in made if GRAMMAR_FIELD in cfg.get("extra_body", {})})
    table = format_table(rollouts, finish, failed)
    return {"max_tokens": max_tokens, "grammars": grammars, "table": table, "cut_off": cut_off_warnings(table)}


def budget(audit: dict) -> str:
    """The --max-tokens of the runs that made the audited rollouts."""
    m = audit["max_tokens"]
    return "--max-tokens " + ", ".join(map(str, m)) if m else "--max-tokens unknown (no probe run config)"


def constrained(audits: dict[str, dict]) -> str:
    """A sentence naming the students whose answers a grammar constrained, or ""."""
    names = [s for s, a in audits.items() if a["grammars"]]
    return (f"Decoding constrained by a grammar (GBNF, the request field `{GRAMMAR_FIELD}`): {', '.join(names)}; "
            "it changes what the student can answer." if names else "")


def warnings(audits: dict[str, dict]) -> list[str]:
    """One line per student and condition with more than 10% of its rollouts cut off."""
    out = []
    for student, a in audits.items():
        for name in a["cut_off"]:
            row = a["table"][name]
            out.append(f"{student}, {CONDITION_NAMES.get(name, name)}: {row['truncated']} of {row['n']} "
                       f"rollouts ({100 * row['truncated'] / row['n']:.1f}%) were cut off at {budget(a)} "
                       f"(finish reason length); {row['no_boxed_trunc']} of them have no boxed answer and "
                       "count as wrong. Rerun with a larger --max-tokens.")
    return out


def markdown(audits: dict[str, dict]) -> list[str]:
    """The format audit in Table 24's layout: shares of the bucketed rollouts, counts beside."""
    L = ["## Format audit (Table 24)", "",
         "Each graded rollout in one bucket, as a share of the condition's rollouts (count in brackets). "
         "no_boxed_trunc: no boxed answer and the answer hit the token budget (stored finish reason). "
         "Cut off: rollouts that hit the budget, boxed or not. Ungraded rollouts and failed jobs are no "
         "verdict and are counted apart.", ""]
    rows = []
    for student, a in audits.items():
        for name, row in a["table"].items():
            n = row["n"]
            rows.append([student, CONDITION_NAMES.get(name, name), n]
                        + [f"{100 * row[b] / n:.1f}% ({row[b]})" if n else "—" for b in BUCKETS]
                        + [row["truncated"], row["ungraded"], row["failed"]])
    header = ["Model", "Condition", "n", *BUCKETS, "Cut off", "Ungraded", "Failed jobs"]
    L += table(header, rows) if rows else ["No rollouts."]
    L += [""] + [f"{s}: {budget(a)}." for s, a in audits.items()] + [""]
    return L
