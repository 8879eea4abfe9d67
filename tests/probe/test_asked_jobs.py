"""The jobs a probe asks (`asked_jobs`): a family whose parent jobs are skipped keeps its Stage 0 jobs."""
from __future__ import annotations

from pathlib import Path

from oracleladder.domains import MathDomain
from oracleladder.ladder import ProbeConfig
from oracleladder.probe.runner import asked_jobs
from oracleladder.schemas import LADDER, Family
from oracleladder.schemas.jsonl import read_jsonl


def test_skipped_parents_under_the_domains_own_conditions(release_data: Path) -> None:
    # conditions None (`ProbeConfig`: every condition of the domain's ladder), as run_probe may be called
    families = list(read_jsonl(release_data / "families_sample.jsonl", Family))[:2]
    config = ProbeConfig(student="s", k=1)
    jobs = MathDomain().plan_jobs(families, config, families)
    skipped = families[0].pid
    asked = asked_jobs(jobs, config, {skipped})
    own = [j.target for j in jobs if j.pid == skipped]
    assert {t for t in own if t in LADDER} == set(MathDomain().conditions)  # it had parent jobs to skip
    assert [j.target for j in asked if j.pid == skipped] == [t for t in own if t not in LADDER]
    assert [j for j in asked if j.pid != skipped] == [j for j in jobs if j.pid != skipped]
