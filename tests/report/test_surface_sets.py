"""The roadmap sets' rules of issue 43 on the constructed store of tests/helpers/surfaces.py (beside
test_every_surface.py's matrix): a bare teacher name that names two granularities is refused, naming
both, by probe, report, export and compare; a set probed before and after a recompile under another
teacher prompt version is two groups, never pooled, each with the C1 answers its probe asked (the
second took them from the cache); PRIM's probe shows no primitive the student wrote at another budget."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from oracleladder import Experiment, SyncExperiment
from oracleladder.experiment import Choice, Endpoint, ProbeEstimate
from oracleladder.schemas import Family, Provenance
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer
from tests.helpers.surfaces import FAMILIES, HIGH, LOW, STUDENT, TEACHER, Surfaces, built, cli, script


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory, release_data: Path) -> Surfaces:
    return built(tmp_path_factory, release_data)


# ------------------------------------------------------------------ a bare teacher name

def test_a_bare_teacher_name_of_two_granularities_is_refused_naming_both(surfaces: Surfaces, tmp_path: Path) -> None:
    """One pool compiled by one teacher at the default and at --granularity fine: `--source TEACHER` is two
    sets, refused (exit 2) by probe, report, export and compare, each naming TEACHER@default and TEACHER@fine;
    TEACHER@fine reads the one."""
    store = tmp_path / "two.sqlite"
    shutil.copy(surfaces.store, store)

    async def compile_twice() -> None:
        async with Store.open(store) as s:
            for granularity in ("default", "fine"):
                for pid in FAMILIES:
                    f = Family.model_validate(surfaces.families[pid])
                    await s.put_family(f.model_copy(update={"provenance": Provenance(
                        source=TEACHER, granularity=granularity, teacher_prompt="toolkit")}))
    asyncio.run(compile_twice())
    named = f"'{TEACHER}' names 2 roadmap sets, {TEACHER}@default, {TEACHER}@fine, which are never pooled"
    at = ["--store", str(store)]
    for args in (["probe", "--student", STUDENT, "--source", TEACHER, "--dry-run", "--base-url", "http://127.0.0.1:9/v1"],
                 ["report", "--student", STUDENT, "--source", TEACHER, "--out", str(tmp_path / "r")],
                 ["export", "--out", str(tmp_path / "out.jsonl"), "--teacher", TEACHER],
                 ["compare", "--a", TEACHER, "--b", "release", "--student", STUDENT, "--out", str(tmp_path / "c")]):
        said = cli(*args, *at, code=2)
        assert named in " ".join(said.split()), (args, said)
    cli("export", "--out", str(tmp_path / "fine.jsonl"), "--teacher", f"{TEACHER}@fine", *at)
    assert len((tmp_path / "fine.jsonl").read_text().splitlines()) == 4


def test_a_set_compiled_again_under_another_teacher_prompt_is_never_pooled(surfaces: Surfaces, tmp_path: Path) -> None:
    """One pool compiled by one teacher under two versions of its teacher prompt, the student probed on the
    set after each: two groups, which the report refuses to pool in one line naming both and the option that
    picks one; --run picks the first, whose C2 answers are one per family (pooled, they were two). C1 reads
    no roadmap: the second probe asked the same C1 calls and took the first's answers from the cache, and
    they are the second group's answers too (its outcomes determined), while they stay the first run's."""
    store = tmp_path / "recompiled.sqlite"
    shutil.copy(surfaces.store, store)

    async def compile_and_probe() -> list[str]:
        runs = []
        async with LoopbackServer(script=script(surfaces.families), cut_at_budget=True) as server:
            student = Endpoint(STUDENT, base_urls=[server.openai_base_url])
            for version in ("v1", "v2"):
                async with Store.open(store) as s:
                    for pid in FAMILIES:
                        f = Family.model_validate(surfaces.families[pid])
                        milestones = [m.model_copy(update={"prompt": f"{m.prompt} ({version})", "description":
                                                           f"{m.description or m.prompt} ({version})"})
                                      for m in f.milestones]
                        await s.put_family(f.model_copy(update={"milestones": milestones, "provenance": Provenance(
                            source=TEACHER, teacher_prompt="toolkit", prompt_hash=version)}))
                async with Experiment(store) as ex:
                    probed = await ex.probe(student, source=TEACHER, k=1, conditions=["C1", "C2"], stage0=False,
                                            max_tokens=HIGH)
                    runs.append(probed.run_id)
        return runs
    first, second = asyncio.run(compile_and_probe())
    said = " ".join(cli("report", "--student", STUDENT, "--source", TEACHER, "--out", str(tmp_path / "r"),
                        "--store", str(store), code=2).split())
    assert f"has results on '{TEACHER}' at 2 settings, which a report never pools" in said
    assert "teacher_prompts=toolkit (v1) (K = 1" in said and "teacher_prompts=toolkit (v2) (K = 1" in said
    assert f"pick one with --run {first} or --run {second}" in said
    with SyncExperiment(store) as ex:
        report = ex.report([STUDENT], source=TEACHER, choice=Choice(run=first))
        assert report.settings[STUDENT].endswith("teacher_prompts = toolkit (v1)")
        c2 = [f.ladder["C2_descriptions"] for f in report.results[STUDENT]]
        after = ex.report([STUDENT], source=TEACHER, choice=Choice(run=second))
    assert len(c2) == 4 and all(len(answers) == 1 for answers in c2)
    assert after.settings[STUDENT].endswith("teacher_prompts = toolkit (v2)")
    assert [(len(f.ladder["C1_direct"]), len(f.ladder["C2_descriptions"])) for f in after.results[STUDENT]] == [(1, 1)] * 4
    assert {r.run_id for r in after.picked[STUDENT].rollouts if r.target == "C1_direct"} == {first}
    assert after.summary(STUDENT)["outcome_undetermined"] == 0


# ------------------------------------------------------------------ PRIM's probe: the student's own primitive

def test_a_prim_probe_shows_no_primitive_the_student_wrote_at_another_budget(surfaces: Surfaces,
                                                                          tmp_path: Path) -> None:
    """Execution under the student's own primitive (self) shows what its Discovery wrote at the probe's
    settings: the first two primitives written whole at 384 are shown at 384, and none at 128 (there every
    Discovery answer was cut off)."""
    store = tmp_path / "self.sqlite"
    shutil.copy(surfaces.store, store)

    async def probe() -> tuple[ProbeEstimate, ProbeEstimate]:
        async with LoopbackServer(script=script(surfaces.families), cut_at_budget=True) as server:
            student = Endpoint(STUDENT, base_urls=[server.openai_base_url])
            async with Experiment(store) as ex:
                await ex.prim_probe(student, dimensions=("discovery",), max_tokens=HIGH, limit=2)
                return tuple([await ex.prim_probe(student, dimensions=("execution",), sources=("self",),
                                                  max_tokens=budget, dry_run=True) for budget in (HIGH, LOW)])
    high, low = asyncio.run(probe())
    assert (high.jobs, low.jobs) == (2, 0)
