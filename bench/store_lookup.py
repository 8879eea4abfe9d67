"""Store lookup-path benchmark on a real file: N long answers (released response text, 6,000-26,000
characters) stored as calls with their rollouts, then the store reopened (the hit cache's load),
every call got again (long answers are read from the file), and the student's rollouts read.

    python bench/store_lookup.py [--n 6000] [--smoke]

``--smoke``: 50 answers; it fails when a stored call or rollout is not read back.

Prints one JSON line: put CPU per call and rollout (both threads), open ms, get us per long
answer, rollouts() ms, file bytes per rollout. Compare two checkouts in the same minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oracleladder.clients import ChatRequest, ChatResult  # noqa: E402
from oracleladder.schemas import Rollout, Verdict  # noqa: E402
from oracleladder.schemas.types import Label  # noqa: E402
from oracleladder.store import Store  # noqa: E402

DATA = ROOT / "tests" / "data"  # the release's sample, shipped with the tests


async def run(n: int) -> dict[str, float]:
    corpus = "\n\n".join(json.loads(line)["response_tail"] for line in (DATA / "responses_sample.jsonl").open())
    requests = [ChatRequest(provider="openai", model="student", messages=[{"role": "user", "content": f"Problem {i // 8}"}],
                            params={"max_tokens": 16384}, k=i % 8) for i in range(n)]
    texts = [corpus[(i * 997) % 100_000:(i * 997) % 100_000 + 6000 + (i * 7919) % 20_000] for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lookup.sqlite"
        async with Store.open(path) as store:
            t0 = time.process_time()
            for i, (request, text) in enumerate(zip(requests, texts)):
                await store.put_call(request, ChatResult(text=text, tokens_out=100), wait=False)
                await store.put_rollout(Rollout(run_id="run", student="openai/student", pid=f"p{i // 8}",
                                                target="C1_direct", k=request.k, call_key=request.key(), response=text,
                                                verdict=Verdict(label=Label.ACCEPT, reason="match", extracted="4")),
                                        wait=False)
            await store.flush()
            put_cpu = time.process_time() - t0
        t0 = time.perf_counter()
        store = await Store.open(path)
        opened = time.perf_counter() - t0
        t0 = time.perf_counter()
        for request in requests:
            assert await store.get_call(request.key()) is not None
        got = time.perf_counter() - t0
        t0 = time.perf_counter()
        assert len(await store.rollouts(student="openai/student")) == n
        read = time.perf_counter() - t0
        await store.close()
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
    return {"n": n, "put_cpu_us": round(put_cpu / n * 1e6, 1), "open_ms": round(opened * 1e3, 1),
            "get_long_us": round(got / n * 1e6, 1), "rollouts_ms": round(read * 1e3, 1),
            "bytes_per_rollout": round(size / n)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=6000)
    ap.add_argument("--smoke", action="store_true", help="50 answers: the checks, in seconds")
    a = ap.parse_args()
    print(json.dumps(asyncio.run(run(50 if a.smoke else a.n))))


if __name__ == "__main__":
    main()
