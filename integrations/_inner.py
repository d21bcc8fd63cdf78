"""A framework's tools as the sandbox calls them: declarations bound to one sandbox.

The session calls tool functions on its own threads and loops, where context variables do not
follow, so each bound function reads the running cell (whatever the framework handed the code
tool for this call: its context object, its config) from the sandbox it is bound to.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from pydantic import TypeAdapter
from tooliscode import Tool, ToolError
from tooliscode.codetool import Sandbox, Toolbox, fingerprint

__all__ = ["bind_async", "bind_sync", "resolved", "returns", "running", "toolbox"]

C = TypeVar("C")


def running(sandbox: Sandbox, kind: type[C]) -> C:
    """The cell running in `sandbox`; a `ToolError` when none is (a call from a leftover task)."""
    cell = sandbox.context
    if not isinstance(cell, kind):
        raise ToolError("tools can be called only while the code tool runs")
    return cell


def bind_async(declared: Tool, sandbox: Sandbox, kind: type[C],
               call: Callable[[C, dict[str, Any]], Awaitable[Any]]) -> Tool:
    """`declared`, whose calls await `call(cell, arguments)` on the runner's loop."""

    async def function(**arguments: Any) -> Any:
        return await call(running(sandbox, kind), arguments)

    return dataclasses.replace(declared, function=function)


def bind_sync(declared: Tool, sandbox: Sandbox, kind: type[C],
              call: Callable[[C, dict[str, Any]], Any]) -> Tool:
    """`declared`, whose calls run `call(cell, arguments)` on the session's thread (it may
    return a coroutine, which the session awaits on the runner's loop)."""

    def function(**arguments: Any) -> Any:
        return call(running(sandbox, kind), arguments)

    return dataclasses.replace(declared, function=function)


def toolbox(declared: Sequence[Tool], bind: Callable[[Sandbox, int], Tool]) -> Toolbox:
    """The tools a sandbox gets: `bind(sandbox, i)` for each declaration, keyed by what the
    model and the guest see of them."""
    count = len(declared)
    return Toolbox(lambda sandbox: [bind(sandbox, i) for i in range(count)],
                   fingerprint(declared))


def returns(func: Any) -> dict[str, Any] | None:
    """The JSON Schema of what a function returns, when it says (the typed stubs show it)."""
    try:
        hint = typing.get_type_hints(func).get("return")
        if hint in (None, type(None), Any):
            return None
        return TypeAdapter(hint).json_schema()
    except Exception:  # noqa: BLE001 - an annotation pydantic cannot read is just left out
        return None


def resolved(fn: Any) -> Any:
    """`fn` with its annotations evaluated: LlamaIndex and CrewAI build a tool's schema from
    the signature as written, and a module with postponed annotations writes strings."""
    try:
        signature = inspect.signature(fn, eval_str=True)
    except (NameError, TypeError, ValueError):
        return fn

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def call(*args: Any, **kwargs: Any) -> Any:  # noqa: F811 - the async form
            return await fn(*args, **kwargs)

    call.__signature__ = signature
    return call
