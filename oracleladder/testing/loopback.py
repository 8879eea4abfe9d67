"""A real aiohttp HTTP server on 127.0.0.1 speaking the OpenAI chat-completions
(``POST /v1/chat/completions``), Anthropic messages (``POST /v1/messages``) and Gemini generateContent
(``POST /v1beta/models/{model}:generateContent``, and ``/v1/...``) wire formats, for tests and benchmarks. Answers come from a script; latency and faults are injectable; requests are counted.

Use it three ways:

* ``async with LoopbackServer(script=...) as srv:`` inside a running loop;
* ``with LoopbackServer(...) as srv:`` runs it in a background thread (sync tests, benchmarks);
* ``python -m oracleladder.testing.loopback --port P --latency 0.1`` as its own process
  (``processes.spawn`` starts one and returns its port; ``srv.serve()`` runs a scripted server as a
  process's main).

The reply bodies of each wire are built in ``wires``, the faults it answers with are ``faults.Faults``.

The OpenAI, Anthropic and Gemini batch APIs are served too (``oracleladder.testing.batches``).

``GET /stats`` returns the counters as JSON, ``POST /reset`` zeroes them. It always stops by itself
after ``max_lifetime`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import os
import random
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .batches import LoopbackBatches
from .faults import Faults, Refuse
from .wires import (
    anthropic_message,
    anthropic_messages,
    chat_completion,
    gemini_messages,
    gemini_reply,
    last_user,
    ntok,
)

# an answer of None is a null content (an empty content list on the Anthropic wire)
Script = (Callable[[list[dict[str, Any]], dict[str, Any]], str | None] | dict[str, str | None]
          | list[str | None] | None)


class LoopbackServer:
    def __init__(
        self,
        script: Script = None,
        *,
        latency: float = 0.0,
        faults: Faults | None = None,
        port: int = 0,
        host: str = "127.0.0.1",
        api_key: str | None = None,
        seed: int = 0,
        max_lifetime: float = 300.0,
        refusing_models: tuple[str, ...] = (),
        finish_reason: str = "stop",
        echo_key: bool = False,
        slots: int | None = None,
        unsupported_fields: tuple[str, ...] = (),
        batch_delay: float = 0.5,
        batch_errors: float = 0.0,
        expire_batches: int = 0,
        lost_create: str | None = None,
        stuck_batches: int = 0,
        results_fault: str | None = None,
        prompt_tokens: float = 1.0,
        usage: bool = True,
        cut_at_budget: bool = False,
        served: str | None = None,
    ) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the loopback server binds loopback addresses only")
        self.script = script
        self._queue = collections.deque(script) if isinstance(script, list) else None
        self.latency = latency
        self.faults = faults or Faults()
        self.host = host
        self.port = port
        self.api_key = api_key  # if set, requests with another key get 401
        self.echo_key = echo_key  # that 401 quotes the key it got, as some gateways do
        self.slots = slots  # if set, GET /props says total_slots as llama.cpp's server does
        self.served = served  # if set, GET /v1/models lists this one model, as llama.cpp's server lists its GGUF
        self.rng = random.Random(seed)
        self.max_lifetime = max_lifetime
        # models (by name prefix) that refuse parameters as the newest do, with an HTTP 400 in their
        # provider's words: OpenAI's reasoning models max_tokens, and temperature or top_p other
        # than 1; Anthropic's newest temperature, top_p and top_k
        self.refusing_models = refusing_models
        self.finish_reason = finish_reason  # OpenAI's word; "length" is "max_tokens" on Anthropic's wire
        # top-level body fields this server does not take (HTTP 400 naming the field), as a server
        # without response_format or tools support answers
        self.unsupported_fields = unsupported_fields
        # what the server counts and bills: prompt tokens at ``prompt_tokens`` times the 4 characters a
        # token of _ntok (a tokenizer that cuts finer); ``usage=False`` bills them but sends no usage
        self.prompt_tokens = prompt_tokens
        self.usage = usage
        # an answer longer than the request's max_tokens ends there, finish reason "length", as a real
        # server's does (OpenAI's wire)
        self.cut_at_budget = cut_at_budget
        # the batch APIs: batches end after batch_delay s; a batch_errors fraction of rows errors on
        # its first submission; the first expire_batches batches expire with half their rows done, the
        # first stuck_batches never end; the first batch create meets the fault lost_create
        # (batches.LOST_CREATES, batches.NOT_CREATED); the first batch's results file has the fault
        # results_fault (batches.RESULTS_FAULTS)
        self.batches = LoopbackBatches(self, delay=batch_delay, errors=batch_errors, expire=expire_batches,
                                       lost_create=lost_create, stuck=stuck_batches, results_fault=results_fault)
        self.reset()
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_evt: asyncio.Event | None = None
        self._started = threading.Event()
        self._lifetime_handle: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ counters
    def reset(self) -> None:
        self.total = 0
        self.faulted = 0
        self.by_kind: collections.Counter[str] = collections.Counter()
        self.by_body: collections.Counter[str] = collections.Counter()
        self.by_prompt: collections.Counter[str] = collections.Counter()
        self.ok_by_prompt: collections.Counter[str] = collections.Counter()
        self.inflight = 0
        self.max_inflight = 0  # most chat requests at once
        self.credentials: list[str | None] = []  # each request's Authorization or x-api-key header, as sent
        self.billed: list[tuple[int, int]] = []  # (prompt, answer) tokens of each answer given (a batch row's once)
        self.batches.reset()

    def stats(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "faulted": self.faulted,
            "ok": self.total - self.faulted,
            "by_kind": dict(self.by_kind),
            "distinct_bodies": len(self.by_body),
            "max_per_body": max(self.by_body.values(), default=0),
            "ok_by_prompt": dict(self.ok_by_prompt),
            "by_prompt": dict(self.by_prompt),
            "max_inflight": self.max_inflight,
            "billed": [list(b) for b in self.billed],
            **self.batches.stats(),
        }

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    @property
    def google_base_url(self) -> str:
        return self.url

    # ------------------------------------------------------------------ answering
    def answer(self, messages: list[dict[str, Any]], body: dict[str, Any]) -> str | None:
        s = self.script
        if self._queue is not None:
            return self._queue.popleft() if self._queue else "EMPTY QUEUE"
        if callable(s):
            return s(messages, body)
        prompt = last_user(messages)
        if isinstance(s, dict):
            for sub, ans in s.items():
                if sub in prompt:
                    return ans
            return s.get("*", "no scripted answer")
        return "echo: " + prompt

    def _answer(self, messages: list[dict[str, Any]], body: dict[str, Any]) -> str | None | web.Response:
        """The script's answer, or the HTTP error it chose by raising Refuse."""
        try:
            return self.answer(messages, body)
        except Refuse as refused:
            self.faulted += 1
            self.by_kind[str(refused.status)] += 1
            return web.json_response({"error": {"type": "invalid_request_error" if refused.status < 500 else
                                                "server_error", "message": refused.message}}, status=refused.status)

    async def _common(self, request: web.Request, kind: str) -> tuple[dict[str, Any] | None, web.StreamResponse | None]:
        raw = await request.read()
        self.total += 1
        n = self.total
        try:
            body = json.loads(raw)
        except ValueError:
            self.faulted += 1
            return None, web.json_response({"error": {"message": "invalid JSON body"}}, status=400)
        self.by_body[hashlib.sha1(raw).hexdigest()] += 1
        self.credentials.append(request.headers.get("Authorization") or request.headers.get("x-api-key")
                                or request.headers.get("x-goog-api-key") or None)
        self.by_prompt[last_user(body.get("messages") or [])] += 1
        if self.api_key is not None:
            got = (request.headers.get("x-api-key") or request.headers.get("x-goog-api-key")
                   or request.headers.get("Authorization", "").removeprefix("Bearer "))
            if got != self.api_key:
                self.faulted += 1
                self.by_kind["401"] += 1
                message = f"invalid api key {got!r}" if self.echo_key else "invalid api key"
                return None, web.json_response(
                    {"error": {"type": "authentication_error", "message": message}}, status=401)
        fault = self.faults.draw(self.rng, n)
        if self.latency:
            await asyncio.sleep(self.latency)
        if fault is None:
            return body, None
        self.faulted += 1
        self.by_kind[fault] += 1
        if fault == "429":
            headers = {}
            if self.faults.retry_after is not None:
                headers["Retry-After"] = f"{self.faults.retry_after:g}"
            return None, web.json_response(
                {"error": {"type": "rate_limit_error", "message": "rate limited (loopback)"}},
                status=429, headers=headers)
        if fault == "500":
            return None, web.json_response({"error": {"type": "server_error", "message": "boom"}}, status=500)
        if fault == "401":
            return None, web.json_response({"error": {"type": "authentication_error", "message": "bad key"}}, status=401)
        if fault == "hang":
            await asyncio.sleep(self.faults.hang_s)
            return None, web.json_response({"error": {"message": "hung"}}, status=504)
        if fault == "malformed":
            return None, web.Response(body=b'{"id": "x", "choices": [{"mess', content_type="application/json")
        if fault == "drop":
            if request.transport is not None:
                request.transport.abort()
            return None, web.Response(status=500)
        raise AssertionError(fault)

    def _refusal(self, body: dict[str, Any], kind: str) -> web.Response | None:
        """A refusing model's HTTP 400 for the first parameter it does not take (kind: the wire)."""
        field = next((f for f in self.unsupported_fields if f in body), None)
        if field is not None:
            self.faulted += 1
            self.by_kind["400"] += 1
            return web.json_response({"error": {"message": f"unsupported field '{field}'",
                                                "type": "invalid_request_error"}}, status=400)
        if not self.refusing_models or not str(body.get("model", "")).startswith(self.refusing_models):
            return None
        param: str | None
        if kind == "anthropic":
            param = next((p for p in ("temperature", "top_p", "top_k") if p in body), None)
            if param is None:
                return None
            error = {"type": "invalid_request_error", "message": f"`{param}` is deprecated for this model."}
            payload: dict[str, Any] = {"type": "error", "error": error}
        else:
            if "max_tokens" in body:
                param, code = "max_tokens", "unsupported_parameter"
                message = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                           "Use 'max_completion_tokens' instead.")
            else:
                param = next((p for p in ("temperature", "top_p") if p in body and body[p] != 1), None)
                if param is None:
                    return None
                code = "unsupported_value"
                message = (f"Unsupported value: '{param}' does not support {body[param]} with this model. "
                           "Only the default (1) value is supported.")
            payload = {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}
        self.faulted += 1
        self.by_kind["400"] += 1
        return web.json_response(payload, status=400)

    async def _wire(self, request: web.Request, kind: str, messages_of: Callable[[dict[str, Any]], list[dict[str, Any]]],
                    reply: Callable[[dict[str, Any], list[dict[str, Any]], str | None], dict[str, Any]]) -> web.StreamResponse:
        """One chat request on ``kind``'s wire: counted, faulted or refused as asked, else answered by the
        script, billed, and replied to with ``reply(body, messages, answer)``."""
        body, err = await self._common(request, kind)
        if err is not None:
            return err
        assert body is not None
        refusal = None if kind == "google" else self._refusal(body, kind)  # Gemini's wire: no refusing models
        if refusal is not None:
            return refusal
        messages = messages_of(body)
        text = self._answer(messages, body)
        if isinstance(text, web.Response):
            return text
        self.ok_by_prompt[last_user(messages)] += 1
        self.bill(messages, text)
        return web.json_response(reply(body, messages, text))

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._wire(request, "openai", lambda body: body.get("messages") or [],
                                lambda body, messages, text: self._completion(body, text))

    def count(self, messages: list[dict[str, Any]], text: str | None) -> tuple[int, int]:
        """The (prompt, answer) tokens this server counts for answering ``messages`` with ``text``."""
        pin = sum(ntok(str(m.get("content", ""))) for m in messages)
        return int(pin * self.prompt_tokens), ntok(text)

    def bill(self, messages: list[dict[str, Any]], text: str | None) -> None:
        """Count one answer given as billed."""
        self.billed.append(self.count(messages, text))

    def _completion(self, body: dict[str, Any], text: str | None) -> dict[str, Any]:
        """The chat-completions body answering ``body`` with ``text``, cut at its budget where the server does."""
        finish, budget = self.finish_reason, body.get("max_tokens") or body.get("max_completion_tokens")
        if self.cut_at_budget and budget and ntok(text) > budget:
            text, finish = (text or "")[:4 * budget], "length"
        return chat_completion(body, text, finish, self.count(body.get("messages") or [], text), self.total,
                               self.usage)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        return await self._wire(request, "anthropic", anthropic_messages, lambda body, messages, text: anthropic_message(
            body, text, self.finish_reason, self.count(messages, text), self.total, self.usage))

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        model = request.match_info["model"]
        return await self._wire(request, "google", gemini_messages, lambda body, messages, text: gemini_reply(
            model, text, self.finish_reason, self.count(messages, text), self.total, self.usage))

    @web.middleware
    async def _count_inflight(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.method != "POST" or request.path == "/reset":
            return await handler(request)
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            return await handler(request)
        finally:
            self.inflight -= 1

    async def _props(self, request: web.Request) -> web.Response:
        if self.slots is None:
            return web.json_response({"error": {"message": "not found"}}, status=404)
        return web.json_response({"total_slots": self.slots})

    async def _models(self, request: web.Request) -> web.Response:
        if self.served is None:
            return web.json_response({"error": {"message": "not found"}}, status=404)
        return web.json_response({"object": "list", "data": [{"id": self.served, "object": "model",
                                                               "owned_by": "llamacpp"}]})

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    # ------------------------------------------------------------------ lifecycle (async)
    async def start(self) -> LoopbackServer:
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[self._count_inflight])
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post(r"/{version:v1|v1beta}/models/{model:[^/:]+}:generateContent", self._generate)
        self.batches.add_routes(app)
        app.router.add_get("/props", self._props)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/stats", self._stats)
        app.router.add_post("/reset", self._reset)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, backlog=1024, reuse_address=True)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._stop_evt = asyncio.Event()
        self._lifetime_handle = asyncio.get_running_loop().call_later(self.max_lifetime, self._stop_evt.set)
        return self

    async def stop(self) -> None:
        if self._lifetime_handle is not None:
            self._lifetime_handle.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def serve_until_stopped(self) -> None:
        """Start, then run until max_lifetime (or stop_soon())."""
        if self._runner is None:
            await self.start()
        assert self._stop_evt is not None
        await self._stop_evt.wait()
        await self.stop()

    async def __aenter__(self) -> LoopbackServer:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    # ------------------------------------------------------------------ lifecycle (thread)
    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self.start())
            self._started.set()
            loop.run_until_complete(self.serve_until_stopped())
        finally:
            self._started.set()
            loop.close()

    def start_in_thread(self) -> LoopbackServer:
        self._thread = threading.Thread(target=self._thread_main, name="loopback-server", daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("loopback server did not start")
        if self._runner is None:
            raise RuntimeError("loopback server failed to start")
        return self

    def stop_thread(self) -> None:
        if self._loop is not None and self._stop_evt is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._stop_evt.set)
            self._thread.join(10)

    def __enter__(self) -> LoopbackServer:
        return self.start_in_thread()

    def __exit__(self, *exc: Any) -> None:
        self.stop_thread()

    # ------------------------------------------------------------------ lifecycle (a process's main)
    def serve(self, port_file: str | None = None) -> None:
        """Run in this process until ``max_lifetime``; once listening, print the port and write it to
        ``port_file`` (atomically), where a parent process (`processes.spawn`) waits for it."""

        async def run() -> None:
            await self.start()
            print(f"LISTENING {self.port}", flush=True)
            if port_file:
                with open(port_file + ".tmp", "w") as f:
                    f.write(str(self.port))
                os.replace(port_file + ".tmp", port_file)
            await self.serve_until_stopped()

        try:
            import uvloop

            uvloop.install()
        except ImportError:
            pass
        asyncio.run(run())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="OpenAI/Anthropic/Gemini wire-format loopback server")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--p429", type=float, default=0.0)
    ap.add_argument("--p500", type=float, default=0.0)
    ap.add_argument("--hang", type=float, default=0.0)
    ap.add_argument("--malformed", type=float, default=0.0)
    ap.add_argument("--drop", type=float, default=0.0)
    ap.add_argument("--retry-after", type=float, default=0.2)
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--fail-first-kind", default="429")
    ap.add_argument("--fail-after", type=int, default=None, help="every request after the first N fails")
    ap.add_argument("--fail-after-kind", default="500")
    ap.add_argument("--slots", type=int, default=None, help="say this many slots at GET /props (llama.cpp)")
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-lifetime", type=float, default=300.0)
    ap.add_argument("--batch-delay", type=float, default=0.5, help="seconds a batch takes to complete")
    ap.add_argument("--batch-errors", type=float, default=0.0, help="fraction of batch rows erroring once")
    ap.add_argument("--expire-batches", type=int, default=0, help="the first N batches expire half done")
    ap.add_argument("--lost-create", default=None, help="the first batch create's fault: drop, 500, stall "
                    "(the batch is made, its reply lost), 500-none, 400 (no batch made)")
    ap.add_argument("--port-file", default=None, help="write the bound port here once listening")
    a = ap.parse_args(argv)
    faults = Faults(p429=a.p429, p500=a.p500, hang=a.hang, malformed=a.malformed, drop=a.drop,
                    retry_after=a.retry_after, fail_first=a.fail_first, fail_first_kind=a.fail_first_kind,
                    fail_after=a.fail_after, fail_after_kind=a.fail_after_kind)
    srv = LoopbackServer(latency=a.latency, faults=faults, port=a.port, api_key=a.api_key, seed=a.seed,
                         max_lifetime=a.max_lifetime, slots=a.slots, batch_delay=a.batch_delay,
                         batch_errors=a.batch_errors, expire_batches=a.expire_batches, lost_create=a.lost_create)
    srv.serve(a.port_file)


if __name__ == "__main__":
    main()
