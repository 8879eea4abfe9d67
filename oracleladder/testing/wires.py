"""What the loopback server (`loopback.LoopbackServer`) speaks: the providers' reply bodies (OpenAI's chat
completion, Anthropic's message, Gemini's generateContent) built from an answer, and the prompt read out of
each wire's request, with the token count the server bills by (4 characters a token)."""

from __future__ import annotations

import json
import time
from typing import Any


def ntok(s: str | None) -> int:
    return max(1, len(s) // 4) if s else 0  # an empty answer costs nothing


def last_user(messages: list[dict[str, Any]]) -> str:
    """The text of the last user message (the prompt the server counts answers by)."""
    for m in reversed(messages):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):  # text blocks, or a re-ask's tool_result carrying the errors
                return "".join(str(p.get("text") or p.get("content") or "") for p in c if isinstance(p, dict))
            return str(c)
    return ""


def json_object(text: str | None) -> Any:
    """``text`` as JSON, None if it is none."""
    try:
        return json.loads(text or "")
    except ValueError:
        return None


def _with_usage(reply: dict[str, Any], field: str, usage: dict[str, int] | None) -> dict[str, Any]:
    return reply if usage is None else {**reply, field: usage}


def chat_completion(body: dict[str, Any], text: str | None, finish: str, tokens: tuple[int, int], n: int,
                    usage: bool) -> dict[str, Any]:
    """The chat-completions body answering ``body`` with ``text`` (the server's ``n``-th request), its usage
    ``tokens`` (prompt, completion) where the server sends usage."""
    pin, pout = tokens
    message: dict[str, Any] = {"role": "assistant", "content": text}
    forced = body.get("tool_choice")
    if isinstance(forced, dict) and "function" in forced:  # a forced tool call: the answer is its arguments
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call-loop", "type": "function",
            "function": {"name": forced["function"].get("name"), "arguments": text}}]}
    return _with_usage({
        "id": f"chatcmpl-loop{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "loopback"),
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if "tool_calls" in message else finish,
                     "logprobs": None}],
    }, "usage", {"prompt_tokens": pin, "completion_tokens": pout, "total_tokens": pin + pout} if usage else None)


def anthropic_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """An Anthropic request's system prompt and messages as chat messages."""
    messages = list(body.get("messages") or [])
    return [{"role": "system", "content": body["system"]}, *messages] if body.get("system") else messages


def anthropic_message(body: dict[str, Any], text: str | None, finish: str, tokens: tuple[int, int], n: int,
                      usage: bool) -> dict[str, Any]:
    """The Anthropic message answering ``body`` with ``text`` (``finish`` in OpenAI's words)."""
    pin, pout = tokens
    content: list[dict[str, Any]] = [] if text is None else [{"type": "text", "text": text}]
    stop = {"stop": "end_turn", "length": "max_tokens"}.get(finish, finish)
    forced = body.get("tool_choice")
    if isinstance(forced, dict) and forced.get("type") == "tool" and isinstance(json_object(text), dict):
        # a forced tool_use: the answer is its input (a text that is no JSON object stays text)
        content = [{"type": "tool_use", "id": f"toolu_loop{n}", "name": forced.get("name"),
                    "input": json_object(text)}]
        stop = "tool_use" if stop == "end_turn" else stop
    return _with_usage({
        "id": f"msg_loop{n}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "loopback"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
    }, "usage", {"input_tokens": pin, "output_tokens": pout} if usage else None)


def _parts_text(parts: list[dict[str, Any]] | None) -> str:
    """The text of a Gemini content's parts."""
    return "".join(p.get("text", "") for p in parts or [])


def gemini_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Gemini request's system instruction and contents as chat messages."""
    system = body.get("systemInstruction") or {}
    messages = [{"role": "system", "content": _parts_text(system.get("parts"))}] if system else []
    return messages + [{"role": "assistant" if c.get("role") == "model" else "user",
                        "content": _parts_text(c.get("parts"))} for c in body.get("contents") or []]


def gemini_reply(model: str, text: str | None, finish: str, tokens: tuple[int, int], n: int,
                 usage: bool) -> dict[str, Any]:
    """The generateContent reply of ``model`` answering with ``text`` (``finish`` in OpenAI's words)."""
    pin, pout = tokens
    return _with_usage({
        "candidates": [{"content": {"role": "model", "parts": [] if text is None else [{"text": text}]},
                        "finishReason": {"stop": "STOP", "length": "MAX_TOKENS"}.get(finish, finish.upper()),
                        "index": 0}],
        "modelVersion": model, "responseId": f"gen-loop{n}",
    }, "usageMetadata", {"promptTokenCount": pin, "candidatesTokenCount": pout, "totalTokenCount": pin + pout}
        if usage else None)
