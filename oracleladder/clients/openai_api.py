"""OpenAI's API through its official SDK: chat completions (``OpenAIProvider``, also the ``sdk``
transport to an OpenAI-compatible server) and the Batch API (``OpenAIBatchAPI``); and the openai/
wire's declaration (``WIRE``), whose other transport is bare aiohttp (``compatible``)."""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_module
from . import batch_api
from .base import ChatRequest, ChatResult
from .compatible import OPENAI_URL, REFUSABLE, OpenAIRawProvider, chat_body, chat_result, not_found
from .errors import ProviderError, ServerError, classify_status, sdk_error
from .providers import connection_key, endpoint_of
from .registry import Connection, ProviderModes, ProviderSpec
from .structured import openai_reply
from .wire import Refusals, answer

if TYPE_CHECKING:
    import openai
else:  # loaded by the first client that uses it, not by `ladder --help` (1 to 1.6 s on a loaded 2-core machine)
    openai = lazy_module("openai")

INTENT_KEY = "oracleladder_intent"  # the batch metadata naming the intent it was created for


class OpenAIProvider:
    """OpenAI or any OpenAI-compatible server, through the official ``AsyncOpenAI`` SDK on aiohttp."""

    def __init__(self, connection: Connection, *, name: str = "openai") -> None:
        self.name = name
        self.base_url = connection.base_url
        self.endpoint = endpoint_of("openai", connection.base_url)
        key = connection_key("openai", connection)
        self._client = openai.AsyncOpenAI(
            api_key=key or "no-key",  # no key: a placeholder the SDK insists on, never sent (_headers)
            base_url=connection.base_url or OPENAI_URL,  # not the SDK's OPENAI_BASE_URL, nor its key there
            timeout=connection.timeout,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient(timeout=connection.timeout),
        )
        self._refusals = Refusals(name, chat_body, REFUSABLE)
        self._sdk_params = set(inspect.signature(self._client.chat.completions.create).parameters)
        self._headers: dict[str, Any] = {} if key else {"extra_headers": {"Authorization": openai.Omit()}}

    async def complete(self, request: ChatRequest) -> ChatResult:
        status, data, latency = await self._refusals.send_sdk(request, openai, self._send)
        if status >= 400:
            raise classify_status(status, f"{self.name} HTTP {status}")
        return answer(chat_result(data, latency), self.name)

    async def _send(self, body: dict[str, Any]) -> tuple[int, Any, float]:
        """The reply's HTTP status, its JSON and its seconds."""
        # the SDK takes the fields it has no keyword for through extra_body: the same wire
        kwargs = {k: v for k, v in body.items() if k in self._sdk_params}
        extra = {k: v for k, v in body.items() if k not in self._sdk_params}
        t0 = time.perf_counter()
        raw = await self._client.chat.completions.with_raw_response.create(
            **kwargs, extra_body=extra or None, **self._headers)  # None: the SDK's default, none
        return raw.http_response.status_code, json.loads(raw.http_response.content), time.perf_counter() - t0

    async def aclose(self) -> None:
        await self._client.close()


class OpenAIBatchAPI(batch_api.BatchWire):
    """OpenAI's Batch API (JSONL file with purpose "batch", ``/v1/batches``, 24 h window: the
    completion_window it asks)."""

    name = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, connection: Connection) -> None:
        super().__init__(connection)
        key = connection_key("openai", connection)
        # the SDK retries polls and reads; a batch is created once (a retried create could pay twice).
        # No key: a placeholder the SDK insists on, never sent.
        self._client = openai.AsyncOpenAI(api_key=key or "no-key", base_url=connection.base_url or OPENAI_URL,
                                          timeout=connection.timeout, max_retries=3)
        self._h: dict[str, Any] = {} if key else {"extra_headers": {"Authorization": openai.Omit()}}
        self.refusals = Refusals(self.name, chat_body, REFUSABLE)
        self._once = self._client.with_options(max_retries=0)

    def entry(self, custom_id: str, request: ChatRequest) -> dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
                "body": self.refusals.body(request)}

    async def check(self) -> None:
        try:
            await self._client.batches.list(limit=1, **self._h)
        except openai.APIError as e:
            raise self.unavailable(sdk_error(openai, e, self.name)) from None

    async def submit(self, entries: list[dict[str, Any]], intent: str) -> str:
        data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries).encode()
        try:  # an upload that fails makes no batch
            f = await self._client.files.create(file=("batch.jsonl", data), purpose="batch", **self._h)
        except openai.APIError as e:
            raise sdk_error(openai, e, self.name) from None
        try:
            b = await self._once.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                                completion_window="24h", metadata={INTENT_KEY: intent}, **self._h)
        except openai.APIError as e:
            raise batch_api.create_error(sdk_error(openai, e, self.name)) from None
        return b.id

    async def find(self, intent: str, requests: int, at: datetime, known: set[str]) -> str | None:
        """The batch whose metadata names ``intent`` (listed newest first: read back to ``at``)."""
        since = (at - timedelta(seconds=batch_api.CLOCK_SKEW_S)).timestamp()
        try:
            async for b in self._client.batches.list(limit=100, **self._h):
                if b.created_at < since:
                    return None
                if (b.metadata or {}).get(INTENT_KEY) == intent:
                    return b.id
        except openai.APIError as e:
            raise sdk_error(openai, e, self.name) from None
        return None

    async def status(self, batch_id: str) -> batch_api.BatchStatus:
        try:
            b = await self._client.batches.retrieve(batch_id, **self._h)
        except openai.APIError as e:
            raise sdk_error(openai, e, self.name) from None
        c = b.request_counts
        return batch_api.BatchStatus(b.status, c.completed if c else 0, c.failed if c else 0)

    async def results(self, batch_id: str) -> AsyncIterator[batch_api.Row]:
        try:
            b = await self._client.batches.retrieve(batch_id, **self._h)
            files = [f for f in (b.output_file_id, b.error_file_id) if f]
            texts = [(f, (await self._client.files.content(f, **self._h)).text) for f in files]
        except openai.APIError as e:
            raise sdk_error(openai, e, self.name) from None
        for f, text in texts:
            for row in batch_api.read_rows(text, self._outcome, f"openai batch {batch_id} file {f}"):
                yield row

    def _outcome(self, line: dict[str, Any]) -> batch_api.Outcome:
        response, error = line.get("response"), line.get("error")
        if response is None:  # not run: expired, cancelled
            code = (error or {}).get("code", "no response")
            return ServerError(f"openai batch row: {code}: {(error or {}).get('message', '')}")
        status, body = response.get("status_code", 0), response.get("body") or {}
        if status != 200:
            message = (body.get("error") or {}).get("message", "") if isinstance(body, dict) else ""
            if status == 400:
                return batch_api.RowRefused(f"openai batch row HTTP 400: {message}", body)
            return classify_status(status, f"openai batch row HTTP {status}: {message}")
        try:
            return answer(chat_result(body, 0.0), self.name)
        except ProviderError as e:
            return e

    async def cancel(self, batch_id: str) -> None:
        try:
            await self._client.batches.cancel(batch_id, **self._h)
        except openai.APIError as e:
            raise sdk_error(openai, e, self.name) from None

    async def aclose(self) -> None:
        await self._client.close()


def _provider(connection: Connection) -> OpenAIRawProvider | OpenAIProvider:
    """The SDK at OpenAI itself; bare aiohttp at a server of one's own (transport "auto")."""
    raw = connection.transport == "aiohttp" or (connection.transport == "auto" and connection.base_url is not None)
    return (OpenAIRawProvider if raw else OpenAIProvider)(connection)


# How a structured answer is asked for on OpenAI's wire, strongest first ("auto" starts at the first
# and steps down when a server rejects a mode); the wires that speak OpenAI's shape take some of them.
MODES = ProviderModes("OPENAI", {
    "json_schema": ("JSON_SCHEMA", "a JSON-schema response_format"),
    "json_object": ("JSON", "a JSON-object response_format, the schema in the system prompt"),
    "tools": ("TOOLS", "a forced tool call whose parameters are the schema"),
    "md_json": ("MD_JSON", "the schema in the prompt, the JSON in a ```json block"),
}, openai_reply)
# the schema in the prompt alone: for a wire that takes nothing but messages (a Python function, inspect_ai)
PROMPT_MODES = ProviderModes("OPENAI", {"md_json": MODES.modes["md_json"]}, openai_reply)
WIRE = ProviderSpec("openai", _provider, MODES, key_env=("OPENAI_API_KEY",), base_url=OPENAI_URL,
                    base_url_env="OPENAI_BASE_URL", call_path="/chat/completions",
                    batch=OpenAIBatchAPI, not_found=not_found)
