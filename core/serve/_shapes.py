"""What the server sends: Chat Completions responses, their streamed chunks, and errors.

The shapes follow the OpenAI API closely enough that the `openai` client parses them into its
own types, streamed or not.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Answer", "ApiError", "add_usage", "call_id", "chunks", "completion", "sse"]

_PIECE = 256
"""Characters per streamed text delta."""
_NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


class ApiError(Exception):
    """An error the client receives as an OpenAI-style error response."""

    def __init__(self, status: int, message: str, *, kind: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param,
                          "code": self.code}}


def call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass
class Answer:
    """The assistant turn to send back, however it was reached."""

    model: str
    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Chat Completions tool calls: `{"id", "type": "function", "function": {...}}`."""
    reasoning: str | None = None
    """The model's reasoning, sent as `reasoning_content` (the field reasoning APIs use)."""
    finish_reason: str = "stop"
    usage: dict[str, int] | None = None
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex[:24]}")
    created: int = field(default_factory=lambda: int(time.time()))


def completion(answer: Answer) -> dict[str, Any]:
    """The `chat.completion` object."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.content, "refusal": None}
    if answer.reasoning:
        message["reasoning_content"] = answer.reasoning
    if answer.tool_calls:
        message["tool_calls"] = answer.tool_calls
    body: dict[str, Any] = {
        "id": answer.id, "object": "chat.completion", "created": answer.created,
        "model": answer.model, "choices": [{"index": 0, "message": message, "logprobs": None,
                                            "finish_reason": answer.finish_reason}]}
    if answer.usage is not None:
        body["usage"] = answer.usage
    return body


def _pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), _PIECE):
        yield text[start:start + _PIECE]


def chunks(answer: Answer, include_usage: bool = False) -> Iterator[dict[str, Any]]:
    """The same answer as `chat.completion.chunk`s, in the order the API streams them."""
    head = {"id": answer.id, "object": "chat.completion.chunk", "created": answer.created,
            "model": answer.model}
    if include_usage:
        head["usage"] = None  # on every chunk but the last, as the API does

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(answer.reasoning or ""):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(answer.content or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(answer.tool_calls):
        function = call["function"]
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": function["name"], "arguments": ""}}]})
        for piece in _pieces(function["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, answer.finish_reason)
    if include_usage:
        yield {**head, "choices": [], "usage": answer.usage or _NO_USAGE}


def add_usage(total: dict[str, int] | None, more: Any) -> dict[str, int] | None:
    """Token counts summed over the upstream calls one answer took."""
    if not isinstance(more, dict):
        return total
    out = dict(total or _NO_USAGE)
    for key in _NO_USAGE:
        value = more.get(key)
        if isinstance(value, int):
            out[key] += value
    return out


def sse(payload: dict[str, Any] | str) -> bytes:
    """One server-sent event."""
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return f"data: {data}\n\n".encode()
