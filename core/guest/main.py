"""The guest's command loop: wait in the host for a command, run it, report, repeat."""

from __future__ import annotations

import builtins
import os
import sys

from . import channel
from .cells import CellRunner, FinalAnswer, format_error
from .tools import ToolError, ToolFunction, ToolNamespace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]


def final_answer(value: Any) -> None:
    """End the run with `value` as the answer: the cell stops here and the host returns
    `value` without another model turn."""
    raise FinalAnswer(value)


def search_tools(query: str, limit: int = 10) -> list[dict[str, str]]:
    """Find tools by words in their names and descriptions, best first.

    Returns dicts with "name" (as you call it) and "summary"; `help(tool)` shows one fully.
    """
    reply = channel.request({"op": "search", "query": str(query), "limit": int(limit)})
    if not reply.get("ok"):
        raise ToolError(str(reply.get("error")), "search_tools")
    return list(reply.get("value") or ())


class Guest:
    """The interpreter's state between commands."""

    def __init__(self) -> None:
        self.runner = CellRunner()
        self.setup_msg: dict[str, Any] = {"tools": []}

    def helpers(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        namespaces: dict[str, ToolNamespace] = {}
        for spec in self.setup_msg.get("tools", ()):
            fn = ToolFunction(spec)
            group = spec.get("namespace")
            if group:
                ns = namespaces.get(group)
                if ns is None:
                    docs = self.setup_msg.get("namespaces") or {}
                    ns = namespaces[group] = ToolNamespace(group, docs.get(group, ""))
                ns._add(spec["name"], fn)
            else:
                found[spec["name"]] = fn
        found.update(namespaces)
        tools = {**found}
        tools.update(ToolError=ToolError, search_tools=search_tools, final_answer=final_answer,
                     help=self._help_fn(tools))
        return tools

    def _help_fn(self, tools: dict[str, Any]) -> Any:
        def help(obj: Any = None) -> None:  # noqa: A001 - replaces the builtin on purpose
            """Show a tool's full signature and documentation (or Python's help)."""
            if isinstance(obj, str) and obj in tools:
                obj = tools[obj]
            if isinstance(obj, ToolFunction):
                print(obj.stub)
            elif isinstance(obj, ToolNamespace):
                print(f"# {obj.__name__}: {obj.__doc__}".rstrip(": "))
                for name in dir(obj):
                    print(getattr(obj, name).stub, end="\n\n")
            else:
                import pydoc

                pydoc.help(obj) if obj is not None else print(
                    "help(tool) shows a tool; search_tools('words') finds tools.")

        return help

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        op = msg.get("op")
        if op == "cell":
            return self.runner.run(str(msg.get("code", "")), msg.get("limits") or {})
        if op == "setup":
            self.setup_msg = msg
            self.runner.reset(self.helpers())
            sdk = msg.get("sdk")
            if sdk:
                exec(compile(sdk, "<tooliscode>/sdk.py", "exec"), self.runner.ns)
                self.runner.baseline = set(self.runner.ns)
            return {"ok": True}
        if op == "reset":
            return self.handle({**self.setup_msg, "op": "setup"})
        if op == "warm":
            import asyncio  # noqa: F401 - paid now, in the pool, not in the first cell

            from . import aio

            aio.install()
            return {"ok": True}
        return {"ok": False, "error": f"unknown command {op!r}"}


class _AsyncioHook:
    """Installs `HostLoop` the moment user code first imports asyncio, so a cold guest
    does not pay for asyncio before it needs it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "asyncio":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _InstallAfter(spec.loader)
        return spec


class _InstallAfter:
    """Wraps asyncio's loader (which may be shared by the whole stdlib, e.g. a zipimporter)."""

    def __init__(self, loader: Any):
        self._loader = loader

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        from . import aio

        aio.install()


def main(exchange: Any, boot: dict[str, Any]) -> None:
    """Serve commands until the host says exit."""
    channel.exchange = exchange
    cwd = boot.get("cwd")
    if cwd:
        os.chdir(cwd)
        sys.path.insert(0, cwd)
    if "asyncio" in sys.modules:
        from . import aio

        aio.install()
    else:
        sys.meta_path.insert(0, _AsyncioHook())
    builtins.exit = builtins.quit = _no_exit  # type: ignore[attr-defined]
    guest = Guest()
    reply = channel.request({"op": "ready"})
    while reply.get("op") != "exit":
        try:
            result = guest.handle(reply)
        except BaseException as exc:  # noqa: BLE001 - the loop itself must survive
            result = {"ok": False, "error": format_error(exc), "error_type": type(exc).__name__}
        reply = channel.request({"op": "done", "result": result})


def _no_exit(code: Any = None) -> None:
    """exit() ends the cell, not the session."""
    raise SystemExit(code)
