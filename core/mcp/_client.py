"""`MCPServer`: an MCP server, over stdio or streamable HTTP, as a source of sandbox tools.

An MCP client session is bound to the event loop and the task that opened it. So each
connection is opened, used and closed on tooliscode's background loop, by one task that holds
it open; tool calls hop to that loop. The tools then work from cells run with `Session.run`
and `Session.arun` alike, whatever thread or loop started the server.

`mcp` (>= 2.3) is imported only when a server starts: the core works without it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import logging
import os
import threading
from collections.abc import AsyncIterator, Coroutine, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, TextIO, TypeVar
from urllib.parse import urlsplit

from .._closing import Starting
from ..engine import background_loop
from ..errors import ToolError
from ..tools import Tool, python_name
from ._tools import mcp_namespace, mcp_tool

__all__ = ["MCPServer"]

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
_LIST_PAGES = 100


class MCPServer(Starting):
    """One MCP server whose tools the sandbox calls as `namespace.tool(...)`.

    Build one with `MCPServer.stdio(...)` or `MCPServer.http(...)`, start it (`with server:`,
    `async with server:` or `start()`), hand `server.tools()` to a `Session`, and close it
    when the session's owner is done. Structured results arrive as Python values, text as
    `str`, and errors as `ToolError` (see `tooliscode.mcp_tools`).
    """

    def __init__(self, target: Any, *, name: str | None = None, timeout_s: float | None = None,
                 include: Iterable[str] | None = None, start_timeout_s: float = 60.0):
        """`target` is what `mcp.Client` connects to (a URL, `StdioServerParameters`, an
        in-process `mcp.server.mcpserver.MCPServer`, a transport), or a function returning one,
        called at each start so the server can be restarted.

        `name` sets the namespace (default: the name the server reports); `timeout_s` bounds
        each tool call; `include` keeps only the tools so named.
        """
        self.target = target
        self.timeout_s = timeout_s
        self.start_timeout_s = start_timeout_s
        self._name = python_name(name) if name else None
        self._include = set(include) if include is not None else None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._holder: asyncio.Task[None] | None = None
        self._tools: list[Tool] | None = None
        self._instructions: str | None = None

    # -- constructors --------------------------------------------------------------------

    @classmethod
    def stdio(cls, command: str, args: Iterable[str] = (), env: Mapping[str, str] | None = None,
              *, cwd: str | os.PathLike[str] | None = None, stderr: TextIO | None = None,
              **options: Any) -> MCPServer:
        """A server run as a subprocess speaking MCP on its stdin and stdout.

        `env` is added to a minimal default environment (as the MCP SDK does); `stderr` takes
        the server's log output (default: this process's stderr).
        """
        arguments, extra = list(args), dict(env) if env is not None else None

        def target() -> Any:
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(command=command, args=arguments, env=extra,
                                           cwd=None if cwd is None else os.fspath(cwd))
            return params if stderr is None else stdio_client(params, errlog=stderr)

        server = cls(target, **options)
        server._fallback = os.path.basename(command)
        return server

    @classmethod
    def http(cls, url: str, *, headers: Mapping[str, str] | None = None,
             **options: Any) -> MCPServer:
        """A server reached over streamable HTTP at `url` (for example `http://host:8000/mcp`)."""
        sent = dict(headers) if headers else None
        server = cls((lambda: _http_transport(url, sent)) if sent else url, **options)
        server._fallback = urlsplit(url).hostname or "mcp"
        return server

    _fallback = "mcp"

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._tools is not None

    def start(self) -> MCPServer:
        """Connect (launching the process for stdio) and list the tools; blocks until ready."""
        with self._lock:
            if not self.started:
                self._block(self._open(), self.start_timeout_s)
        return self

    async def astart(self) -> MCPServer:
        """`start()` without blocking the event loop."""
        if not self.started:
            await asyncio.to_thread(self.start)
        return self

    def close(self) -> None:
        """Disconnect (and, for stdio, stop the process). The server can be started again."""
        with self._lock:
            if self._holder is not None:
                self._block(self._shut(), self.start_timeout_s)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # -- what the session uses -----------------------------------------------------------

    @property
    def namespace(self) -> str:
        """The name the sandbox groups this server's tools under."""
        return self._name or self._fallback

    @property
    def instructions(self) -> str | None:
        """What the server says about using it, if anything."""
        return self._instructions

    def tools(self) -> list[Tool]:
        """This server's tools as `Tool`s (the server must be started)."""
        if self._tools is None:
            raise RuntimeError(f"MCP server {self.namespace!r} is not started: use `with server:`, "
                               "`async with server:` or `server.start()` first")
        return list(self._tools)

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call a tool by its MCP name; returns the MCP `CallToolResult`."""
        loop = self._loop
        if loop is None or self._client is None:
            raise ToolError(f"the MCP server {self.namespace!r} is not running")
        if _running_loop() is loop:
            return await self._request(tool, arguments)
        future = asyncio.run_coroutine_threadsafe(self._request(tool, arguments), loop)
        return await asyncio.wrap_future(future)

    # -- on the background loop ----------------------------------------------------------

    async def _request(self, tool: str, arguments: dict[str, Any]) -> Any:
        client = self._client
        if client is None:
            raise ToolError(f"the MCP server {self.namespace!r} is not running")
        try:
            return await client.call_tool(tool, arguments)
        except (ToolError, asyncio.CancelledError):
            raise
        except Exception as exc:
            text = str(getattr(exc, "message", "") or exc) or type(exc).__name__
            raise ToolError(f"{self.namespace}.{tool}: {text}") from exc

    async def _open(self) -> None:
        self._stop = asyncio.Event()
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._holder = asyncio.create_task(self._hold(ready), name=f"mcp:{self.namespace}")
        try:
            await ready
        except BaseException:
            await self._shut()
            raise

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        """Open the client, publish it, and keep it open in this one task until asked to stop."""
        try:
            client_type = _client_type()
            target = self.target() if callable(self.target) else self.target
            async with client_type(target) as client:
                info = client.server_info
                if self._name is None and info is not None and info.name:
                    self._fallback = mcp_namespace(info.name)
                self._instructions = client.instructions
                self._tools = await self._list(client)
                self._client = client
                ready.set_result(None)
                assert self._stop is not None
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to whoever waits
            if not ready.done():
                ready.set_exception(exc)
            elif not isinstance(exc, asyncio.CancelledError):
                _log.warning("MCP server %r stopped: %r", self.namespace, exc)
        finally:
            self._client = None
            self._tools = None

    async def _list(self, client: Any) -> list[Tool]:
        found, cursor = [], None
        for _ in range(_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            found.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return [mcp_tool(spec, self.namespace, self.call, timeout_s=self.timeout_s)
                for spec in found if self._include is None or spec.name in self._include]

    async def _shut(self) -> None:
        holder, self._holder = self._holder, None
        if self._stop is not None:
            self._stop.set()
        if holder is not None:
            try:
                await holder
            except BaseException as exc:  # noqa: BLE001 - closing must not fail
                _log.debug("MCP server %r closed with %r", self.namespace, exc)

    # -- hopping -------------------------------------------------------------------------

    def _block(self, coro: Coroutine[Any, Any, _T], timeout: float | None) -> _T:
        loop = self._loop = self._loop if self._loop and not self._loop.is_closed() \
            else background_loop()
        if _running_loop() is loop:
            coro.close()
            raise RuntimeError("MCPServer.start()/close() cannot block tooliscode's own loop; "
                               "use `await server.astart()` / `await server.aclose()`")
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result(timeout)
        except cf.TimeoutError:
            future.cancel()
            raise TimeoutError(f"MCP server {self.namespace!r} did not answer within "
                               f"{timeout} s") from None


def _client_type() -> Any:
    try:
        from mcp import Client
    except ImportError as exc:
        raise ImportError("MCP servers need the `mcp` package (>= 2.3): "
                          "pip install 'tooliscode[mcp]'") from exc
    return Client


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str] | None) -> AsyncIterator[Any]:
    """Streamable HTTP with extra headers, on an HTTP client closed with the connection."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(30.0, read=300.0)  # the MCP SDK's defaults
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http, \
            streamable_http_client(url, http_client=http) as streams:
        yield streams

