"""Streamed tool calls: deltas in, complete calls out, and the code as it is being written.

    acc = ToolCallAccumulator(on_partial=lambda p: ui.show(p.code))
    for event in client.responses.create(..., stream=True):   # or chat chunks
        for item in acc.feed(event):
            outputs.append(tic.tool_call(item))

`feed` takes Chat Completions chunks and Responses stream events, as openai SDK objects or
dicts, and returns each call once it is complete, in its API's own item shape (ready for
`ToolIsCode.tool_call` and for the conversation history).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._tool_call import Api, field, to_plain

__all__ = ["PartialCall", "ToolCallAccumulator", "partial_code"]

_CODE_KEY = re.compile(r'"code"\s*:\s*"')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\",
            "/": "/"}


def partial_code(arguments: str) -> str:
    """The `code` string of a possibly unfinished JSON arguments text, decoded so far."""
    try:
        whole = json.loads(arguments)
    except ValueError:
        pass
    else:
        found = whole.get("code") if isinstance(whole, dict) else None
        return found if isinstance(found, str) else ""
    match = _CODE_KEY.search(arguments)
    if match is None:
        return ""
    out: list[str] = []
    i, end = match.end(), len(arguments)
    while i < end:
        ch = arguments[i]
        if ch == '"':
            break
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= end:
            break  # an escape cut in half: wait for the rest
        kind = arguments[i + 1]
        if kind == "u":
            digits = arguments[i + 2:i + 6]
            if len(digits) < 4:
                break
            out.append(chr(int(digits, 16)) if re.fullmatch(r"[0-9a-fA-F]{4}", digits) else "")
            i += 6
            continue
        out.append(_ESCAPES.get(kind, kind))
        i += 2
    if out and "\ud800" <= out[-1] <= "\udbff":
        out.pop()  # the first half of a surrogate pair: wait for the second
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@dataclass
class PartialCall:
    """A tool call being streamed."""

    key: str
    """Where it streams: the Responses item id, or `choice:index` for Chat Completions."""
    api: Api
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    done: bool = False

    @property
    def code(self) -> str:
        """The code written so far (for the code tool; other calls give "")."""
        return partial_code(self.arguments)

    def item(self) -> dict[str, Any]:
        """The finished call in its API's shape."""
        if self.api == "chat":
            return {"id": self.call_id, "type": "function",
                    "function": {"name": self.name, "arguments": self.arguments}}
        return {"type": "function_call", "id": self.key, "call_id": self.call_id,
                "name": self.name, "arguments": self.arguments}


class ToolCallAccumulator:
    """Collects one streamed model turn: its text, its tool calls and (Responses) the response.

    `on_partial(call)` runs each time a call's arguments grow, for UIs that show the code as
    the model writes it.
    """

    def __init__(self, on_partial: Callable[[PartialCall], None] | None = None):
        self.on_partial = on_partial
        self.calls: dict[str, PartialCall] = {}
        self.text = ""
        self.response: Any = None
        """Responses API: the final response from `response.completed`, when it came."""
        self.finished = False

    @property
    def partials(self) -> list[PartialCall]:
        """Calls still streaming."""
        return [c for c in self.calls.values() if not c.done]

    def feed(self, event: Any) -> list[dict[str, Any]]:
        """Take one chunk or event; returns the calls it completed."""
        if field(event, "choices") is not None or field(event, "object") == "chat.completion.chunk":
            return self._chat(event)
        kind = field(event, "type")
        if isinstance(kind, str) and kind.startswith("response."):
            return self._responses(kind, event)
        return []

    def finish(self) -> list[dict[str, Any]]:
        """The calls still open when the stream ended (a stream cut short or without a
        finish marker), completed as they stand."""
        self.finished = True
        return self._complete(self.partials)

    # -- internals ----------------------------------------------------------------------------

    def _complete(self, calls: list[PartialCall]) -> list[dict[str, Any]]:
        for c in calls:
            c.done = True
        return [c.item() for c in calls]

    def _grow(self, call: PartialCall, delta: str) -> None:
        if delta:
            call.arguments += delta
            if self.on_partial is not None:
                self.on_partial(call)

    def _chat(self, chunk: Any) -> list[dict[str, Any]]:
        completed: list[dict[str, Any]] = []
        for choice in field(chunk, "choices") or ():
            number = field(choice, "index", 0) or 0
            delta = field(choice, "delta") or {}
            self.text += field(delta, "content") or ""
            for part in field(delta, "tool_calls") or ():
                key = f"{number}:{field(part, 'index', 0)}"
                call = self.calls.setdefault(key, PartialCall(key, "chat"))
                fn = field(part, "function") or {}
                call.call_id += field(part, "id") or ""
                call.name += field(fn, "name") or ""
                self._grow(call, field(fn, "arguments") or "")
            if field(choice, "finish_reason"):
                mine = [c for c in self.partials if c.key.startswith(f"{number}:")]
                completed += self._complete(mine)
                self.finished = True
        return completed

    def _responses(self, kind: str, event: Any) -> list[dict[str, Any]]:
        if kind == "response.output_item.added":
            item = field(event, "item")
            if field(item, "type") == "function_call":
                key = str(field(item, "id") or field(event, "output_index"))
                self.calls[key] = PartialCall(key, "responses", field(item, "call_id") or "",
                                              field(item, "name") or "",
                                              field(item, "arguments") or "")
        elif kind == "response.function_call_arguments.delta":
            call = self.calls.get(str(field(event, "item_id")))
            if call is not None and not call.done:
                self._grow(call, field(event, "delta") or "")
        elif kind == "response.output_text.delta":
            self.text += field(event, "delta") or ""
        elif kind == "response.output_item.done":
            item = field(event, "item")
            call = self.calls.get(str(field(item, "id")))
            if call is not None and not call.done:
                call.arguments = field(item, "arguments") or call.arguments
                call.call_id = field(item, "call_id") or call.call_id
                return self._complete([call])
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self.response = to_plain(field(event, "response"))
            self.finished = True
            return self._complete(self.partials)
        return []
