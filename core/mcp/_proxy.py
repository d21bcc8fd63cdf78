"""`CodeModeProxy`: an MCP server that gives any MCP client code mode over other MCP servers.

The client sees two tools. `run_python` runs code in which every upstream server's tools are
functions (`git.git_log(...)`), so the model loops, filters and combines their results there
and reads back only what it prints. `search_tools` finds tools and returns their Python stubs
without spending a code call. Each client session has its own interpreter. Tools that
`callers` names "direct" are served beside those two as they are (their calls and results
relayed unchanged) and left out of the code; "both" ones are in each.

Built on the SDK's low-level server: the code tool's schema and description must be exactly
the ones every other integration gives (the description carries the catalog, since many
clients ignore server instructions), which the decorator API would derive from a signature.

Sessions: stdio serves one client, so one interpreter. Streamable HTTP keys interpreters by
the MCP session id, closed when the client's session ends (or after `idle_timeout_s`). The
2026-07-28 protocol has no sessions at all, so over HTTP the proxy advertises only the
handshake-era versions (as stateful servers of the other SDKs do) and `mode="auto"` clients
open a session; a client pinned to 2026-07-28 gets a fresh interpreter per call, told so.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from typing_extensions import Self, Unpack

from ..adapters import Catalog, CommonArgs, Facade, Options
from ..codetool import CodeTool, Starting, Toolbox, require_key
from ..engine import CellImage, OnOutput
from ..errors import ToolIsCodeError
from ..prompt import CODE_TOOL_NAME, CODE_TOOL_SCHEMA, base64_data, noted
from ..tools import Tool, ToolRegistry, ToolStub, split_callers
from ._client import MCPServer
from ._progress import progress_sink
from ._stdio import on_signals, stdin_lines

__all__ = ["SEARCH_TOOL_NAME", "CodeModeProxy", "ProxyReply", "UpstreamError"]

_log = logging.getLogger("tooliscode")

SEARCH_TOOL_NAME = "search_tools"
_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words that describe the tools you need."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 5,
                  "description": "How many tools to return at most."},
    },
    "required": ["query"],
    "additionalProperties": False,
}
_SEARCH_DESCRIPTION = (
    f"Find tools you can call inside `{CODE_TOOL_NAME}` by words in their names and "
    "descriptions. Returns each match as a Python stub (signature, types and docs), best first. "
    f"Use it when the catalog in `{CODE_TOOL_NAME}`'s description does not show the tool you "
    "need in full.")
_STATELESS_NOTE = ("this connection has no MCP session (protocol 2026-07-28), so this call "
                   "ran in a fresh Python session: nothing is kept for the next call.")
_SERVER_NOTE_CHARS = 1_500
_STATE_KEY = "tooliscode.session"


@dataclass(frozen=True)
class ProxyReply:
    """What one tool call answers the client: text, flagged when the call failed."""

    text: str
    is_error: bool = False
    images: tuple[CellImage, ...] = ()
    """The figures the cell made, sent as MCP `ImageContent` beside the text."""


class UpstreamError(ToolIsCodeError):
    """Upstream servers failed to start: `failures` maps each one's name to the reason."""

    def __init__(self, failures: Mapping[str, str]):
        self.failures = dict(failures)
        lines = [f"the MCP server {name!r} failed to start: {why}"
                 for name, why in failures.items()]
        super().__init__("\n".join(lines))


class CodeModeProxy(Facade, Starting):
    """Upstream MCP servers behind one code tool and a tool search, served over MCP.

    `servers` maps a name (used in messages) to an unstarted `MCPServer`; their namespaces are
    what the code calls them by. `async with proxy:` starts them all (every one must start)
    and closes them, and every interpreter, at the end. Then `await proxy.serve_stdio()` or
    `await proxy.serve_http(host, port)`, or `proxy.server(http=...)` for your own transport.

    `callers` maps upstream tools, by their names in the code (`git.git_log`), to who calls
    them: "code" (the default), "direct" (served as a tool of its own, left out of the code)
    or "both".
    """

    def __init__(self, servers: Mapping[str, MCPServer], *, name: str = "tooliscode",
                 api_key: str | None = None, **options: Unpack[CommonArgs]):
        if not servers:
            raise ValueError("CodeModeProxy needs at least one MCP server")
        self.servers = dict(servers)
        self.name = name
        """The MCP server's name (its code tool is `run_python`)."""
        self.options = Options(**options)
        """Every front end's options (`tooliscode.adapters.Options`); `store` keeps each
        client session's interpreter (over HTTP, any worker resumes it)."""
        self.api_key = api_key
        """Over HTTP, clients must send it (`Authorization: Bearer <key>`); 401 otherwise."""
        self._started: CodeTool | None = None
        """The code tool, once the proxy has started."""
        self._registry = ToolRegistry()
        self._direct: dict[str, tuple[MCPServer, Tool]] = {}
        self._instructions = ""

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Self:
        """`astart` for callers without a running event loop."""
        return asyncio.run(self.astart())

    async def astart(self) -> Self:
        """Start every upstream server at once; if any fails, stop the others and raise
        `UpstreamError` naming each failure."""
        names = list(self.servers)
        try:
            outcomes = await asyncio.gather(*(self.servers[n].astart() for n in names),
                                            return_exceptions=True)
        except BaseException:  # cancelled while starting: stop what did start
            await self._close_servers()
            raise
        failures = {n: _reason(o) for n, o in zip(names, outcomes) if isinstance(o, BaseException)}
        if failures:
            await self._close_servers()
            raise UpstreamError(failures)
        everything = [(server, tool) for server in self.servers.values()
                      for tool in server.tools()]
        try:
            tools, direct = split_callers([t for _, t in everything], self.options.callers,
                                          attrgetter("name"))
        except ValueError:
            await self._close_servers()
            raise
        self._direct = {t.name: (s, t) for s, t in everything if t in direct}
        self._registry = ToolRegistry(tools)
        self._started = self.options.code_tool(Toolbox.of(tools))
        notes = [f"Notes from the `{s.namespace}` server: {_cut(s.instructions)}"
                 for s in self.servers.values() if s.instructions]
        self._instructions = Catalog.of(tools, CODE_TOOL_NAME, python=self.options.python,
                                        notes=notes).instructions
        return self

    def close(self) -> None:
        """Close every interpreter, then every upstream server."""
        code_tool, self._started = self._started, None
        if code_tool is not None:
            code_tool.close()
        for server in self.servers.values():
            server.close()

    async def aclose(self) -> None:
        """`close` without blocking the event loop."""
        code_tool, self._started = self._started, None
        if code_tool is not None:
            await asyncio.to_thread(code_tool.close)
        await self._close_servers()

    async def _close_servers(self) -> None:
        await asyncio.gather(*(s.aclose() for s in self.servers.values()), return_exceptions=True)

    async def __aenter__(self) -> Self:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def code_tool(self) -> CodeTool:
        """The code tool over the upstream tools (the proxy must be started)."""
        if self._started is None:
            raise RuntimeError("the proxy is not started: use `async with proxy:`")
        return self._started

    @property
    def instructions(self) -> str:
        """How to use the code tool and the tool catalog: the server's instructions and the
        code tool's description."""
        self.code_tool  # noqa: B018 - raises when not started
        return self._instructions

    async def run(self, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000, *,
                  say: Callable[[str], None] | None = None) -> None:
        """Start, serve over `transport` ("stdio" or "http") until the client leaves (stdio),
        SIGTERM or SIGINT, then close everything. `say(text)` hears how it goes."""
        if transport not in ("stdio", "http"):
            raise ValueError(f"transport must be 'stdio' or 'http', not {transport!r}")
        say = say or (lambda text: None)
        url = f"http://{host}:{port}/mcp"
        cancels: list[asyncio.Future[Any] | None] = [asyncio.current_task()]
        stopped = on_signals(lambda: cancels[-1] and cancels[-1].cancel())
        try:
            async with self:
                names = ", ".join(s.namespace for s in self.servers.values())
                say(f"{len(self._registry)} tools from {names}")
                serving = asyncio.ensure_future(
                    self.serve_stdio() if transport == "stdio" else
                    self.serve_http(host, port, ready=lambda: say(f"serving {url}")))
                cancels.append(serving)  # a signal now stops the serving, not the closing
                try:
                    await serving
                finally:
                    cancels.append(None)
        except asyncio.CancelledError:
            if not stopped:
                raise

    # -- the MCP server -----------------------------------------------------------------------

    def server(self, *, http: bool = False) -> Any:
        """The SDK's low-level `Server` offering the two tools. `http=True` keys interpreters
        by MCP session and steers clients to the handshake era, which has sessions."""
        import mcp_types as types
        from mcp.server.lowlevel import Server

        from .._version import __version__

        tools = [
            types.Tool(name=CODE_TOOL_NAME, description=self.instructions,
                       input_schema=CODE_TOOL_SCHEMA,
                       annotations=types.ToolAnnotations(read_only_hint=False,
                                                         open_world_hint=True)),
            types.Tool(name=SEARCH_TOOL_NAME, description=_SEARCH_DESCRIPTION,
                       input_schema=_SEARCH_SCHEMA,
                       annotations=types.ToolAnnotations(read_only_hint=True,
                                                         open_world_hint=False)),
        ]

        tools += [types.Tool(name=t.name, description=t.description, input_schema=t.parameters,
                             annotations=t.metadata.get("mcp_annotations"))
                  for _, t in self._direct.values()]

        async def list_tools(ctx: Any, params: Any) -> Any:
            return types.ListToolsResult(tools=tools)

        async def call_tool(ctx: Any, params: Any) -> Any:
            if params.name in self._direct:  # relayed as the upstream server answered
                try:
                    return await self._relay(params.name, params.arguments or {})
                except ToolIsCodeError as exc:
                    reply = ProxyReply(str(exc), is_error=True)
            else:
                output = self.options.output(str(ctx.request_id), progress_sink(ctx))
                reply = await self.call(params.name, params.arguments or {},
                                        ctx if http else None, output)
            return types.CallToolResult(content=_content(types, reply), is_error=reply.is_error)

        server = Server(self.name, version=__version__, instructions=self.instructions,
                        on_list_tools=list_tools, on_call_tool=call_tool)
        if http:
            from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

            async def discover(ctx: Any, params: Any) -> Any:
                return types.DiscoverResult(
                    supported_versions=list(HANDSHAKE_PROTOCOL_VERSIONS),
                    capabilities=server.get_capabilities(), instructions=self.instructions)

            server.add_request_handler("server/discover", types.RequestParams, discover)
        return server

    async def serve_stdio(self) -> None:
        """Serve one client on this process's stdin and stdout until it disconnects."""
        from mcp.server.stdio import stdio_server

        server = self.server()
        async with stdio_server(stdin=await stdin_lines()) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    async def serve_http(self, host: str = "127.0.0.1", port: int = 8000, *,
                         path: str = "/mcp", ready: Any = None) -> None:
        """Serve streamable HTTP at `http://host:port/path` until cancelled (or, in the main
        thread, SIGINT / SIGTERM); `ready()` is called once the socket listens."""
        import uvicorn

        app = self.server(http=True).streamable_http_app(
            streamable_http_path=path, host=host,
            session_idle_timeout=self.options.idle_timeout_s,
            max_sessions=self.options.max_sessions)
        if self.api_key:
            app = require_key(app, self.api_key)
        web = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
        serving = asyncio.ensure_future(web.serve())
        try:
            while not web.started and not serving.done():
                await asyncio.sleep(0.02)
            if web.started and ready is not None:
                ready()
            await asyncio.shield(serving)
        except asyncio.CancelledError:
            web.should_exit = True  # a graceful stop: open sessions end, their interpreters close
            await serving
            raise

    # -- the two tools ------------------------------------------------------------------------

    async def call(self, name: str, arguments: Mapping[str, Any],
                   ctx: Any = None, on_output: OnOutput | None = None) -> ProxyReply:
        """Run one tool call of the client.

        `ctx` is the request context of an HTTP request (it picks the interpreter), or `None`
        for the one interpreter of a stdio server. `on_output` gets what the code prints as
        it prints it (the server sends it as the request's progress).
        """
        if name == SEARCH_TOOL_NAME:
            return self.search(arguments)
        if name in self._direct:
            try:
                result = await self._relay(name, arguments)
            except ToolIsCodeError as exc:
                return ProxyReply(str(exc), is_error=True)
            return ProxyReply("\n".join(getattr(b, "text", "") or str(b) for b in result.content),
                              bool(result.is_error))
        if name != CODE_TOOL_NAME:
            return ProxyReply(f"there is no tool {name!r} here: use {CODE_TOOL_NAME} (code calling "
                         f"the tools) or {SEARCH_TOOL_NAME}", is_error=True)
        code = arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            return ProxyReply(f"{CODE_TOOL_NAME} needs `code`: Python source as a string, for "
                         'example {"code": "print(1 + 1)"}', is_error=True)
        key, stateless = self._key(ctx)
        try:
            out = await self.code_tool.arun_code(code, key=key, on_output=on_output)
        finally:
            if stateless:
                await asyncio.to_thread(self.code_tool.drop, key)
        return ProxyReply(noted(out.text, [_STATELESS_NOTE if stateless else None]), not out.ok,
                     out.images)

    async def _relay(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """A direct tool's call, made upstream; the upstream `CallToolResult` as it came."""
        server, tool = self._direct[name]
        return await server.call(tool.metadata.get("mcp_tool", name), dict(arguments))

    def search(self, arguments: Mapping[str, Any]) -> ProxyReply:
        """`search_tools`: the stubs of the best matches, as text."""
        query, limit = arguments.get("query"), arguments.get("limit", 5)
        if not isinstance(query, str) or isinstance(limit, bool) or not isinstance(limit, int):
            return ProxyReply('search_tools needs `query`, a string, and optionally `limit`, an '
                         'integer: {"query": "git log", "limit": 5}', is_error=True)
        self.code_tool  # noqa: B018 - raises when not started
        found = self._registry.search(query, max(1, min(limit, 50)))
        if not found:
            return ProxyReply(f"No tool matched {query!r}; try other words (the description of "
                         f"{CODE_TOOL_NAME} lists the tools).")
        head = (f"{len(found)} tool{'s' if len(found) > 1 else ''} matching {query!r}, best "
                f"first; in {CODE_TOOL_NAME} code, call each by the name in its `#` line:")
        return ProxyReply("\n\n".join([head, *(f"# {t.qualified_name}\n"
                                          f"{ToolStub.of(t).source(header=False)}"
                                          for t in found)]))

    def _key(self, ctx: Any) -> tuple[Hashable, bool]:
        """The interpreter's key for a request, and whether it lives for this call only."""
        if ctx is None:
            return None, False
        request = getattr(ctx, "request", None)
        session_id = request.headers.get("mcp-session-id") if request is not None else None
        if not session_id:
            return f"stateless-{uuid.uuid4().hex}", True
        key = ("mcp-session", session_id)
        # The connection's exit stack is the SDK's per-connection cleanup hook. mcp 2.3 has no
        # public way to it from a low-level handler: `Context.connection` is public, but the
        # runner hands handlers a `ServerRequestContext`, whose `ServerSession` keeps the
        # connection private. Without it, the idle timeout still closes the interpreter.
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and not connection.state.get(_STATE_KEY):
            connection.state[_STATE_KEY] = key
            connection.exit_stack.push_async_callback(asyncio.to_thread, self._drop, key)
        return key, False

    def _drop(self, key: tuple[str, str]) -> None:
        code_tool = self._started
        if code_tool is not None and code_tool.drop(key):
            _log.info("closed the Python session of MCP session %s", key[1])



def _content(types: Any, reply: ProxyReply) -> list[Any]:
    """The call's MCP content: the text, then each image as `ImageContent`."""
    return [types.TextContent(type="text", text=reply.text),
            *(types.ImageContent(type="image", data=base64_data(i), mime_type=i.mime)
              for i in reply.images)]


def _cut(text: str | None, limit: int = _SERVER_NOTE_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reason(exc: BaseException) -> str:
    """The innermost messages of an error, without the task-group wrappers around them."""
    inner = getattr(exc, "exceptions", None)  # an (anyio) exception group
    if isinstance(inner, (list, tuple)) and inner:
        return "; ".join(dict.fromkeys(_reason(e) for e in inner))
    text = str(getattr(exc, "message", "") or exc)
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror + (f": {exc.filename!r}" if exc.filename else "")
    if text == "Connection closed":
        text += " (the server exited or closed its output; its error output, if any, is above)"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
