"""OpenAI Agents SDK: an agent's function tools and MCP servers behind one code tool.

    code = CodeModeToolset([get_weather, search_docs], mcp_servers=[github])
    agent = Agent(name="Assistant", instructions=code.instructions("Be brief."), tools=[code.tool])

The model sees one tool, `run_python`, and a catalog of the wrapped tools as Python functions.
Each call the code makes runs the real tool the way the SDK would: with a `ToolContext` built
from the code tool's own, within the tool's timeout, after its approval policy, as a function
span nested under the code tool's span. A failed call raises `ToolError` in the code; nothing
a cell does fails the run.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import itertools
import json
import threading
import weakref
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agents import (
    FunctionTool,
    FunctionToolResult,
    RunContextWrapper,
    ToolOutputImage,
    ToolOutputText,
    ToolsToFinalOutputResult,
)
from agents.mcp import MCPServer as AgentsMCPServer
from agents.tool_context import ToolContext
from agents.tracing import SpanError, function_span
from tooliscode import Limits, MCPServer, Tool, ToolError, ToolRegistry, prompt
from tooliscode.codetool import Closing, CodeTool, Reply, Sandbox, Toolbox, fingerprint
from tooliscode.durable import Keeper, SessionStore
from tooliscode.prompt import data_url
from tooliscode.runtime import Runtime, python_note

from ._agents_tools import Inner, as_inner, as_tool_error, maybe, mcp_inners, plain

__all__ = ["ApprovalCallback", "CodeModeToolset", "ConversationKey"]

ApprovalCallback = Callable[[ToolContext[Any], str, dict[str, Any]], "bool | Awaitable[bool]"]
"""`approve(context, tool_name, arguments)`: may this call of a tool that needs approval run?"""

ConversationKey = Callable[[RunContextWrapper[Any]], "Hashable | None"]
"""Maps a run's context to the conversation whose interpreter it should use (None: the run's own)."""

@dataclass
class _Cell:
    """What the calls of the running cell need: the code tool's context and context variables
    (the current trace and span among them), captured on the runner's loop."""

    ctx: ToolContext[Any]
    context: contextvars.Context
    sensitive: bool
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))


@dataclass
class _Listing:
    """The tools one run's code can call (MCP tools are listed once a run), and how a
    sandbox gets them."""

    inners: list[Inner]
    toolbox: Toolbox


class CodeModeToolset(Closing):
    """One `run_python` tool over function tools and MCP servers, for an `Agent`.

    Put `tool` in the agent's `tools` and `instructions(...)` as its instructions (they carry
    the catalog). `tools` takes `FunctionTool`s (`@function_tool` ones included) and tooliscode
    tools or plain callables; `mcp_servers` takes the SDK's MCP servers (connected by you, as
    for `Agent(mcp_servers=...)`) and started `tooliscode.MCPServer`s.

    The interpreter lives for one `Runner.run`. Pass `conversation` to keep it across runs:
    a key (one interpreter for every run of this toolset) or a function of the run context
    returning the conversation's key. Tools whose `needs_approval` says so are refused unless
    `approve` allows the call.
    """

    def __init__(self, tools: Iterable[Any] = (), *, mcp_servers: Iterable[Any] = (),
                 limits: Limits | None = None, name: str = prompt.CODE_TOOL_NAME,
                 conversation: Hashable | ConversationKey | None = None,
                 approve: ApprovalCallback | None = None, max_sessions: int | None = 64,
                 idle_timeout_s: float | None = 1800.0, runtime: Runtime | str | None = None,
                 store: SessionStore | Keeper | None = None):
        self.limits = limits
        self.name = name
        self.conversation = conversation
        self.approve = approve
        self.mcp_servers = list(mcp_servers)
        for server in self.mcp_servers:
            if not isinstance(server, (AgentsMCPServer, MCPServer)):
                raise TypeError(f"not an MCP server: {server!r}")
        self._static = [as_inner(t) for t in tools]
        self.code_tool = CodeTool(limits=limits, idle_timeout_s=idle_timeout_s,
                                 max_sessions=max_sessions, runtime=runtime, store=store)
        """The interpreters: one per run, or per conversation."""
        self._runs: dict[int, weakref.finalize] = {}
        self._listings: dict[int, _Listing] = {}
        self._finals: dict[str, Any] = {}
        self.tool = FunctionTool(
            name=name, params_json_schema=dict(prompt.CODE_TOOL_SCHEMA),
            on_invoke_tool=self._run_code,
            description=prompt.code_tool_description(
                ToolRegistry(i.tool for i in self._static), name))

    # -- what the agent uses -------------------------------------------------------------

    def instructions(self, base: str | Callable[..., Any] | None = None
                     ) -> Callable[[RunContextWrapper[Any], Any], Awaitable[str]]:
        """Agent instructions: `base` (text, or the SDK's instructions function), then how to
        use the code tool and the catalog of every tool it wraps (MCP tools included)."""

        async def build(ctx: RunContextWrapper[Any], agent: Any) -> str:
            text = base(ctx, agent) if callable(base) else base
            if inspect.isawaitable(text):
                text = await text
            listing = await self._list(ctx, agent)
            registry = ToolRegistry(i.tool for i in listing.inners)
            self.tool.description = prompt.code_tool_description(registry, self.name)
            return "\n\n".join(p for p in (text, prompt.instructions(
                registry, self.name, python=python_note(self.code_tool.runtime))) if p)

        return build

    def tool_use_behavior(self, ctx: RunContextWrapper[Any],
                          results: list[FunctionToolResult]) -> ToolsToFinalOutputResult:
        """For `Agent(tool_use_behavior=...)`: a cell that called `final_answer(value)` ends
        the run with `value` as its final output, without another model turn."""
        for item in results:
            raw = getattr(item.run_item, "raw_item", None)
            call_id = raw.get("call_id") if isinstance(raw, dict) else None
            if item.tool is self.tool and call_id in self._finals:
                return ToolsToFinalOutputResult(True, self._finals.pop(call_id))
        return ToolsToFinalOutputResult(False)

    def close(self) -> None:
        """Close every interpreter this toolset started."""
        self.code_tool.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # -- the code tool -------------------------------------------------------------------

    async def _run_code(self, ctx: ToolContext[Any], arguments: str) -> str | list[Any]:
        """What the SDK calls: run the cell, return what the model reads; errors become text."""
        try:
            code = _code(arguments)
            listing = await self._list(ctx, ctx.agent)
            cell = _Cell(ctx, contextvars.copy_context(), _sensitive(ctx))
            reply = await self.code_tool.arun_code(code, key=self._key(ctx), context=cell,
                                                  tools=listing.toolbox)
        except Exception as exc:  # noqa: BLE001 - a failed cell must not fail the run
            return f"[error] {type(exc).__name__}: {exc}"
        if reply.has_final:
            self._finals[ctx.tool_call_id] = reply.final
            while len(self._finals) > 64:  # kept for tool_use_behavior, if the agent uses it
                self._finals.pop(next(iter(self._finals)))
        return _with_images(reply)

    def _key(self, ctx: RunContextWrapper[Any]) -> Hashable:
        choose = self.conversation
        key = choose(ctx) if callable(choose) else choose
        return ("run", self._run(ctx)) if key is None else ("conversation", key)

    def _run(self, ctx: RunContextWrapper[Any]) -> int:
        """The run's id: one usage object per run, shared by every context made from it."""
        run = id(ctx.usage)
        if run not in self._runs:
            done = self._runs[run] = weakref.finalize(ctx.usage, self._forget_run, run)
            done.atexit = False
        return run

    def _forget_run(self, run: int) -> None:
        """The run is gone: close its interpreter, off whatever thread the collector is on."""
        self._runs.pop(run, None)
        self._listings.pop(run, None)
        threading.Thread(target=self.code_tool.drop, args=(("run", run),), daemon=True).start()

    async def _list(self, ctx: RunContextWrapper[Any], agent: Any) -> _Listing:
        run = self._run(ctx)
        listing = self._listings.get(run)
        if listing is None:
            inners = list(self._static)
            for server in self.mcp_servers:
                inners += await mcp_inners(server, ctx, agent)
            listing = self._listings[run] = _Listing(inners, Toolbox(
                lambda sandbox: [self._bind(sandbox, i) for i in inners],
                fingerprint(i.tool for i in inners)))
        return listing

    # -- one inner call ------------------------------------------------------------------

    def _bind(self, sandbox: Sandbox, inner: Inner) -> Tool:
        """The tool as the session calls it: it reads the running cell from the sandbox."""

        async def function(**arguments: Any) -> Any:
            cell = sandbox.context
            if not isinstance(cell, _Cell):
                raise ToolError("tools can be called only while a cell runs")
            call = self._call(cell, inner, arguments)
            return await cell.context.copy().run(asyncio.ensure_future, call)

        return dataclasses.replace(inner.tool, function=function)

    async def _call(self, cell: _Cell, inner: Inner, arguments: dict[str, Any]) -> Any:
        name = inner.tool.name
        text = json.dumps(arguments, ensure_ascii=False)
        with function_span(name, input=text if cell.sensitive else None) as span:
            if inner.mcp_server is not None:
                span.span_data.mcp_data = {"server": inner.mcp_server}
            call_id = f"{cell.ctx.tool_call_id}:{next(cell.ids)}"
            ctx = ToolContext.from_agent_context(
                cell.ctx, call_id, tool_name=inner.sdk_name, tool_arguments=text,
                agent=cell.ctx.agent, run_config=cell.ctx.run_config)
            try:
                await self._check_approval(inner, ctx, arguments, call_id)
                value = plain(await inner.run(ctx, arguments))
            except Exception as exc:
                error = await as_tool_error(exc, inner, ctx)
                span.set_error(SpanError(message="Error running tool", data={
                    "tool_name": name, "error": str(error) if cell.sensitive else "(redacted)"}))
                if error is exc:
                    raise
                raise error from exc
            if cell.sensitive:
                span.span_data.output = value
            return value

    async def _check_approval(self, inner: Inner, ctx: ToolContext[Any],
                              arguments: dict[str, Any], call_id: str) -> None:
        policy = inner.needs_approval
        needed = await maybe(policy(ctx, arguments, call_id)) if callable(policy) else policy
        if not needed:
            return
        name = inner.tool.qualified_name
        if self.approve is None:
            raise ToolError(f"{name} needs a person's approval, which code cannot ask for, so "
                            "the call was refused; tell the user what you meant to do with it")
        if not await maybe(self.approve(ctx, name, arguments)):
            raise ToolError(f"{name}: the call was not approved")


# -- small helpers ---------------------------------------------------------------------------


def _with_images(reply: Reply) -> str | list[ToolOutputText | ToolOutputImage]:
    """The code tool's output: the text, then each figure the cell made as the SDK's image
    output (a Chat Completions model keeps only the text, which lists the files)."""
    if not reply.images:
        return reply.text
    return [ToolOutputText(text=reply.text),
            *(ToolOutputImage(image_url=data_url(i), detail="auto") for i in reply.images)]


def _code(arguments: str) -> str:
    try:
        code = json.loads(arguments or "{}").get("code")
    except (ValueError, AttributeError):
        code = None
    if not isinstance(code, str):
        raise TypeError('expected JSON arguments {"code": "<python source>"}')
    return code


def _sensitive(ctx: ToolContext[Any]) -> bool:
    return ctx.run_config is None or bool(ctx.run_config.trace_include_sensitive_data)
