"""DSPy's tools as the sandbox declares and calls them: a `dspy.Tool` knows its arguments'
schema (a parameter with a default is optional) and validates a call as ReAct's own."""

from __future__ import annotations

import inspect
from typing import Any

import dspy
from tooliscode.adapters import Binding, Cell, Hooks
from tooliscode.codetool import Reply
from tooliscode.tools import return_schema

__all__ = ["HOOKS", "as_tool"]


def as_tool(item: Any, name: str | None = None) -> dspy.Tool:
    """`item` as a `dspy.Tool` (a plain callable is made into one, as ReAct makes it)."""
    if isinstance(item, dspy.Tool):
        return item
    if not callable(item):
        raise TypeError(f"code can call functions and dspy.Tools, not {type(item).__name__}")
    return dspy.Tool(item, name=name)


class _Hooks(Hooks[dspy.Tool, Cell]):
    """DSPy tools, called as ReAct calls the model's choice (`tool(**arguments)`, `acall`
    for a coroutine function)."""

    asynchronous = False

    def declare(self, native: dspy.Tool) -> Binding[dspy.Tool]:
        args = native.args or {}
        return Binding.of(native, name=native.name or native.func.__name__,
                          description=native.desc or "",
                          parameters={"type": "object", "properties": args,
                                      "required": [k for k, v in args.items()
                                                   if "default" not in v]},
                          output_schema=return_schema(native.func))

    def call(self, cell: Cell, binding: Binding[dspy.Tool], arguments: dict[str, Any],
             call_id: str) -> Any:
        tool = binding.native
        if inspect.iscoroutinefunction(tool.func):
            return tool.acall(**arguments)  # awaited by the session on the runner's loop
        return tool(**arguments)

    def render(self, reply: Reply) -> str:
        """ReAct's observation: what the model reads back, errors included."""
        return reply.text


HOOKS = _Hooks()
