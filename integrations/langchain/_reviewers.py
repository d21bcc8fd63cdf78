"""Finding the agent's own `HumanInTheLoopMiddleware`, so that code mode honours a review the
user configured without being told about it.

`create_agent` composes the middleware's `wrap_tool_call` hooks into one chain and hands it to
the agent's `ToolNode`; no hook is given the list of middleware. HumanInTheLoopMiddleware
defines `wrap_tool_call` in both of its modes, so whenever it is in the agent it is in that
chain, as a bound method inside the composed closures. The chain is found from:
- the `handler` `CodeModeMiddleware` is given (the rest of the chain, which ends in the
  ToolNode's `execute`, which holds the node: the whole chain from there);
- the node LangGraph is running, named in the call's config (for a code tool given in
  `tools=`, which gets no handler, and under async agents, whose tools run in tasks of their
  own, so no stack leads back to the chain).

Both lean on LangGraph internals (`ToolNode._wrap_tool_call`, the config's node entry); tests
pin each, and a lookup that finds nothing finds no reviewer, which the tests would show.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from langchain.agents.middleware import HumanInTheLoopMiddleware
from langgraph.config import get_config
from langgraph.prebuilt import ToolNode

__all__ = ["find", "reviewed"]

_NODE_KEY = "__pregel_read_state"
"""LangGraph's config entry for reading the running node's state: a partial over the node."""
_DEPTH = 32
"""How deep closures are followed: a few per middleware, a handful of middleware."""


def find(handler: Any = None, also: HumanInTheLoopMiddleware | None = None
         ) -> tuple[HumanInTheLoopMiddleware, ...]:
    """The reviewers of the agent running this call (and `also`), each once, in order."""
    found: dict[int, HumanInTheLoopMiddleware] = {}
    if also is not None:
        found[id(also)] = also
    seen: set[int] = set()

    def walk(obj: Any, depth: int) -> None:
        if obj is None or depth > _DEPTH or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, ToolNode):
            walk(getattr(obj, "_wrap_tool_call", None), depth + 1)
            walk(getattr(obj, "_awrap_tool_call", None), depth + 1)
            return
        owner = getattr(obj, "__self__", None)
        if isinstance(owner, HumanInTheLoopMiddleware):
            found.setdefault(id(owner), owner)
            return
        if isinstance(owner, ToolNode):
            walk(owner, depth + 1)
        if isinstance(obj, functools.partial):
            walk(obj.func, depth + 1)
        walk(getattr(obj, "__wrapped__", None), depth + 1)
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                inside = cell.cell_contents
            except ValueError:  # a cell not filled yet
                continue
            if callable(inside) or isinstance(inside, ToolNode):
                walk(inside, depth + 1)

    walk(handler, 0)
    walk(_running_node(), 0)
    return tuple(found.values())


def _running_node() -> ToolNode | None:
    """The ToolNode LangGraph runs this call in, if any."""
    try:
        read = get_config().get("configurable", {}).get(_NODE_KEY)
    except RuntimeError:  # not inside a graph
        return None
    node = getattr(read, "args", (None,))[0] if isinstance(read, functools.partial) else None
    bound = getattr(node, "bound", None)
    return bound if isinstance(bound, ToolNode) else None


def reviewed(reviewers: Iterable[HumanInTheLoopMiddleware]) -> frozenset[str]:
    """The names of the tools any of `reviewers` asks a person about."""
    return frozenset(name for hitl in reviewers for name in hitl.interrupt_on)
