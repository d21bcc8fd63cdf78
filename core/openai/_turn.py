"""One model turn in each API: the request to send, and the text and calls that came back.

The loop (openai/_loop.py) is written once over these two adapters, for the Responses API and
for Chat Completions, plain or streamed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._streaming import ToolCallAccumulator
from ._tool_call import Api, to_plain
from ._toolset import ToolIsCode

__all__ = ["Turn", "Wire", "wire_for"]


@dataclass
class Turn:
    """What the model said: items for the history, its text, and the calls to run."""

    items: list[Any]
    text: str
    calls: list[dict[str, Any]] = field(default_factory=list)


def _start(prompt: str | list[Any]) -> list[Any]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [to_plain(item) for item in prompt]


def _joined(*parts: str | None) -> str:
    return "\n\n".join(p for p in parts if p)


class Wire:
    """The adapter interface; `api` names the API."""

    api: Api

    def start(self, prompt: str | list[Any]) -> list[Any]:
        """The history a new conversation starts from (a prompt, or earlier items)."""
        return _start(prompt)

    def method(self, client: Any) -> Callable[..., Any]:
        raise NotImplementedError

    def request(self, toolset: ToolIsCode | None, history: list[Any], model: str,
                create: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def read(self, response: Any) -> Turn:
        raise NotImplementedError

    def read_stream(self, acc: ToolCallAccumulator) -> Turn:
        raise NotImplementedError


class _Responses(Wire):
    api: Api = "responses"

    def method(self, client: Any) -> Callable[..., Any]:
        return client.responses.create

    def request(self, toolset: ToolIsCode | None, history: list[Any], model: str,
                create: dict[str, Any]) -> dict[str, Any]:
        extra = dict(create)
        if toolset is not None:
            extra["instructions"] = _joined(extra.get("instructions"), toolset.instructions)
            extra["tools"] = toolset.tools_for("responses") + list(extra.get("tools") or ())
        return {"model": model, "input": list(history), **extra}

    def _turn(self, items: list[Any]) -> Turn:
        text = "".join(part.get("text") or "" for item in items if item.get("type") == "message"
                       for part in item.get("content") or () if part.get("type") == "output_text")
        calls = [i for i in items if i.get("type") in ("function_call", "custom_tool_call")]
        return Turn(items, text, calls)

    def read(self, response: Any) -> Turn:
        output = to_plain(response).get("output") or []
        return self._turn([to_plain(item) for item in output])

    def read_stream(self, acc: ToolCallAccumulator) -> Turn:
        if isinstance(acc.response, dict) and acc.response.get("output") is not None:
            return self._turn(list(acc.response["output"]))
        message = [{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": acc.text}]}] if acc.text else []
        return self._turn(message + [c.item() for c in acc.calls.values()])


class _Chat(Wire):
    api: Api = "chat"

    def method(self, client: Any) -> Callable[..., Any]:
        return client.chat.completions.create

    def request(self, toolset: ToolIsCode | None, history: list[Any], model: str,
                create: dict[str, Any]) -> dict[str, Any]:
        extra = dict(create)
        system = extra.pop("instructions", None)
        if toolset is not None:
            system = _joined(system, toolset.instructions)
            extra["tools"] = toolset.tools_for("chat") + list(extra.get("tools") or ())
        head = [{"role": "system", "content": system}] if system else []
        return {"model": model, "messages": head + list(history), **extra}

    def _turn(self, text: str | None, calls: list[dict[str, Any]]) -> Turn:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = calls
        return Turn([message], text or "", calls)

    def read(self, response: Any) -> Turn:
        choices = to_plain(response).get("choices") or [{}]
        message = choices[0].get("message") or {}
        return self._turn(message.get("content"), list(message.get("tool_calls") or ()))

    def read_stream(self, acc: ToolCallAccumulator) -> Turn:
        calls = [c.item() for c in acc.calls.values() if c.key.startswith("0:")]
        return self._turn(acc.text or None, calls)


_WIRES: dict[str, Wire] = {"responses": _Responses(), "chat": _Chat()}


def wire_for(api: str) -> Wire:
    try:
        return _WIRES[api]
    except KeyError:
        raise ValueError(f"api must be 'responses' or 'chat', not {api!r}") from None
