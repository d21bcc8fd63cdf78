"""Giving declared tools something to run: the user's callback, and the hidden `llm_query`.

Tools given as plain OpenAI dicts have no function of their own; `ToolIsCode` routes their
calls to one `callback(req_id, func_name, args)`, as the original prototype did. The request
id names the model's call: each cell runs with its own `CallIds` as the sandbox's context.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from ..tools import Tool

__all__ = [
    "LLM",
    "LLM_TOOL_NAME",
    "CallIds",
    "Callback",
    "bind_callback",
    "is_async_callable",
    "llm_tool",
]

Callback = Callable[[str, str, dict[str, Any]], Any | Awaitable[Any]]
"""`callback(req_id, func_name, args)`, sync or async; returns the tool's result."""

LLM = Callable[[str], str | Awaitable[str]]
"""A model callable for `llm_query`: a prompt in, the reply's text out; sync or async."""

LLM_TOOL_NAME = "llm_query"


def is_async_callable(fn: Any) -> bool:
    if not callable(fn):
        return False
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


class CallIds:
    """Request ids for one cell: the model's call id and a counter within that call."""

    def __init__(self, call_id: str = "") -> None:
        self.call_id = call_id or "call"
        self._count = itertools.count(1)

    def next(self) -> str:
        return f"{self.call_id}:{next(self._count)}"


def _decoded(value: Any) -> Any:
    """A JSON object or array returned as text becomes data, so code can index into it."""
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def bind_callback(tool: Tool, callback: Callback, request_id: Callable[[], str]) -> Tool:
    """A copy of declared `tool` whose calls go to `callback`, each with a new `request_id()`."""
    name = tool.name
    if is_async_callable(callback):
        async def run_async(**arguments: Any) -> Any:
            return _decoded(await callback(request_id(), name, arguments))
        return dataclasses.replace(tool, function=run_async)

    def run(**arguments: Any) -> Any:
        result = callback(request_id(), name, arguments)
        if inspect.isawaitable(result):
            async def finish() -> Any:
                return _decoded(await result)
            return finish()
        return _decoded(result)
    return dataclasses.replace(tool, function=run)


def _text(reply: Any) -> str:
    if isinstance(reply, str):
        return reply
    text = getattr(reply, "output_text", None)  # an openai Response, passed back as is
    return text if isinstance(text, str) else str(reply)


def llm_tool(llm: LLM) -> Tool:
    """`llm_query(prompt)` as a tool whose calls go to `llm`."""
    if is_async_callable(llm):
        async def llm_query(prompt: str) -> str:
            return _text(await llm(prompt))  # type: ignore[misc]
    else:
        def llm_query(prompt: str) -> str:  # type: ignore[misc]
            return _text(llm(prompt))
    return Tool(name=LLM_TOOL_NAME, function=llm_query,
                description="Ask a language model; returns the text of its reply.",
                parameters={"type": "object", "additionalProperties": False,
                            "required": ["prompt"],
                            "properties": {"prompt": {"type": "string",
                                                      "description": "The whole request."}}},
                output_schema={"type": "string"},
                metadata={"hidden": True})  # told about in the instructions, not the catalog
