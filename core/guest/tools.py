"""Tools as guest functions: each call travels to the host, where the real tool runs.

A call made outside a running event loop blocks and returns the value. A call made inside
one (in `async def` code, or a cell using top-level `await`) starts the host call at once
and returns an awaitable, so `await asyncio.gather(a(), b())` runs a and b concurrently.
A call awaited at once (`await a()`) while nothing else could run in the meantime blocks
as a plain call does, and returns an awaitable that already holds the value.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from . import channel
from .callsite import AWAITED, VALUE, call_site, sites

__all__ = [
    "ToolArgumentError",
    "ToolError",
    "ToolFunction",
    "ToolNamespace",
    "call_tool",
    "tool_error",
]


class ToolError(Exception):
    """A tool call failed; the message says why. `tool` names the tool."""

    __module__ = "builtins"  # tracebacks say `ToolError`, the name the code knows it by

    def __init__(self, message: str, tool: str | None = None, kind: str | None = None):
        super().__init__(message)
        self.tool = tool
        self.kind = kind


class ToolArgumentError(ToolError, TypeError):
    """Arguments that do not fit the tool: raised before the call leaves the guest. A
    `ToolError` (every failed call is one) and a `TypeError` (as Python's bad calls are)."""

    __module__ = "builtins"


class CellStopped(BaseException):
    """The host stopped the cell at a tool call (continued after a pause, the code asked for
    other calls than before): not an error the code may catch and go on from."""

    __module__ = "builtins"


def tool_error(reply: dict[str, Any]) -> BaseException:
    if reply.get("kind") == "stop":
        return CellStopped(str(reply.get("error")))
    return ToolError(str(reply.get("error") or "the tool failed"), reply.get("tool"),
                     reply.get("kind"))


def call_tool(name: str, arguments: dict[str, Any], prefix: str | None = None) -> Any:
    """Call host tool `name` and wait for its value (raises `ToolError`)."""
    reply = channel.call(prefix or channel.call_prefix(name), arguments)
    if reply.get("ok"):
        return reply.get("value")
    raise tool_error(reply)


_get_running_loop: Any = None


def _running_loop() -> Any:
    global _get_running_loop
    if _get_running_loop is None:
        asyncio = sys.modules.get("asyncio")  # not imported yet: no loop can be running
        if asyncio is None:
            return None
        _get_running_loop = asyncio._get_running_loop  # None when none; no exception to pay
    return _get_running_loop()


_aio: Any = None
"""The guest's `aio` module, once a call was made in a running loop (which it installed)."""


def _load_aio() -> Any:
    global _aio
    from . import aio

    _aio = aio
    return aio


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

        def __repr__(self) -> str:
            state = "done" if self.done() else "running"
            return (f"<{self._tool_name}(...) call, {state}: write `await "
                    f"{self._tool_name}(...)` for its value>")

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
    """A host tool as a Python function. `help(fn)` prints its full stub.

    Arguments bind like a Python call (positional in the stub's order, or by keyword), then
    are checked against the tool's JSON Schema here, so a mistake is named before the call
    leaves the guest. `None` for an optional parameter whose schema has no null means "not
    given": the stub shows such parameters as `x: T | None = None`.
    """

    def __init__(self, spec: dict[str, Any]):
        self.__name__ = self.__qualname__ = spec["name"]
        self._wire = spec.get("wire", spec["name"])
        self._prefix = channel.call_prefix(self._wire)
        self.__doc__ = spec.get("doc") or ""
        self.stub: str = spec.get("stub") or f"def {spec['name']}(**kwargs): ..."
        self.summary: str = spec.get("summary") or ""
        self._params: list[str] = list(spec.get("params") or ())
        self._required: set[str] = set(spec.get("required") or ())
        self._open = bool(spec.get("open", not self._params))
        self._keys: dict[str, str] = dict(spec.get("keys") or {})
        """Parameter name -> argument key, where the schema's key is not an identifier."""
        self._omit_none: tuple[str, ...] = tuple(spec.get("omit_none") or ())
        self._schema: dict[str, Any] | None = spec.get("schema")
        self._check: Any = None
        self._accept: Any = None
        self._fast: Any = None
        """Accepts keyword arguments that need no binding steps (see `_compile`)."""
        self._plain: Any = None
        """Binds and accepts positional arguments of a plain schema (see `plain_binder`)."""
        self._names = {key: name for name, key in self._keys.items()}
        self._shown: str = spec.get("shown") or self.__name__
        """How the model writes it (`ns.tool`), for error messages."""
        self.signature: str = spec.get("signature") or f"{self._shown}(...)"

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Bind and check the arguments the general way, which words every mistake."""
        if len(args) > len(self._params):
            raise self._bad(f"takes {len(self._params)} positional argument(s) but "
                            f"{len(args)} were given")
        arguments = dict(zip(self._params, args)) if args else {}
        for key, value in kwargs.items():
            if key in arguments:
                raise self._bad(f"got multiple values for argument '{key}'")
            if key not in self._params and not self._open:
                from .validate import did_you_mean

                raise self._bad(f"got an unexpected keyword argument "
                                f"'{key}'{did_you_mean(key, self._params)}")
            arguments[key] = value
        if not self._required <= arguments.keys():  # one set test: this runs on every call
            missing = [p for p in self._params if p in self._required and p not in arguments]
            raise self._bad("missing required argument(s): " + ", ".join(map(repr, missing)))
        for name in self._omit_none:
            if name in arguments and arguments[name] is None:
                del arguments[name]
        if self._keys:
            arguments = {self._keys.get(k, k): v for k, v in arguments.items()}
        if self._schema is not None:
            if self._check is None:  # compiled at the first call: most tools are never called
                self._compile(self._schema)
            if self._accept is None or not self._accept(arguments):
                found = self._check(arguments, self._names)
                if found:
                    raise self._bad(found)
        return arguments

    def _compile(self, schema: dict[str, Any]) -> None:
        from .plain import plain_binder, quick_accept
        from .validate import checker

        self._check = checker(schema)
        self._accept = quick_accept(schema)
        properties = schema.get("properties")
        if self._accept is not None and not self._keys and isinstance(properties, dict) \
                and set(properties) == set(self._params):
            self._fast = self._accept  # what it accepts needs none of the binding steps
        self._plain = plain_binder(self._params, self._keys, self._required, self._omit_none,
                                   schema)

    def _bad(self, message: str) -> ToolArgumentError:
        return ToolArgumentError(f"{self._shown}(): {message}", self._wire, "arguments")

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        # `self` positional-only: a tool may well have a parameter named `self`. The plain
        # cases are written out here, not called, since every tool call from guest code
        # pays for each Python frame on its way.
        arguments = None
        if not kwargs:
            plain = self._plain
            if plain is not None and len(args) <= len(self._params):
                arguments = plain(*args)
        elif not args:
            fast = self._fast
            if fast is not None and fast(kwargs) and self._required <= kwargs.keys():
                arguments = kwargs
        if arguments is None:
            arguments = self._bind(args, kwargs)
        get_loop = _get_running_loop
        loop = get_loop() if get_loop is not None else _running_loop()
        site = VALUE
        if loop is not None:
            caller = sys._getframe(1)
            site = sites.get((id(caller.f_code), caller.f_lasti))
            if site is None:
                site = call_site(caller)
            if site != VALUE and (site != AWAITED
                                  or not (_aio or _load_aio()).nothing_else_runs(loop)):
                return _start_pending(loop, self._shown, self._wire, arguments)
        reply = channel.call(self._prefix, arguments)
        if reply.get("ok"):
            value = reply.get("value")
            return value if site == VALUE else _aio.answered(value)
        raise tool_error(reply)  # an awaited call's error: raised where the await would

    def __repr__(self) -> str:
        return f"<tool {self.signature}>"


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
        # No did-you-mean here: Python's traceback adds one from `__dir__`.
        raise AttributeError(f"{self.__name__} has no tool {item!r}", name=item, obj=self)

    def __repr__(self) -> str:
        return f"<tools {self.__name__}: {', '.join(sorted(self._tools))}>"
