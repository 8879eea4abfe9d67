"""A grammar (GBNF) in the request field `grammar`, stated wherever a report was made with it."""

from __future__ import annotations

import json
from pathlib import Path

from oracleladder import Endpoint, Experiment
from oracleladder.testing import LoopbackServer

GRAMMAR = 'root ::= "\\\\boxed{0}"'
GRAMMAR_SAID = "Decoding constrained by a grammar (GBNF, the request field `grammar`)"


def _overview(site: Path) -> dict:
    text = (site / "data" / "overview.js").read_text()
    return json.loads(text.removeprefix("ladderOverview(").removesuffix(");\n").replace("<\\/", "</"))


async def test_a_report_made_with_a_grammar_says_so(tmp_path: Path, release_data: Path) -> None:
    bodies: list[dict] = []

    def student(messages: list[dict], body: dict) -> str:
        bodies.append(body)
        return r"\boxed{0}"

    with LoopbackServer(student) as server:
        async with Experiment(tmp_path / "s.sqlite") as ex:
            await ex.import_families(release_data / "families_sample.jsonl")
            for name, extra_body in (("plain", {}), ("constrained", {"grammar": GRAMMAR})):
                await ex.probe(Endpoint(f"openai/{name}", base_urls=[server.openai_base_url], extra_body=extra_body),
                               k=1, conditions=["C1"], stage0=False, limit=2)
            report = await ex.report(["openai/plain", "openai/constrained"])
            await ex.write_report(report, tmp_path / "report", html=True)
    # the grammar went to the server as its request field, as a llama.cpp server reads it
    assert sorted(str(b.get("grammar")) for b in bodies) == ["None", "None", GRAMMAR, GRAMMAR]
    header = (tmp_path / "report" / "report.md").read_text().split("\n")[2]
    assert f"{GRAMMAR_SAID}: openai/constrained;" in header
    saved = json.loads((tmp_path / "report" / "report.json").read_text())["students"]
    assert saved["openai/constrained"]["format"]["grammars"] == [GRAMMAR]
    assert saved["openai/plain"]["format"]["grammars"] == []
    students = _overview(tmp_path / "report" / "html")["provenance"]["students"]
    assert {s: p["grammar"] for s, p in students.items()} == {"openai/plain": False, "openai/constrained": True}
