"""The loopback server's batch APIs: OpenAI's (file upload, ``/v1/batches`` create, retrieve, cancel,
output and error files), Anthropic's Message Batches (``/v1/messages/batches`` create, retrieve,
results, cancel) and Gemini's batch mode (``/v1beta/models/{model}:batchGenerateContent`` with inlined
requests, ``/v1beta/batches`` list, get with the inlined responses once ended, cancel).

A batch goes validating -> in_progress -> finalizing -> completed (Anthropic: in_progress -> ended)
over ``delay`` seconds. On demand, a fraction of the rows error on their first submission
(``errors``, exactly), the first ``expire`` batches expire with only half their rows done, the first
``stuck`` batches never end (a cancel does not end them either), the first create request meets the
fault ``lost_create`` (``LOST_CREATES``: the batch is made, its reply lost; ``NOT_CREATED``: no batch
is made), and the first batch's results file has the fault ``results_fault`` (``RESULTS_FAULTS``; Gemini's
responses are inlined in the batch, not a file: they have none).
Every row received is counted by its custom_id, so a test can assert that nothing was submitted twice.
"""

from __future__ import annotations

import asyncio
import collections
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from aiohttp import web

from .wires import anthropic_message, anthropic_messages, gemini_messages, gemini_reply


class _Answering(Protocol):
    """What the batches ask of the server: its scripted answer, in each wire's body."""

    finish_reason: str
    usage: bool
    total: int

    def answer(self, messages: list[dict[str, Any]], body: dict[str, Any]) -> str | None: ...

    def _completion(self, body: dict[str, Any], text: str | None) -> dict[str, Any]: ...

    def _refusal(self, body: dict[str, Any], kind: str) -> web.Response | None: ...

    def count(self, messages: list[dict[str, Any]], text: str | None) -> tuple[int, int]: ...

    def bill(self, messages: list[dict[str, Any]], text: str | None) -> None: ...


# a create whose reply is lost after the batch is made: the connection dropped, an HTTP 500, no reply
# before the client's timeout
LOST_CREATES = ("drop", "500", "stall")
NOT_CREATED = ("500-none", "400")  # a create answered with that status, no batch made
# what can be wrong with a results file (OpenAI's output file, Anthropic's results): its last line cut
# short, its first line not JSON or without its custom_id, its first row twice with another answer, no row
RESULTS_FAULTS = ("truncated", "not-json", "no-custom-id", "duplicate", "empty")
STALL_S = 60.0


@dataclass
class _Batch:
    id: str
    wire: str  # "openai" | "anthropic" | "google"
    rows: list[tuple[str, dict[str, Any]]]  # (custom_id, request body)
    errored: set[str]  # rows answered with an error
    expire: bool
    stuck: bool  # never ends, even once cancelled
    faulty: bool  # its results file has the fault results_fault
    t0: float = field(default_factory=time.monotonic)
    created: float = field(default_factory=time.time)
    metadata: dict[str, str] | None = None  # OpenAI's, as created
    model: str = ""  # Gemini's, as created
    display_name: str | None = None  # Gemini's, as created
    cancelled: bool = False
    results: dict[str, dict[str, Any]] | None = None  # custom_id -> result line, once ended


class LoopbackBatches:
    def __init__(self, server: _Answering, *, delay: float = 0.5, errors: float = 0.0, expire: int = 0,
                 lost_create: str | None = None, stuck: int = 0, results_fault: str | None = None) -> None:
        if lost_create not in (None, *LOST_CREATES, *NOT_CREATED):
            raise ValueError(f"lost_create: one of {LOST_CREATES + NOT_CREATED}")
        if results_fault not in (None, *RESULTS_FAULTS):
            raise ValueError(f"results_fault: one of {RESULTS_FAULTS}")
        self.server = server
        self.delay = delay  # seconds from create to completed
        self.errors = errors  # fraction of rows erroring on their first submission
        self.expire = expire  # the first N batches expire with half their rows done
        self.lost_create = lost_create  # the first create request's fault
        self.stuck = stuck  # the first N batches never end
        self.results_fault = results_fault  # the first batch's results file's fault
        self.reset()

    def reset(self) -> None:
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.rows_by_id: collections.Counter[str] = collections.Counter()
        self.created = 0
        self.creates = 0  # create requests, answered or not
        self.cancels = 0

    def stats(self) -> dict[str, Any]:
        return {"batches": self.created, "batch_rows": sum(self.rows_by_id.values()),
                "batch_rows_by_id": dict(self.rows_by_id), "batch_cancels": self.cancels}

    def add_routes(self, app: web.Application) -> None:
        r = app.router
        r.add_post("/v1/files", self._upload)
        r.add_get("/v1/files/{id}/content", self._file_content)
        r.add_post("/v1/batches", self._openai_create)
        r.add_get("/v1/batches", self._openai_list)
        r.add_get("/v1/batches/{id}", self._openai_retrieve)
        r.add_post("/v1/batches/{id}/cancel", self._openai_cancel)
        r.add_post("/v1/messages/batches", self._anthropic_create)
        r.add_get("/v1/messages/batches", self._anthropic_list)
        r.add_get("/v1/messages/batches/{id}", self._anthropic_retrieve)
        r.add_get("/v1/messages/batches/{id}/results", self._anthropic_results)
        r.add_post("/v1/messages/batches/{id}/cancel", self._anthropic_cancel)
        r.add_post("/v1beta/models/{model:[^/:]+}:batchGenerateContent", self._google_create)
        r.add_get("/v1beta/batches", self._google_list)
        r.add_get("/v1beta/batches/{id:[^/:]+}", self._google_get)
        r.add_post("/v1beta/batches/{id:[^/:]+}:cancel", self._google_cancel)

    # ------------------------------------------------------------------ common
    def _new(self, wire: str, rows: list[tuple[str, dict[str, Any]]]) -> _Batch:
        if len({cid for cid, _ in rows}) < len(rows):
            raise web.HTTPBadRequest(text=json.dumps({"error": {"message": "duplicate custom_id"}}),
                                     content_type="application/json")
        firsts = [cid for cid, _ in rows if cid not in self.rows_by_id]
        self.rows_by_id.update(cid for cid, _ in rows)
        # every 1/errors-th row among those submitted for the first time: the fraction exactly
        errored = {cid for i, cid in enumerate(firsts) if int((i + 1) * self.errors) > int(i * self.errors)}
        prefix = {"openai": "batch_", "anthropic": "msgbatch_", "google": "batches/"}[wire]
        batch = _Batch(f"{prefix}loop{self.created}", wire, rows, errored, expire=self.created < self.expire,
                       stuck=self.created < self.stuck, faulty=self.created == 0 and self.results_fault is not None)
        self.created += 1
        self.batches[batch.id] = batch
        return batch

    async def _create(self, request: web.Request, make: Any) -> web.StreamResponse:
        """Answer a create request with ``make()``'s batch (its reply body), or with the fault of the first create."""
        self.creates += 1
        fault = self.lost_create if self.creates == 1 else None
        if fault in NOT_CREATED:
            return web.json_response({"error": {"type": "server_error" if fault == "500-none" else
                                                "invalid_request_error", "message": f"create refused ({fault})"}},
                                     status=int(fault[:3]))
        reply = make()
        if fault == "drop":
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)
        if fault == "500":
            return web.json_response({"error": {"type": "server_error", "message": "boom (after create)"}}, status=500)
        if fault == "stall":  # until the client gives up (then the reply has nowhere to go), STALL_S at most
            give_up = time.monotonic() + STALL_S
            while request.transport is not None and not request.transport.is_closing() and time.monotonic() < give_up:
                await asyncio.sleep(0.05)
        return web.json_response(reply)

    def _get(self, request: web.Request, prefix: str = "") -> _Batch:
        """The batch the request names (``prefix``: what its id has before the name in the path)."""
        batch = self.batches.get(prefix + request.match_info["id"])
        if batch is None:
            raise web.HTTPNotFound(text=json.dumps({"error": {"message": "no such batch"}}),
                                   content_type="application/json")
        return batch

    def _progress(self, batch: _Batch) -> float:
        """How far along a batch is, 0 to 1 (1: ended); a cancelled one ends at once, a stuck one never."""
        if batch.stuck:
            return 0.5
        if batch.cancelled:
            return 1.0
        return min(1.0, (time.monotonic() - batch.t0) / self.delay) if self.delay > 0 else 1.0

    def _finish(self, batch: _Batch) -> dict[str, dict[str, Any]]:
        """Each row's outcome, fixed once the batch ends: an answer, an error, expired or cancelled."""
        if batch.results is None:
            done = len(batch.rows) // 2 if batch.expire else len(batch.rows)
            if batch.cancelled:
                done = 0
            results: dict[str, dict[str, Any]] = {}
            for i, (cid, body) in enumerate(batch.rows):
                if i >= done:
                    kind = "cancelled" if batch.cancelled else "expired"
                    results[cid] = {"kind": kind}
                elif cid in batch.errored:
                    results[cid] = {"kind": "errored"}
                elif (refusal := self.server._refusal(body, batch.wire)) is not None:  # as the online API refuses it
                    assert isinstance(refusal.body, bytes)
                    results[cid] = {"kind": "refused", "status": refusal.status, "error": json.loads(refusal.body)}
                else:  # answered once: every read of the results says the same
                    messages = (anthropic_messages(body) if batch.wire == "anthropic" else gemini_messages(body)
                                if batch.wire == "google" else list(body.get("messages") or []))
                    text = self.server.answer(messages, body)
                    self.server.bill(messages, text)
                    results[cid] = {"kind": "succeeded", "body": body, "messages": messages, "text": text}
            batch.results = results
        return batch.results

    def _file(self, batch: _Batch, lines: list[dict[str, Any]], answered: Any) -> bytes:
        """A results file of ``lines``, with the first batch's fault; ``answered(line, text)``: that
        line answering with ``text`` instead."""
        text = [json.dumps(x) for x in lines]
        fault = self.results_fault if batch.faulty and lines else None
        if fault == "empty":
            text = []
        elif fault == "truncated":
            text[-1] = text[-1][:len(text[-1]) // 2]
        elif fault == "not-json":
            text[0] = "<html><body>502 Bad Gateway</body></html>"
        elif fault == "no-custom-id":
            text[0] = json.dumps({k: v for k, v in lines[0].items() if k != "custom_id"})
        elif fault == "duplicate":
            text.append(json.dumps(answered(lines[0], r"Another answer: \boxed{999}")))
        return "".join(t + ("" if fault == "truncated" and i == len(text) - 1 else "\n")
                       for i, t in enumerate(text)).encode()

    # ------------------------------------------------------------------ OpenAI
    async def _upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload = form.get("file")
        if not isinstance(upload, web.FileField) or form.get("purpose") != "batch":
            return web.json_response({"error": {"message": "expected a file with purpose batch"}}, status=400)
        data = upload.file.read()
        fid = f"file-loop{len(self.files)}"
        self.files[fid] = data
        return web.json_response({"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                                  "filename": upload.filename, "purpose": "batch", "status": "processed"})

    async def _file_content(self, request: web.Request) -> web.Response:
        fid = request.match_info["id"]
        if fid in self.files:
            return web.Response(body=self.files[fid], content_type="application/octet-stream")
        batch_id, _, kind = fid.removeprefix("file-").rpartition("-")
        batch = self.batches.get(batch_id)
        if batch is None or self._progress(batch) < 1:
            return web.json_response({"error": {"message": "no such file"}}, status=404)
        lines = [self._openai_line(cid, r) for cid, r in self._finish(batch).items()
                 if (r["kind"] == "succeeded") == (kind == "output")]
        if kind != "output":  # the fault is the output file's
            return web.Response(body="".join(json.dumps(x) + "\n" for x in lines).encode(),
                                content_type="application/octet-stream")
        rows = self._finish(batch)
        return web.Response(body=self._file(batch, lines, lambda line, text: self._openai_line(
            line["custom_id"], {**rows[line["custom_id"]], "text": text})), content_type="application/octet-stream")

    def _openai_line(self, cid: str, r: dict[str, Any]) -> dict[str, Any]:
        line: dict[str, Any] = {"id": f"batch_req_{cid[:12]}", "custom_id": cid, "response": None, "error": None}
        if r["kind"] == "succeeded":
            line["response"] = {"status_code": 200, "request_id": "req-loop",
                                "body": self.server._completion(r["body"], r["text"])}
        elif r["kind"] == "refused":
            line["response"] = {"status_code": r["status"], "request_id": "req-loop", "body": r["error"]}
        elif r["kind"] == "errored":
            line["response"] = {"status_code": 500, "request_id": "req-loop",
                                "body": {"error": {"message": "boom (loopback batch row)", "type": "server_error"}}}
        else:
            line["error"] = {"code": f"batch_{r['kind']}", "message": f"this request was {r['kind']} (loopback)"}
        return line

    async def _openai_create(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        data = self.files.get(body.get("input_file_id", ""))
        if data is None:
            return web.json_response({"error": {"message": "no such input file"}}, status=400)
        rows = []
        for raw in data.decode().splitlines():
            if raw.strip():
                line = json.loads(raw)
                rows.append((line["custom_id"], line["body"]))

        def make() -> dict[str, Any]:
            batch = self._new("openai", rows)
            batch.metadata = body.get("metadata")
            return self._openai_batch(batch)

        return await self._create(request, make)

    def _openai_batch(self, batch: _Batch) -> dict[str, Any]:
        p = self._progress(batch)
        n = len(batch.rows)
        counts = {"total": n, "completed": 0, "failed": 0}
        output = error = None
        if p >= 1:
            results = self._finish(batch)
            ok = sum(r["kind"] == "succeeded" for r in results.values())
            counts.update(completed=ok, failed=n - ok)
            status = "cancelled" if batch.cancelled else "expired" if batch.expire else "completed"
            output, error = f"file-{batch.id}-output", f"file-{batch.id}-error"
        else:
            counts["completed"] = int(n * p)
            status = "cancelling" if batch.cancelled else "validating" if p < 1 / 3 else \
                "in_progress" if p < 2 / 3 else "finalizing"
        return {"id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions", "completion_window": "24h",
                "created_at": int(batch.created), "input_file_id": "file-loop", "status": status,
                "output_file_id": output, "error_file_id": error, "request_counts": counts, "errors": None,
                "metadata": batch.metadata}

    async def _openai_list(self, request: web.Request) -> web.Response:
        data = [self._openai_batch(b) for b in self.batches.values() if b.wire == "openai"]
        return web.json_response({"object": "list", "data": data[::-1], "has_more": False})

    async def _openai_retrieve(self, request: web.Request) -> web.Response:
        return web.json_response(self._openai_batch(self._get(request)))

    async def _openai_cancel(self, request: web.Request) -> web.Response:
        batch = self._get(request)
        if self._progress(batch) < 1:
            batch.cancelled = True
            self.cancels += 1
        return web.json_response(self._openai_batch(batch))

    # ------------------------------------------------------------------ Anthropic
    async def _anthropic_create(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        rows = [(r["custom_id"], r["params"]) for r in body.get("requests") or []]
        return await self._create(request, lambda: self._anthropic_batch(self._new("anthropic", rows), request))

    def _anthropic_batch(self, batch: _Batch, request: web.Request) -> dict[str, Any]:
        p = self._progress(batch)
        created = datetime.fromtimestamp(batch.created, timezone.utc)
        counts = {"processing": len(batch.rows), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        ended = p >= 1
        if ended:
            kinds = collections.Counter(r["kind"] for r in self._finish(batch).values())
            counts = {"processing": 0, "succeeded": kinds["succeeded"], "errored": kinds["errored"] + kinds["refused"],
                      "canceled": kinds["cancelled"], "expired": kinds["expired"]}
        url = f"{request.scheme}://{request.host}/v1/messages/batches/{batch.id}/results"
        return {"id": batch.id, "type": "message_batch",
                "processing_status": "ended" if ended else "canceling" if batch.cancelled else "in_progress",
                "request_counts": counts, "created_at": created.isoformat(),
                "expires_at": (created + timedelta(hours=24)).isoformat(),
                "ended_at": datetime.now(timezone.utc).isoformat() if ended else None,
                "cancel_initiated_at": None, "archived_at": None, "results_url": url if ended else None}

    async def _anthropic_list(self, request: web.Request) -> web.Response:
        data = [self._anthropic_batch(b, request) for b in self.batches.values() if b.wire == "anthropic"]
        return web.json_response({"data": data[::-1], "has_more": False,
                                  "first_id": data[-1]["id"] if data else None, "last_id": data[0]["id"] if data else None})

    async def _anthropic_retrieve(self, request: web.Request) -> web.Response:
        return web.json_response(self._anthropic_batch(self._get(request), request))

    async def _anthropic_cancel(self, request: web.Request) -> web.Response:
        batch = self._get(request)
        if self._progress(batch) < 1:
            batch.cancelled = True
            self.cancels += 1
        return web.json_response(self._anthropic_batch(batch, request))

    async def _anthropic_results(self, request: web.Request) -> web.Response:
        batch = self._get(request)
        if self._progress(batch) < 1:
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "batch still processing"}}, status=400)
        rows = self._finish(batch)
        lines = [self._anthropic_line(cid, r) for cid, r in rows.items()]
        return web.Response(body=self._file(batch, lines, lambda line, text: self._anthropic_line(
            line["custom_id"], {**rows[line["custom_id"]], "text": text})), content_type="application/binary")

    def _anthropic_line(self, cid: str, r: dict[str, Any]) -> dict[str, Any]:
        if r["kind"] == "succeeded":
            result = {"type": "succeeded", "message": anthropic_message(
                r["body"], r["text"], self.server.finish_reason, self.server.count(r["messages"], r["text"]),
                self.server.total, self.server.usage)}
        elif r["kind"] == "refused":
            result = {"type": "errored", "error": r["error"]}
        elif r["kind"] == "errored":
            result = {"type": "errored", "error": {"type": "error", "error": {
                "type": "api_error", "message": "boom (loopback batch row)"}}}
        else:
            result = {"type": "canceled" if r["kind"] == "cancelled" else "expired"}
        return {"custom_id": cid, "result": result}


    # ------------------------------------------------------------------ Gemini
    async def _google_create(self, request: web.Request) -> web.StreamResponse:
        body = (await request.json()).get("batch") or {}
        requests = ((body.get("inputConfig") or {}).get("requests") or {}).get("requests") or []
        rows = [(r["metadata"]["custom_id"], r["request"]) for r in requests]

        def make() -> dict[str, Any]:
            batch = self._new("google", rows)
            batch.model, batch.display_name = f"models/{request.match_info['model']}", body.get("displayName")
            return self._google_batch(batch)

        return await self._create(request, make)

    def _google_batch(self, batch: _Batch) -> dict[str, Any]:
        """The batch as Gemini's operation says it: its state, and once ended its inlined responses
        (a row cancelled or expired has none)."""
        p = self._progress(batch)
        n = len(batch.rows)
        stats = {"requestCount": str(n), "pendingRequestCount": str(n)}
        stamp = datetime.fromtimestamp(batch.created, timezone.utc).isoformat()
        metadata: dict[str, Any] = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
                                    "model": batch.model, "displayName": batch.display_name, "name": batch.id,
                                    "createTime": stamp, "updateTime": stamp, "batchStats": stats}
        if p >= 1:
            rows = self._finish(batch)
            responses = [self._google_line(cid, r, batch.model) for cid, r in rows.items()
                         if r["kind"] not in ("cancelled", "expired")]
            ok = sum("response" in r for r in responses)
            stats.update(pendingRequestCount="0", successfulRequestCount=str(ok), failedRequestCount=str(n - ok))
            metadata["state"] = ("BATCH_STATE_CANCELLED" if batch.cancelled else "BATCH_STATE_EXPIRED" if batch.expire
                                 else "BATCH_STATE_SUCCEEDED")
            metadata["endTime"] = datetime.now(timezone.utc).isoformat()
            metadata["output"] = {"inlinedResponses": {"inlinedResponses": responses}}
        else:
            metadata["state"] = "BATCH_STATE_PENDING" if p < 1 / 3 else "BATCH_STATE_RUNNING"
        return {"name": batch.id, "metadata": metadata, "done": p >= 1}

    def _google_line(self, cid: str, r: dict[str, Any], model: str) -> dict[str, Any]:
        line: dict[str, Any] = {"metadata": {"custom_id": cid}}
        if r["kind"] == "succeeded":
            line["response"] = gemini_reply(model.removeprefix("models/"), r["text"], self.server.finish_reason,
                                            self.server.count(r["messages"], r["text"]), self.server.total,
                                            self.server.usage)
        elif r["kind"] == "refused":  # google.rpc.Code INVALID_ARGUMENT
            line["error"] = {"code": 3, "message": r["error"]["error"]["message"]}
        else:  # INTERNAL
            line["error"] = {"code": 13, "message": "boom (loopback batch row)"}
        return line

    async def _google_list(self, request: web.Request) -> web.Response:
        data = [self._google_batch(b) for b in self.batches.values() if b.wire == "google"]
        return web.json_response({"operations": data[::-1]})

    async def _google_get(self, request: web.Request) -> web.Response:
        return web.json_response(self._google_batch(self._get(request, "batches/")))

    async def _google_cancel(self, request: web.Request) -> web.Response:
        batch = self._get(request, "batches/")
        if self._progress(batch) < 1:
            batch.cancelled = True
            self.cancels += 1
        return web.json_response({})
