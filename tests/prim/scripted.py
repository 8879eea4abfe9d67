"""The scripted PRIM run the loopback tests share (tests/prim/test_prim_loopback.py tells its script):
four released families with hand-written gold primitives (tests/data/prim_gold.jsonl), the ladder and
PRIM probed by a scripted student, its primitives scored by a scripted judge, all through the CLI."""

from __future__ import annotations

import asyncio
import collections
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from click.testing import Result
from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.schemas.prim import PrimPrimitive
from oracleladder.store import Store
from oracleladder.testing import LoopbackServer

STUDENT, JUDGE, TEACHER = "openai/student", "openai/judge", "openai/teacher"
A, B, C, D = ("f8a3e468-191f-474b-9353-04d5d1e32347", "de4b7c19-3f71-44b8-8ee3-7cfeb7bd18f6",
              "5cf6d4d9-ba10-4d66-96f4-ca128db67e84", "85b872e8-a6f6-477b-a4dd-5d36a24ef93a")
NAMES = {A: "A", B: "B", C: "C", D: "D"}
# what the student writes when asked for a primitive: a token the judge's script reads
WRITES = {("A", "discovery"): "GOOD-A-DISC", ("B", "discovery"): "GOOD-B-DISC", ("C", "discovery"): "BAD",
          ("A", "digestion"): "GOOD-A-DIG", ("B", "digestion"): "BAD", ("C", "digestion"): "GOOD-C-DIG",
          ("D", "digestion"): "GOOD-D-DIG"}
# the prompts the student answers right (everything else it answers wrong)
RIGHT = {("A", "C1"), ("B", "C2"), ("B", "stage0"), ("C", "C3"), ("C", "stage0"), ("A", "exec:gold"),
         ("C", "exec:gold"), ("B", "exec:teacher")}


def _families(release_data: Path) -> dict[str, dict]:
    return {f["pid"]: f for line in (release_data / "families_sample.jsonl").read_text().splitlines()
            if (f := json.loads(line))["pid"] in NAMES}


@dataclass
class Scripted:
    """The store the script filled, and what the run said and asked on the way."""

    store: Path
    families: dict[str, dict]  # by pid, as released
    which: Callable[[str], str]  # the family's name (A-D) whose problem a prompt holds
    probed: dict  # `ladder prim probe --json`'s summary
    scored: Result  # `ladder prim score --json`
    asked: collections.Counter[tuple[str, str]]  # the student's prompts, by family name and kind
    judged: collections.Counter[str]  # the judge's correctness prompts: token:dimension:messages


def scripted_store(tmp_path: Path, release_data: Path) -> Scripted:
    """The ladder (C1-C3) and PRIM's four dimensions (Execution under gold, the teacher's primitive and
    the student's own) probed, and the primitives scored, in a store under ``tmp_path``."""
    families = _families(release_data)
    golds = {json.loads(line)["pid"]: json.loads(line)
             for line in (release_data / "prim_gold.jsonl").read_text().splitlines()}
    store, fams = tmp_path / "s.sqlite", tmp_path / "families.jsonl"
    fams.write_text("".join(json.dumps(families[pid]) + "\n" for pid in NAMES))
    runner = CliRunner()
    for args in (["import", str(fams)], ["prim", "import", str(release_data / "prim_gold.jsonl")]):
        result = runner.invoke(app, [*args, "--store", str(store)])
        assert result.exit_code == 0, result.output

    async def teacher_primitives() -> None:  # the teacher's primitive from the problem alone, for B, C, D
        async with Store.open(store) as s:
            for pid in (B, C, D):
                await s.put_primitive(PrimPrimitive(pid=pid, core_concept=f"TEACHER-{NAMES[pid]}",
                                                    provenance="teacher-problem-only", author=TEACHER))
    asyncio.run(teacher_primitives())

    def which(user: str) -> str:
        return next(NAMES[pid] for pid, f in families.items()
                    if f["parent_prompt"].rsplit("Problem:\n", 1)[-1].strip()[:80] in user)

    def kind(user: str, name: str) -> str:
        if "DO NOT SOLVE OR SUMMARIZE" in user:
            return "discovery"
        if "## Solution:" in user:
            return "digestion"
        if "Hint --- the key idea" in user:
            pid = next(p for p, n in NAMES.items() if n == name)
            return ("exec:gold" if golds[pid]["core_concept"] in user else
                    "exec:teacher" if "TEACHER-" in user else "exec:self")
        if "Milestone:" in user:
            return "stage0"
        if "sub-goals have been solved" in user:
            return "C3"
        if "sub-goals structure the solution" in user:
            return "C2"
        return "C1"

    asked: collections.Counter[tuple[str, str]] = collections.Counter()
    lock = threading.Lock()

    def student(messages: list[dict], body: dict) -> str:
        user = messages[-1]["content"]
        name = which(user)
        k = kind(user, name)
        with lock:
            asked[(name, k)] += 1
        if k in ("discovery", "digestion"):
            token = WRITES.get((name, k))
            if token is None:  # D's Discovery: no labelled primitive at all
                return "I would look for a pattern in the scores."
            return f"Thinking...\nessential_property: {token} property\nsolution_principle: {token} principle\ncore_concept: {token}"
        if (name, k) not in RIGHT:
            return "So \\boxed{999999}."
        if k == "stage0":
            pid = next(p for p, n in NAMES.items() if n == name)
            return next(f"\\boxed{{{m['answer']}}}" for m in families[pid]["milestones"] if m["prompt"] == user)
        pid = next(p for p, n in NAMES.items() if n == name)
        return f"\\boxed{{{families[pid]['parent_answer']}}}"

    judged: collections.Counter[str] = collections.Counter()

    def judge(messages: list[dict], body: dict) -> str:
        first = messages[0]["content"]
        if "VACUOUS" in first:
            candidate = first.split("## Candidate Primitive:", 1)[1]
            verdict = "invalid" if "BAD" in candidate else "valid"
            return json.dumps({"verdict": verdict, "failure": "generic" if verdict == "invalid" else "none",
                               "evidence": "read"})
        candidate = first.split("## Model Primitive (judge this):", 1)[1]
        dim = "GATE" if "The dimension you are judging is the GATE" in first else "MECHANISM"
        with lock:
            judged[f"{candidate.split('core_concept: ')[1].split()[0]}:{dim}:{len(messages)}"] += 1
        if "GOOD-C-DIG" in candidate and dim == "GATE":
            return "It matches the gold primitive well."  # never the JSON asked for
        agreement = "partial" if "GOOD-B-DISC" in candidate and dim == "MECHANISM" else "match"
        return f'Reasoning first. {{"agreement": "{agreement}", "evidence": "compared"}}'

    with LoopbackServer(script=student) as server:
        base = ["--base-url", server.openai_base_url, "--store", str(store)]
        result = runner.invoke(app, ["probe", "--student", STUDENT, "--k", "1", "--conditions", "C1", "--conditions",
                                     "C2", "--conditions", "C3", *base])
        assert result.exit_code == 0, result.output
        result = runner.invoke(app, ["prim", "probe", "--student", STUDENT, "--primitive-source", "gold",
                                     "--primitive-source", "teacher-problem-only", "--primitive-source", "self",
                                     "--json", *base])
        assert result.exit_code == 0, result.output
        probed = json.loads(result.output.strip().splitlines()[-1])

    with LoopbackServer(script=judge) as server:
        result = runner.invoke(app, ["prim", "score", "--judge", JUDGE, "--student", STUDENT, "--json",
                                     "--base-url", server.openai_base_url, "--store", str(store)])
    return Scripted(store, families, which, probed, result, asked, judged)
