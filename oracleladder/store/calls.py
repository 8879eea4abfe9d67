"""The call cache: ``calls`` (one row per call: its result or error) and ``requests`` (each prompt's
request body once, for all its calls).

The K samples of one prompt are K calls whose requests differ only in their sampling index ``k``;
the request body is stored once, without ``k``, under the sha256 of its JSON, and each call keeps
its ``k`` and the id of its body. A call's key is stored as its 32 bytes (``rows.pack_key``).
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from pydantic import BaseModel

from ..schemas.calls import ChatRequest, ChatResult, served_identity
from .core import Core, kept
from .rows import now, pack, pack_key, unpack, unpack_key, where


class CallRecord(BaseModel):
    """A row of the calls table, successful or not."""

    key: str
    provider: str
    model: str
    request: dict[str, Any]
    result: ChatResult | None
    error: str | None
    run_id: str | None
    created_at: str


def request_parts(request: ChatRequest) -> tuple[bytes, str | bytes, int]:
    """A request as stored: the digest and (packed) body of the request shared by its K calls,
    and this call's ``k``."""
    return *_shared(request.model_dump_json(exclude={"k"})), request.k


@functools.lru_cache(maxsize=64)  # the K calls of a prompt, asked together, pack their one body once
def _shared(body: str) -> tuple[bytes, str | bytes]:
    """A request body's digest and its packed text."""
    return hashlib.sha256(body.encode()).digest(), pack(body)


@functools.lru_cache(maxsize=1)  # the migration asks for the three parts of one row in turn
def _stored_parts(request: str | bytes) -> tuple[bytes, str | bytes, int]:
    """The parts of a request as schema v8 and earlier stored it (whole, as JSON)."""
    data = json.loads(unpack(request))
    k = int(data.pop("k", 0))
    return *_shared(json.dumps(data, separators=(",", ":"), ensure_ascii=False)), k


def stored_request_digest(request: str | bytes) -> bytes:
    return _stored_parts(request)[0]


def stored_request_body(request: str | bytes) -> str | bytes:
    return _stored_parts(request)[1]


def stored_request_k(request: str | bytes) -> int:
    return _stored_parts(request)[2]


@functools.lru_cache(maxsize=1)  # the migration reads one body twice in turn: is it keyed by URL, its key
def _stored_body(body: str | bytes) -> dict[str, Any]:
    return json.loads(unpack(body))


def asked_at(body: str | bytes) -> str | None:
    """The server a call stored before schema v13 was keyed by (its request's ``endpoint``), or None:
    the provider's own API, whose call keys stay."""
    return _stored_body(body).get("endpoint")


def rekeyed(body: str | bytes, k: int, name: str) -> str | bytes:
    """The key (stored, 32 bytes) of a call stored before schema v13 at a server other than the
    provider's own: its request named by ``name`` (the user's provider/model) and not by the URL."""
    return pack_key(ChatRequest(**_stored_body(body), k=k, name=name).key())


def identity_rekeyed(body: str | bytes, k: int, key: str | bytes, names: str | None = None) -> str | bytes | None:
    """The key (stored) of a call stored before v21 that named its model as a server listed it, a weights
    file by its path as typed (``./m.gguf``, ``/models/m.gguf``): keyed again by the model's identity
    (`served_identity`: the file's name), as a call names it since. ``names``: for a body of before v13
    (its server's URL in it, no name: v15 keyed it by the user's name of the model, which the body does
    not hold), a JSON array of the names v15 may have keyed it by, each tried. None where the model is no
    path, or where the stored body (with none of ``names``) does not give the call's key (its key stays)."""
    request = _stored_body(body)
    model = request.get("model")
    if not isinstance(model, str) or served_identity(model) == model:
        return None
    for name in [request.get("name")] if names is None else json.loads(names):
        try:
            call = ChatRequest(**{**request, "name": name}, k=k)
        except ValueError:
            continue
        if pack_key(call.key()) == key:
            return pack_key(call.model_copy(update={"model": served_identity(model)}).key())
    return None


# the prompt the structured mode md_json wrapped its schema in before v19, after the system prompt
_MD_JSON_BEFORE = ("\n\nAnswer with one JSON object matching this JSON schema (an instance of it, not the schema), "
                   "in a ```json block:\n")


def _logical(request: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A structured call's request as the code before v19 stored it (its body: the schema where its
    mode put it) as its logical request: its mode's name and the request without the mode's part,
    with its schema. None for a call that is not structured."""
    params = dict(request.get("params") or {})
    messages = list(request.get("messages") or [])
    fmt, tools = params.pop("response_format", None), params.pop("tools", None)
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        mode, schema = "json_schema", fmt["json_schema"]["schema"]
    elif isinstance(fmt, dict) and fmt.get("type") == "json_object" and "schema" in fmt:
        mode, schema = "json_object", fmt["schema"]
    elif isinstance(tools, list) and params.pop("tool_choice", None) is not None:
        mode, schema = "tools", tools[0]["function"]["parameters"]
    else:
        system = messages[0].get("content", "") if messages and messages[0].get("role") == "system" else ""
        at = ("\n\n" + system).rfind(_MD_JSON_BEFORE)
        if fmt is not None or tools is not None or at < 0:
            return None
        mode, schema = "md_json", json.loads(("\n\n" + system)[at + len(_MD_JSON_BEFORE):])
        if at == 0:  # the mode's own system message
            messages.pop(0)
        else:
            messages[0] = {**messages[0], "content": system[:at - 2]}
    return mode, {**request, "params": params, "messages": messages, "response_schema": schema}


def structured_rekeyed(body: str | bytes, k: int, name: str | None) -> str | bytes | None:
    """The key (stored) of a structured call stored before v19, keyed then by its body: keyed again
    by its logical request (``ChatRequest.key``); ``name``: its model's name where the body has none
    (a call at a server, stored before v15). None for a call that is not structured (its key stays)."""
    logical = _logical(_stored_body(body))
    if logical is None:
        return None
    mode, request = logical
    request.pop("endpoint", None)
    if name is not None:
        request["name"] = name
    return pack_key(ChatRequest(**request, k=k, mode=mode).key())


# what each kind of run named the model it called (its config's field), for the migration to v13
RUN_MODEL_FIELD = {"probe": "student", "compile": "teacher", "compile-primitives": "teacher", "audit-judge": "judge"}


def run_model(kind: str, config: str) -> str | None:
    """The user's name of the model a stored run called (None for a run that called none)."""
    field = RUN_MODEL_FIELD.get(kind)
    data = json.loads(config) if field else None
    return data.get(field) if isinstance(data, dict) else None


_PUT_REQUEST = "INSERT INTO requests (digest, body) VALUES (?, ?) ON CONFLICT(digest) DO NOTHING"
_PUT_CALL = """
INSERT INTO calls (key, provider, model, request_id, k, response, tokens_in, tokens_out, latency_s,
                   finish_reason, error, run_id, created_at)
VALUES (?, ?, ?, (SELECT id FROM requests WHERE digest = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(key) DO UPDATE SET
    provider = excluded.provider, model = excluded.model, request_id = excluded.request_id,
    k = excluded.k, response = excluded.response, tokens_in = excluded.tokens_in,
    tokens_out = excluded.tokens_out, latency_s = excluded.latency_s,
    finish_reason = excluded.finish_reason, error = excluded.error, run_id = excluded.run_id,
    created_at = excluded.created_at
WHERE calls.response IS NULL
"""
# the end of this store's claim on a call (claims.py): in the transaction that stores the call
_RELEASE = "DELETE FROM claims WHERE key = ? AND owner = ?"
_SELECT = """
SELECT c.key, c.provider, c.model, q.body AS request, c.k, c.response, c.tokens_in, c.tokens_out,
       c.latency_s, c.finish_reason, c.error, c.run_id, c.created_at
FROM calls c JOIN requests q ON q.id = c.request_id
"""


def release_statement(key: str, claimer: str) -> tuple[str, tuple[str | bytes, str]]:
    """The statement that ends ``claimer``'s claim on the call ``key``, and its parameters."""
    return _RELEASE, (pack_key(key), claimer)


_IDENTITIES = "SELECT spelled, calls FROM call_identities WHERE provider = ? AND identity = ? ORDER BY spelled"


class CallsTable(Core):
    async def spelled_before(self, provider: str, identity: str) -> dict[str, int]:
        """The calls of a served model that were stored before calls named it by its identity (v21), by the
        spelling they were stored under (its path as a server listed it): what now answers as ``identity``."""
        return {r["spelled"]: r["calls"] for r in await self._fetch(_IDENTITIES, (provider, identity))}

    async def get_call(self, key: str) -> ChatResult | None:
        """The stored result of a successful call, or None (failed calls are never served)."""
        hit = self._hits.get(key)
        if hit is not None and hit[0] is not None:
            full = hit[0]
        else:
            self._check_open()
            row = self._reader.execute(
                "SELECT response, tokens_in, tokens_out, latency_s, finish_reason FROM calls "
                "WHERE key = ? AND response IS NOT NULL", (pack_key(key),)
            ).fetchone()
            if row is None:
                return None
            full = unpack(row["response"])
            hit = self._hits[key] = (kept(full), row["tokens_in"], row["tokens_out"], row["latency_s"],
                                     row["finish_reason"])
        _, tokens_in, tokens_out, latency_s, finish_reason = hit
        return ChatResult(text=full, tokens_in=tokens_in, tokens_out=tokens_out, latency_s=latency_s,
                          finish_reason=finish_reason)

    def cached(self, key: str) -> bool:
        """Whether a successful result for ``key`` is known (memory only, no I/O)."""
        return key in self._hits

    async def put_call(self, request: ChatRequest, result: ChatResult | None, *,
                       error: str | None = None, run_id: str | None = None,
                       wait: bool = True) -> None:
        """Store one call: a result, or (``result=None``) its error, and end this store's claim on
        it. A stored success stays (another process may have stored its answer first, and rollouts
        read it). Returns once committed (``wait=False``: at once)."""
        if result is None and error is None:
            error = "no result"
        key = request.key()
        digest, body, k = request_parts(request)
        answer: tuple[str | bytes | None, int, int, float, str | None]  # the response packed, or NULL
        if result is not None:
            self._hits[key] = (kept(result.text), result.tokens_in, result.tokens_out, result.latency_s,
                               result.finish_reason)
            answer = (pack(result.text), result.tokens_in, result.tokens_out, result.latency_s,
                      result.finish_reason)
        else:
            answer = (None, 0, 0, 0.0, None)
        params = (pack_key(key), request.provider, request.model, digest, k, *answer, error, run_id, now())
        self._claimed.discard(key)
        release, mine = release_statement(key, self._claimer)
        await self._submit_all((_PUT_REQUEST, _PUT_CALL, release), ((digest, body), params, mine), wait)

    async def get_call_record(self, key: str) -> CallRecord | None:
        """The full row of a call, failed or not."""
        rows = await self._fetch(_SELECT + " WHERE c.key = ?", (pack_key(key),))
        return _record(rows[0]) if rows else None

    async def calls(self, *, run_id: str | None = None, errors_only: bool = False) -> list[CallRecord]:
        sql, params = where({"c.run_id": run_id}, *(["c.response IS NULL"] if errors_only else []))
        return [_record(r) for r in await self._fetch(_SELECT + sql + " ORDER BY c.rowid", params)]

    async def call_count(self, *, successful_only: bool = False) -> int:
        """Calls stored (committed), all of them or only the successful ones."""
        sql, params = where({}, *(["response IS NOT NULL"] if successful_only else []))
        return int((await self._fetch("SELECT COUNT(*) FROM calls" + sql, params))[0][0])


def _record(r: Any) -> CallRecord:
    result = None
    if r["response"] is not None:
        result = ChatResult(text=unpack(r["response"]), tokens_in=r["tokens_in"], tokens_out=r["tokens_out"],
                            latency_s=r["latency_s"], finish_reason=r["finish_reason"])
    request = {**json.loads(unpack(r["request"])), "k": r["k"]}
    return CallRecord(key=unpack_key(r["key"]), provider=r["provider"], model=r["model"], request=request,
                      result=result, error=r["error"], run_id=r["run_id"], created_at=r["created_at"])
