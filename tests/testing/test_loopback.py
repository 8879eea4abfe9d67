"""The loopback server itself, and a crash/resume run against it in its own process."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

from oracleladder.clients import ChatRequest
from oracleladder.store import Store
from oracleladder.testing import Faults, LoopbackServer
from oracleladder.testing.processes import spawn
from tests.helpers import REPO


def _post(url, body, headers=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_wire_formats_and_counts():
    with LoopbackServer({"2+2": "4"}) as srv:
        st, _, raw = _post(srv.url + "/v1/chat/completions",
                           {"model": "m", "messages": [{"role": "user", "content": "2+2?"}]})
        d = json.loads(raw)
        assert st == 200 and d["choices"][0]["message"]["content"] == "4"
        assert d["usage"]["prompt_tokens"] > 0 and d["object"] == "chat.completion"
        st, _, raw = _post(srv.url + "/v1/messages",
                           {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "2+2?"}]})
        d = json.loads(raw)
        assert st == 200 and d["content"][0]["text"] == "4" and d["usage"]["output_tokens"] > 0
        _post(srv.url + "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "2+2?"}]})
        s = srv.stats()
        assert s["total"] == 3 and s["distinct_bodies"] == 2 and s["max_per_body"] == 2


def test_fail_first_429_has_retry_after():
    with LoopbackServer(faults=Faults(fail_first=1, retry_after=1.5)) as srv:
        st, h, _ = _post(srv.url + "/v1/chat/completions", {"model": "m", "messages": []})
        assert st == 429 and h.get("Retry-After") == "1.5"
        st, _, _ = _post(srv.url + "/v1/chat/completions", {"model": "m", "messages": []})
        assert st == 200


def test_fractions_are_roughly_right():
    with LoopbackServer(faults=Faults(p429=0.2, p500=0.2), seed=3) as srv:
        codes = [_post(srv.url + "/v1/chat/completions", {"model": "m", "messages": []})[0] for _ in range(300)]
    assert 30 < codes.count(429) < 90 and 30 < codes.count(500) < 90


def test_max_lifetime_stops_server():
    srv = LoopbackServer(max_lifetime=0.5).start_in_thread()
    srv._thread.join(5)
    assert not srv._thread.is_alive()


def test_rejects_non_loopback_bind():
    with pytest.raises(ValueError):
        LoopbackServer(host="0.0.0.0")


def _start_standalone(latency):
    return spawn([sys.executable, "-m", "oracleladder.testing.loopback", "--latency", str(latency),
                  "--max-lifetime", "120"], cwd=REPO)


def test_standalone_process(tmp_path):
    proc, port = _start_standalone(0.0)
    try:
        st, _, raw = _post(f"http://127.0.0.1:{port}/v1/chat/completions",
                           {"model": "m", "messages": [{"role": "user", "content": "x"}]})
        assert st == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats") as r:
            assert json.loads(r.read())["total"] == 1
    finally:
        proc.terminate()
        proc.wait(5)


WORKER = textwrap.dedent("""
    import asyncio, sys
    from oracleladder.clients import ChatRequest, make_client
    from oracleladder.store import Store

    async def main(port, path, n):
        store = await Store.open(path)
        c = make_client("openai/m", base_url=f"http://127.0.0.1:{port}/v1", cache=store, concurrency=8)
        reqs = [ChatRequest(provider="openai", model="m", messages=[{"role": "user", "content": f"item {i}"}])
                for i in range(n)]
        res = await asyncio.gather(*(c.complete(r) for r in reqs))
        assert [r.text for r in res] == [f"echo: item {i}" for i in range(n)]
        await c.aclose()
        await store.close()
        print("DONE", flush=True)

    asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3])))
""")


def test_sigkill_resume_no_repeat(tmp_path):
    n = 200
    proc, port = _start_standalone(0.05)
    db = tmp_path / "calls.sqlite"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        w = subprocess.Popen([sys.executable, str(script), str(port), str(db), str(n)], env=env,
                             stdout=subprocess.PIPE)
        deadline = time.time() + 60
        while time.time() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats") as r:
                if json.loads(r.read())["total"] >= n // 2:
                    break
            time.sleep(0.02)
        w.send_signal(signal.SIGKILL)
        w.wait(10)
        async def stored_prompts():
            st = await Store.open(str(db))
            out = set()
            for i in range(n):
                r = ChatRequest(provider="openai", model="m", messages=[{"role": "user", "content": f"item {i}"}])
                if await st.get_call(r.key()) is not None:
                    out.add(f"item {i}")
            await st.close()
            return out

        stored = asyncio.run(stored_prompts())
        assert 0 < len(stored) < n
        w2 = subprocess.run([sys.executable, str(script), str(port), str(db), str(n)], env=env,
                            capture_output=True, timeout=120)
        assert b"DONE" in w2.stdout, w2.stderr.decode()[-2000:]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats") as r:
            s = json.loads(r.read())
        # every prompt answered; a prompt answered twice only if the kill hit it before its answer
        # was committed: the 8 requests in flight plus answers waiting for their group commit
        # (the writer commits every few ms, so under load up to about one more window of 8)
        assert set(s["ok_by_prompt"]) == {f"item {i}" for i in range(n)}
        assert all(s["ok_by_prompt"][p] == 1 for p in stored)  # no stored answer asked again
        repeats = sum(v - 1 for v in s["ok_by_prompt"].values())
        assert repeats <= 16, repeats
        assert s["total"] <= n + 16
    finally:
        proc.terminate()
        proc.wait(5)
