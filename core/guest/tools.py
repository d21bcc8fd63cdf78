"""Tools as guest functions: each call travels to the host, where the real tool runs.

A call made outside a running event loop blocks and returns the value. A call made inside
one (in `async def` code, or a cell using top-level `await`) starts the host call at once
and returns an awaitable, so `await asyncio.gather(a(), b())` runs a and b concurrently.
"""

from __future__ import annotations

import sys
from typing import Any

from . import channel

__all__ = ["ToolError", "ToolFunction", "ToolNamespace", "tool_error", "call_tool"]


class ToolError(Exception):
    """A tool call failed; the message says why. `tool` names the tool."""

    def __init__(self, message: str, tool: str | None = None, kind: str | None = None):
        super().__init__(message)
        self.tool = tool
        self.kind = kind


def tool_error(reply: dict[str, Any]) -> ToolError:
    return ToolError(str(reply.get("error") or "the tool failed"), reply.get("tool"),
                     reply.get("kind"))


def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    """Call host tool `name` and wait for its value (raises `ToolError`)."""
    reply = channel.request({"op": "call", "name": name, "args": arguments})
    if reply.get("ok"):
        return reply.get("value")
    raise tool_error(reply)


def _running_loop() -> Any:
    asyncio = sys.modules.get("asyncio")  # not imported yet means no loop can be running
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _make_future_class() -> type:
    import asyncio

    class ToolCallFuture(asyncio.Future):
        """A started tool call; `await` it (or gather it) for the value."""

        _tool_name = "tool"

        def _misuse(self, *_: Any, **__: Any) -> Any:
            raise TypeError(
                f"{self._tool_name}(...) was called inside async code, so it returned an "
                f"awaitable: write `await {self._tool_name}(...)` to get its value")

        __getitem__ = __iter__ = __len__ = __contains__ = _misuse

        def __getattr__(self, item: str) -> Any:
            if item.startswith("_"):
                raise AttributeError(item)
            self._misuse()

    return ToolCallFuture


class _LazyFutureClass:
    cls: Any = None

    def __call__(self, loop: Any) -> Any:
        if self.cls is None:
            self.cls = _make_future_class()
        return self.cls(loop=loop)


_ToolCallFuture = _LazyFutureClass()


class ToolFunction:
    """A host tool as a Python function. `help(fn)` prints its full stub."""

    def __init__(self, spec: dict[str, Any]):
        self.__name__ = self.__qualname__ = spec["name"]
        self._wire = spec.get("wire", spec["name"])
        self.__doc__ = spec.get("doc") or ""
        self.stub: str = spec.get("stub") or f"def {spec['name']}(**kwargs): ..."
        self.summary: str = spec.get("summary") or ""
        self._params: list[str] = list(spec.get("params") or ())
        self._required: set[str] = set(spec.get("required") or ())
        self._open = bool(spec.get("open", not self._params))
        self._validator = spec.get("validator")

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(self._params):
            raise TypeError(f"{self.__name__}() takes {len(self._params)} positional "
                            f"argument(s) but {len(args)} were given")
        arguments = dict(zip(self._params, args))
        for key, value in kwargs.items():
            if key in arguments:
                raise TypeError(f"{self.__name__}() got multiple values for argument '{key}'")
            if key not in self._params and not self._open:
                raise TypeError(f"{self.__name__}() got an unexpected keyword argument "
                                f"'{key}'{_did_you_mean(key, self._params)}")
            arguments[key] = value
        missing = [p for p in self._params if p in self._required and p not in arguments]
        if missing:
            raise TypeError(f"{self.__name__}() missing required argument(s): "
                            + ", ".join(repr(m) for m in missing))
        if self._validator is not None:
            self._validator(self.__name__, arguments)
        return arguments

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arguments = self._bind(args, kwargs)
        loop = _running_loop()
        if loop is None:
            return call_tool(self._wire, arguments)
        return _start_pending(loop, self.__name__, self._wire, arguments)

    def __repr__(self) -> str:
        first = self.stub.strip().splitlines()[0] if self.stub.strip() else self.__name__
        return f"<tool {first.removeprefix('def ').rstrip(':')}>"


def _start_pending(loop: Any, shown: str, wire: str, arguments: dict[str, Any]) -> Any:
    from .aio import start_call

    future = _ToolCallFuture(loop)
    future._tool_name = shown
    start_call(wire, arguments, future)
    return future


class ToolNamespace:
    """Tools grouped under a name (an MCP server, a toolset): `ns.tool(...)`."""

    def __init__(self, name: str, doc: str = ""):
        self.__name__ = name
        self.__doc__ = doc
        self._tools: dict[str, ToolFunction] = {}

    def _add(self, attr: str, fn: ToolFunction) -> None:
        self._tools[attr] = fn
        setattr(self, attr, fn)

    def __dir__(self) -> list[str]:
        return sorted(self._tools)

    def __getattr__(self, item: str) -> Any:
        if item.startswith("__"):
            raise AttributeError(item)
        raise AttributeError(f"{self.__name__} has no tool {item!r}"
                             f"{_did_you_mean(item, list(self._tools))}")

    def __repr__(self) -> str:
        return f"<tools {self.__name__}: {', '.join(sorted(self._tools))}>"


def _did_you_mean(word: str, options: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, options, n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
