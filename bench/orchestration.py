"""Orchestration benchmark: N calls against the loopback server (own process) at fixed latency and
concurrency through the full Client, vs the ideal N x latency / concurrency and a raw aiohttp
baseline measured in the same run; then a fully cached rerun that must make zero requests.

    python bench/orchestration.py [--n 2000] [--latency 0.1] [--concurrency 64] [--smoke]

``--smoke``: 100 calls at 5 ms; it fails when a call is lost or the cached rerun asks the server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oracleladder.clients import ChatRequest, ChatResult, Usage, make_client  # noqa: E402
from oracleladder.store import Store  # noqa: E402
from oracleladder.testing.processes import remote_stats, spawn  # noqa: E402


def cpu(who: int = resource.RUSAGE_SELF) -> float:
    """CPU seconds (user and system) of this process, or of its ended children (RUSAGE_CHILDREN)."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def start_server(latency: float) -> tuple[subprocess.Popen, int]:
    return spawn([sys.executable, "-m", "oracleladder.testing.loopback", "--port", "0", "--latency",
                  str(latency), "--max-lifetime", "600"], cwd=ROOT)


def requests_for(n: int, tag: str) -> list[ChatRequest]:
    return [ChatRequest(provider="openai", model="bench-model",
                        messages=[{"role": "user", "content": f"{tag} problem {i}: what is {i} + {i}?"}],
                        params={"temperature": 0.0, "max_tokens": 64}) for i in range(n)]


async def raw_baseline(port: int, n: int, conc: int) -> float:
    import aiohttp

    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    sem = asyncio.Semaphore(conc)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as s:
        async def one(i: int) -> str:
            async with sem:
                body = {"model": "bench-model", "messages": [{"role": "user", "content": f"raw {i}"}]}
                async with s.post(url, json=body) as r:
                    return (await r.json())["choices"][0]["message"]["content"]

        t0 = time.perf_counter()
        out = await asyncio.gather(*(one(i) for i in range(n)))
        dt = time.perf_counter() - t0
    assert len(out) == n
    return dt




async def client_run(port: int, reqs: list[ChatRequest], conc: int, transport: str, cache: Store | None,
                     in_flight: int | None = None) -> tuple[float, float, list[ChatResult], Usage]:
    """``reqs`` through one Client of the server on ``port`` (caching in ``cache``), all at once or
    ``in_flight`` at a time: the wall, this process's CPU over it, the results and the client's usage
    (bench/scale.py measures the Client alone with it, as its probe asks: two calls a slot)."""
    c = make_client(f"{reqs[0].provider}/{reqs[0].model}", base_url=f"http://127.0.0.1:{port}/v1",
                    transport=transport, concurrency=conc, cache=cache)
    room = asyncio.Semaphore(in_flight or len(reqs))

    async def one(r: ChatRequest) -> ChatResult:
        async with room:
            return await c.complete(r)

    c0, t0 = cpu(), time.perf_counter()
    res = await asyncio.gather(*(one(r) for r in reqs))
    dt, dcpu = time.perf_counter() - t0, cpu() - c0
    await c.aclose()
    return dt, dcpu, res, c.usage


def echoed(results: list[ChatResult], n: int) -> None:
    assert len(results) == n and all(r.text.startswith("echo:") for r in results)


async def main_async(a) -> int:
    n, lat, conc = a.n, a.latency, a.concurrency
    failed = False
    ideal = n * lat / conc
    proc, port = start_server(lat)
    tmp = tempfile.mkdtemp(prefix="ladder-bench-")
    try:
        print(f"N={n} latency={lat * 1000:.0f}ms concurrency={conc} cores={os.cpu_count()} "
              f"ideal={ideal:.2f}s (server: separate process on 127.0.0.1:{port})")
        await raw_baseline(port, 64, conc)  # warm-up
        remote_stats(port, reset=True)
        dt = await raw_baseline(port, n, conc)
        print(f"  raw aiohttp baseline           wall {dt:6.2f}s  {dt / ideal:5.2f}x ideal")

        for transport in a.transports:
            store = await Store.open(os.path.join(tmp, "bench.sqlite"))
            remote_stats(port, reset=True)
            tag = f"t-{transport}"
            dt, dcpu, res, usage = await client_run(port, requests_for(n, tag), conc, transport, store)
            echoed(res, n)
            s = remote_stats(port)
            print(f"  Client transport={transport:<8} wall {dt:6.2f}s  {dt / ideal:5.2f}x ideal  "
                  f"client CPU {dcpu:5.2f}s ({dcpu / n * 1000:.2f} ms/call)  server requests {s['total']}  "
                  "cache: SQLite Store (temp file)")
            remote_stats(port, reset=True)
            dt2, dcpu2, res, usage2 = await client_run(port, requests_for(n, tag), conc, transport, store)
            echoed(res, n)
            s2 = remote_stats(port)
            print(f"    cached rerun                 wall {dt2:6.3f}s  {n / dt2:8.0f} items/s  "
                  f"server requests {s2['total']}  cache hits {usage2.cache_hits}/{usage2.calls}")
            await store.close()
            if s["total"] != n or s2["total"] or usage2.cache_hits != n:
                print(f"CHECK FAILED: {transport}: {s['total']} requests for {n} calls, then {s2['total']} requests "
                      f"and {usage2.cache_hits} cache hits on the rerun (want {n}, 0 and {n})")
                failed = True
    finally:
        proc.terminate()
        proc.wait(5)
    return 1 if failed else 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--transports", nargs="+", default=["aiohttp", "sdk"])
    ap.add_argument("--smoke", action="store_true", help="100 calls at 5 ms: the checks, in seconds")
    a = ap.parse_args()
    if a.smoke:
        a.n, a.latency = 100, 0.005
    sys.exit(asyncio.run(main_async(a)))


if __name__ == "__main__":
    main()
