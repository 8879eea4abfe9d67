"""Opening an old store: a store written at schema v12 (before calls were keyed by their model's name,
v15) holding N calls at a server, their rollouts and runs, opened with the migrations to the current
schema. Migrating must be linear in the store's size: the time per call at N is printed against the
time per call at N/10 measured in the same run (a ratio near 1; quadratic would be near 10).

    python bench/migrate.py [--n 100000] [--smoke]

Prints one JSON line: calls, seconds to open at N and at N/10, the ratio of their times per call, and
the target (N = 100,000 opened in under a minute on 2 cores). ``--smoke``: N = 2,000 (a few seconds),
the ratio checked loosely; exits 1 on a miss.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from oracleladder.clients import ChatRequest  # noqa: E402
from oracleladder.store import Store  # noqa: E402
from oracleladder.store.rows import pack  # noqa: E402
from tests.helpers import store_at  # noqa: E402 - an empty store as an old schema made it

OLD = 12
SERVER = "http://127.0.0.1:8000/v1"
K = 4  # calls per prompt
CALLS_PER_RUN = 500  # a run every 500 calls: the runs grow with the store, as a paper's do
TARGET_S = 60.0  # 100,000 calls


def build(path: Path, n: int) -> None:
    """A v12 store of ``n`` calls at SERVER (keyed by its URL, as v12 keyed them): half a student's,
    each with its rollout, half a teacher's with none (named by the run of their time), K per prompt."""
    con = store_at(path, OLD)
    con.execute("BEGIN")
    for r in range(n // CALLS_PER_RUN + 1):
        kind, model = ("probe", "openai/student") if r % 2 == 0 else ("compile", "openai/teacher")
        field = "student" if kind == "probe" else "teacher"
        # run r spans the calls created "T<r>.<i>" (ISO strings compare as text)
        con.execute("INSERT INTO runs (id, kind, config, status, started_at, finished_at) VALUES (?, ?, ?, 'done', ?, ?)",
                    (f"run-{r}", kind, json.dumps({field: model}), f"2026-12-01T{r:08d}", f"2026-12-01T{r:08d}~"))
    names: dict[str, int] = {}

    def name(s: str) -> int:
        if s not in names:
            names[s] = con.execute("INSERT INTO names (name) VALUES (?)", (s,)).lastrowid
        return names[s]

    for i in range(n):
        run = i // CALLS_PER_RUN
        student = run % 2 == 0
        request = ChatRequest(provider="openai", model="m", messages=[{"role": "user", "content": f"problem {i // K}"}],
                              params={"max_tokens": 64}, k=i % K)
        # the request as the code before v13 stored it: with its server's URL (tests/store/test_rekey.py)
        body = json.dumps({**request.model_dump(mode="json", exclude={"k", "name", "cache_tag"}), "endpoint": SERVER})
        digest, k = hashlib.sha256(body.encode()).digest(), request.k
        con.execute("INSERT OR IGNORE INTO requests (digest, body) VALUES (?, ?)", (digest, pack(body)))
        key = hashlib.sha256(f"{SERVER} {i}".encode()).digest()  # a v12 key: 32 bytes (any unique ones do here)
        created = f"2026-12-01T{run:08d}.{i:09d}"
        con.execute("INSERT INTO calls (key, provider, model, request_id, k, tokens_in, tokens_out, latency_s, "
                    "finish_reason, error, run_id, created_at, response) VALUES (?, 'openai', 'm', "
                    "(SELECT id FROM requests WHERE digest = ?), ?, 10, 5, 0.1, 'stop', NULL, ?, ?, ?)",
                    (key, digest, k, f"run-{run}", created, r"\boxed{1}"))
        if student:
            con.execute("INSERT INTO rollouts (student_ref, source_ref, pid_ref, target_ref, k, call_key, run_ref, "
                        "label, reason, extracted, status, created_at, response) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, 'accept', 'match', '1', 'graded', ?, NULL)",
                        (name("openai/student"), name("release"), name(f"p{i // K}"), name("C1_direct"), k, key,
                         name(f"run-{run}"), created))
    con.execute("COMMIT")
    con.close()


async def _open(path: Path) -> None:
    async with Store.open(path):
        pass


def opened(n: int, folder: Path) -> float:
    """Seconds to open (migrate) a v12 store of ``n`` calls."""
    path = folder / f"v12-{n}.sqlite"
    build(path, n)
    t0 = time.perf_counter()
    asyncio.run(_open(path))
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="calls in the store")
    ap.add_argument("--smoke", action="store_true", help="2,000 calls, a few seconds")
    args = ap.parse_args()
    n = 2_000 if args.smoke else args.n
    with tempfile.TemporaryDirectory() as tmp:
        small = opened(n // 10, Path(tmp))
        big = opened(n, Path(tmp))
    ratio = (big / n) / (small / (n // 10))
    # linear: near 1 (the small store's fixed costs make it lower); quadratic: near 10
    ok = ratio < 3.0 and (args.smoke or n < 100_000 or big < TARGET_S * n / 100_000)
    print(json.dumps({"calls": n, "open_s": round(big, 2), "baseline_calls": n // 10, "baseline_open_s": round(small, 3),
                      "ratio_per_call": round(ratio, 2), "target": "ratio < 3; 100,000 calls under 60 s", "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
