"""Gemini's batch mode (`--batch` with a google/ model) end to end through the real google-genai SDK
against the loopback server's batch routes (batchGenerateContent with inlined requests, get, list,
cancel): only those routes are asked, every answer is stored, a rerun asks nothing, a row the server
fails is never an answer, and a structured row is the online call's request."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app
from oracleladder.clients import MemoryCache, make_client
from oracleladder.clients.batch import make_batch_client
from oracleladder.domains.math.plan import TeacherPlan
from oracleladder.testing import LoopbackServer
from tests.clients.test_batch import ANSWER, FAST, _count, _import, _summary
from tests.helpers.roots import GOOD

runner = CliRunner()


def _probe_args(server: LoopbackServer, store: Path) -> list[str]:
    return ["probe", "--student", "google/student", "--k", "1", "--limit", "3", "--store", str(store),
            "--base-url", server.google_base_url, "--json", *FAST]


def test_a_batch_probe_goes_through_gemini_s_batch_routes_only_and_a_rerun_asks_nothing(
        tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "gemini.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.3) as server:
        summary = _summary(runner.invoke(app, _probe_args(server, store)))
        [batch] = server.batches.batches.values()
        assert batch.id == "batches/loop0" and batch.wire == "google" and batch.model == "models/student"
        rows = dict(batch.rows)
        assert all(r["contents"][-1]["role"] == "user" for r in rows.values())  # Gemini's request, per row
        assert server.total == 0  # no online generateContent
        assert summary["failed_jobs"] == [] and summary["batch_rows_submitted"] == len(rows)
        assert _count(store, "SELECT COUNT(*) FROM rollouts") == len(rows) > 0
        assert _count(store, "SELECT COUNT(*) FROM batches WHERE id = 'batches/loop0' AND state = 'completed'") == 1

        again = _summary(runner.invoke(app, _probe_args(server, store)))
        assert again["requests"] == 0 and server.batches.created == 1 and server.total == 0


def test_rows_the_server_fails_are_never_answers(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "gemini-errors.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.2, batch_errors=0.25) as server:
        summary = _summary(runner.invoke(app, _probe_args(server, store)))
        first = server.batches.batches["batches/loop0"].results or {}
        errored = {cid for cid, r in first.items() if r["kind"] == "errored"}
        by_id = server.stats()["batch_rows_by_id"]
        assert errored and {cid for cid, n in by_id.items() if n == 2} == errored  # an INTERNAL row goes again
        assert server.batches.created == 2 and summary["failed_jobs"] == []
        second = server.batches.batches["batches/loop1"]  # the errored rows, answered there
        assert {cid for cid, _ in second.rows} == errored
        assert {r["kind"] for r in (second.results or {}).values()} == {"succeeded"}
        assert _count(store, "SELECT COUNT(*) FROM rollouts") == len(by_id)

    store = tmp_path / "gemini-refused.sqlite"
    _import(store, release_data)
    # every row refused with INVALID_ARGUMENT: failed jobs at once, no answer, not submitted again
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.2, unsupported_fields=("contents",)) as server:
        result = runner.invoke(app, _probe_args(server, store))
        assert result.exit_code == 3, result.output
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        rows = server.stats()["batch_rows_by_id"]
        assert server.batches.created == 1 and set(rows.values()) == {1}
        assert len(summary["failed_jobs"]) == len(rows) > 0
        assert all("unsupported field 'contents'" in j["reason"] for j in summary["failed_jobs"])
        assert _count(store, "SELECT COUNT(*) FROM rollouts") == 0


async def test_a_structured_row_is_the_online_call_s_request(tmp_path: Path) -> None:
    bodies: list[dict] = []

    def script(messages: list[dict], body: dict) -> str:
        bodies.append(body)
        return json.dumps(GOOD)

    async with LoopbackServer(script, batch_delay=0.1) as srv:
        async with make_client("google/gemini-2.5-flash", base_url=srv.google_base_url) as client:
            online = await client.structured(client.request("Plan it.", temperature=0.0, max_tokens=512), TeacherPlan)
        async with make_batch_client("google/gemini-2.5-flash", base_url=srv.google_base_url, cache=MemoryCache(),
                                     quiet=0.1, poll=0.05) as client:
            batched = await client.structured(client.request("Plan it.", temperature=0.0, max_tokens=512), TeacherPlan)
        assert srv.total == 1 and srv.batches.created == 1
    online_body, row = bodies
    assert batched == online == TeacherPlan.model_validate(GOOD)
    assert row.pop("model") == "models/gemini-2.5-flash" and row == online_body


def test_a_batch_whose_create_reply_is_lost_is_found_by_its_display_name(tmp_path: Path, release_data: Path) -> None:
    store = tmp_path / "gemini-lost.sqlite"
    _import(store, release_data)
    with LoopbackServer(script=lambda m, b: ANSWER, batch_delay=0.2, lost_create="500") as server:
        summary = _summary(runner.invoke(app, _probe_args(server, store)))
        [batch] = server.batches.batches.values()
        assert batch.display_name is not None and batch.display_name.startswith("intent-")
        assert server.batches.creates == 1 and set(server.stats()["batch_rows_by_id"].values()) == {1}
        assert summary["failed_jobs"] == [] and _count(store, "SELECT COUNT(*) FROM rollouts") == len(batch.rows)
        assert _count(store, "SELECT COUNT(*) FROM batches WHERE id = 'batches/loop0'") == 1
