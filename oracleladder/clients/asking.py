"""A judge's question: ask for a JSON reply of a pydantic model, and ask once more when the reply is
not one. Every judge and reviewer asks through `ask_json` (the audits' judge and rubric reviewer,
PRIM's primitive and answer judges), each call through the cached client at temperature 0.

Two ways to ask, both read by the structured path's one reader (`structured.Shape.parse`):

- in the client's structured mode (``prompted`` None): the schema sent as the mode sends it, the
  re-ask in the mode's own shape (`StructuredOutputError.reask`), as the compile loop re-asks;
- in the prompt (``prompted``: the JSON format the prompt asks for): the request is the plain chat
  call (its key the one such calls have always had, so the judges' stored calls stay hits), and the
  re-ask shows the reply back with the ``json_reask`` template naming the format.

A reply that is not the model after its re-ask gives no answer, with why; a call that fails for good
gives none either (``failed``: a rerun asks it again); a failure of the endpoint itself (no
connection, a refused key) would fail every call the same way: it propagates.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from ..prompts import load
from .errors import ProviderError, endpoint_failure
from .runner import Client
from .structured import Shape, StructuredOutputError

M = TypeVar("M", bound=BaseModel)
REASK = "json_reask"  # the re-ask of a reply to a prompt that states its JSON


@dataclass
class Answer(Generic[M]):
    """One question's outcome: the reply read (None: no answer), why there is none, the keys of the
    calls made, and whether the call failed for good (nothing to store: a rerun asks again)."""

    reply: M | None
    why: str = ""
    keys: list[str] = field(default_factory=list)
    failed: bool = False


@functools.cache
def _shape(model: type[BaseModel]) -> Shape[Any]:
    return Shape(model)  # its schema made once per model


async def ask_json(client: Client, messages: list[dict[str, Any]], model: type[M], *, max_tokens: int,
                   prompted: str | None = None) -> Answer[M]:
    """``model``'s reply to ``messages``, asked again once (its reply and what is wrong with it shown
    back) when it is not one; ``prompted``: the JSON format the messages ask for (see the module)."""
    keys: list[str] = []
    why = ""
    for _ in range(2):
        request = client.request(messages, temperature=0.0, max_tokens=max_tokens)
        try:
            if prompted is None:
                reply = await client.structured(request, model)
                keys.append(_shape(model).request(request, client.structured_mode).key())
            else:
                keys.append(request.key())
                reply = _shape(model).parse(request, await client.complete(request))
            return Answer(reply, keys=keys)
        except StructuredOutputError as exc:
            if prompted is None:
                keys.append(exc.request.key())
            why = exc.describe()
            messages = [*exc.request.messages, *(exc.reask() if prompted is None else [
                {"role": "assistant", "content": exc.raw},
                {"role": "user", "content": load(REASK).render(format=prompted)}])]
        except ProviderError as exc:
            if endpoint_failure(exc):
                raise
            # a permanent failure, or a call --max-cost refused (BudgetReached): a rerun asks it again
            return Answer(None, f"call failed: {type(exc).__name__}", keys, failed=True)
    return Answer(None, f"not the JSON asked for, twice: {why}", keys)

