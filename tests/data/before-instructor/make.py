"""How before.sqlite was made, by the toolkit at commit 9e255bf (before instructor built the structured
bodies): three problems of bench/_teacher_script.py compiled by four teachers against the loopback
server, each in one structured mode: openai/teacher in json_schema, json_object, tools and md_json
(the served names say which), anthropic/teacher in md_json (its one mode then).

    git archive 9e255bf | tar -x -C OLD && PYTHONPATH=OLD python tests/data/before-instructor/make.py OUT.sqlite
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import oracleladder
from oracleladder import Endpoint, Experiment
from oracleladder.testing import LoopbackServer

sys.path.insert(0, str(Path(oracleladder.__file__).resolve().parents[1] / "bench"))  # the old code's bench

from _teacher_script import problem, teacher  # noqa: E402

PROBLEMS = range(20, 23)  # 21 is a problem whose first plan the checks reject
TEACHERS = [("openai/teacher", "json_schema"), ("openai/teacher-json-object", "json_object"),
            ("openai/teacher-tools", "tools"), ("openai/teacher-md-json", "md_json"), ("anthropic/teacher", "md_json")]


async def main(out: Path) -> None:
    pool = out.with_suffix(".jsonl")
    pool.write_text("".join(json.dumps(problem(i)) + "\n" for i in PROBLEMS))
    async with LoopbackServer(teacher) as srv, Experiment(out) as ex:
        for model, mode in TEACHERS:
            url = srv.openai_base_url if model.startswith("openai/") else srv.anthropic_base_url
            summary = await ex.compile(pool, Endpoint(model, base_urls=[url], structured=mode))
            assert summary.compiled == len(PROBLEMS), summary
    pool.unlink()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
