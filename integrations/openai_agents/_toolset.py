"""`CodeModeToolset`: an agent's function tools and MCP servers behind one code tool."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import uuid
from collections.abc import Awaitable, Callable, Hashable, Iterable
from operator import attrgetter
from typing import Any

from agents import (
    FunctionTool,
    FunctionToolResult,
    RunContextWrapper,
    ToolsToFinalOutputResult,
)
from agents.mcp import MCPServer as AgentsMCPServer
from agents.tool import ToolErrorFunction, ToolTimeoutBehavior
from agents.tool_context import ToolContext
from tooliscode import Limits, MCPServer
from tooliscode.adapters import Binding, Facade, OptionArgs, Options, Tools, code_of
from tooliscode.codetool import Closing, Reply, Toolbox
from tooliscode.engine import Decision
from tooliscode.prompt import CODE_TOOL_SCHEMA
from tooliscode.tools import check_callers, split_callers
from typing_extensions import Unpack

from ._calls import ApprovalCallback, CodeCell, SdkHooks
from ._gate import Gate, Resumed
from ._pipeline import RunParts
from ._runs import RunKeys
from ._timeout import timed_out
from ._tools import Inner, as_inner, mcp_inners

__all__ = ["CodeModeToolset", "ConversationKey"]

ConversationKey = Callable[[RunContextWrapper[Any]], "Hashable | None"]
"""Maps a run's context to the conversation whose interpreter it should use (None: the run's
own)."""

Listing = Tools[Inner, CodeCell]
"""The tools one run's code can call (MCP tools are listed once a run)."""


def _sdk_name(binding: Binding[Inner]) -> str:
    return binding.native.sdk_name


class CodeModeToolset(Facade, Closing):
    """One `run_python` tool over function tools and MCP servers, for an `Agent`.

    Put `tool` in the agent's `tools` and `instructions(...)` as its instructions (they carry
    the catalog). `tools` takes `FunctionTool`s (`@function_tool` ones included) and tooliscode
    tools or plain callables; `mcp_servers` takes the SDK's MCP servers (connected by you, as
    for `Agent(mcp_servers=...)`) and started `tooliscode.MCPServer`s.

    The interpreter lives for one `Runner.run` (and the runs that resume it). Pass
    `conversation` to keep it across runs: a key (one interpreter for every run of this
    toolset) or a function of the run context returning the conversation's key; with a `store`
    too, a conversation (and a cell paused in it) continues in any process.

    A call whose `needs_approval` (or MCP `require_approval`) says so pauses the cell, and
    the run ends with a `ToolApprovalItem` for it; or give `approve` to decide in this process
    instead. The options are every front end's (`tooliscode.adapters.Options`); `callers`
    names tools the model calls itself: "direct" ones are left out of the code and given to
    the agent beside the code tool (`tools`), "both" ones are in each.

    `timeout`, `timeout_behavior` and `timeout_error_function` are the code tool's, as
    `function_tool` takes them: the SDK bounds each call of the code tool, waiting for the
    interpreter included, and cancels it at `timeout` seconds, which stops the cell (the
    session comes back to its state before it). By default the model reads that it timed out
    and what came back.
    """

    def __init__(self, tools: Iterable[Any] = (), *, mcp_servers: Iterable[Any] = (),
                 conversation: Hashable | ConversationKey | None = None,
                 approve: ApprovalCallback | None = None, timeout: float | None = None,
                 timeout_behavior: ToolTimeoutBehavior = "error_as_result",
                 timeout_error_function: ToolErrorFunction | None = None,
                 **options: Unpack[OptionArgs]):
        self.options = Options(**options)
        self.name = self.options.name
        self.conversation = conversation
        self.approve = approve
        self.mcp_servers = list(mcp_servers)
        for server in self.mcp_servers:
            if not isinstance(server, (AgentsMCPServer, MCPServer)):
                raise TypeError(f"not an MCP server: {server!r}")
        self._hooks = SdkHooks(approve)
        inners = [as_inner(t) for t in tools]
        self.callers = check_callers(self.options.callers, [
            *(i.sdk_name for i in inners), *(self.options.callers if self.mcp_servers else ())])
        """Who calls each tool (the MCP servers' tools are checked when they are listed)."""
        named = {i.sdk_name for i in inners}
        self._static = Tools.of(self._hooks, inners,
                                {k: v for k, v in self.callers.items() if k in named},
                                named=_sdk_name)
        self._code_tool = self.options.code_tool()
        self._listings: dict[int, Listing] = {}
        self._runs = RunKeys(self._drop, self._forget_run)
        self._finals: dict[str, Any] = {}
        self._always: dict[Hashable, dict[str, Decision]] = {}
        self._gate = Gate(self.name)
        self.tool = self._gate.adopt(FunctionTool(
            name=self.name, params_json_schema=dict(CODE_TOOL_SCHEMA),
            on_invoke_tool=self._run_code, description=self._description(self._static),
            timeout_seconds=timeout, timeout_behavior=timeout_behavior,
            timeout_error_function=timeout_error_function or timed_out))

    @property
    def tools(self) -> list[FunctionTool]:
        """For `Agent(tools=...)`: the code tool, then the tools `callers` gives the model to
        call directly ("direct" and "both"). An MCP server's direct tools reach the model
        through the agent's own `mcp_servers`."""
        return [self.tool, *(i.sdk for i in self._static.direct)]

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
            self.tool.description = self._description(listing)
            own = None if self.options.instructions == "description" else \
                listing.catalog(self.options).instructions
            return "\n\n".join(p for p in (text, own) if p)

        return build

    def _description(self, listing: Listing) -> str:
        """The code tool's description: short, as its instructions carry the catalog."""
        return listing.catalog(self.options).tool_description(self.options.in_description(True))

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

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def _session_tools(self) -> Toolbox:
        return self._static.toolbox

    # -- the code tool -------------------------------------------------------------------

    async def _run_code(self, ctx: ToolContext[Any], arguments: str) -> Any:
        """What the SDK calls: run the cell (or continue the paused one), return what the
        model reads; errors become text. A paused cell ends the call with the gate's
        approval items instead (its text never reaches the model)."""
        self._runs.sweep()
        try:
            code = code_of(arguments)
            resumed = await self._gate.resumed(ctx)
            listing = await self._list(ctx, ctx.agent)
            key = self._key(ctx, resumed)
            always = self._always.setdefault(key, {})
            if resumed is not None:
                always.update(resumed.always)
            pausable = self.approve is None and ctx.tool_call is not None
            cell = CodeCell(ctx=ctx, context=contextvars.copy_context(),
                            sensitive=_sensitive(ctx), parts=RunParts.of(ctx),
                            pausable=pausable, always=always, tools=listing,
                            call_id=ctx.tool_call_id)
            gated = any(b.approval != "never" for b in listing.bindings)
            call_id = ctx.tool_call_id if resumed is not None or (pausable and gated) else None
            if resumed is None and call_id is not None and \
                    self.code_tool.paused_in(key) == call_id:
                # A new call reusing the id of a pause its run left behind (scripted models
                # and some providers reuse ids): a cell in between gives that pause up.
                await self.code_tool.arun_code("None", key=key, tools=listing.toolbox)
            # The SDK's streamed runs have no event a tool can add (openai-agents-python#1333):
            # what the code prints goes only to the application's own `on_output`.
            reply = await self.code_tool.arun_code(
                code, key=key, context=cell, tools=listing.toolbox, call_id=call_id,
                decisions=resumed.decisions if resumed is not None else None,
                on_output=self.options.output(ctx.tool_call_id))
            if reply.paused and cell.tripped is None:
                return self._pause(ctx, key, listing, reply)
        except Exception as exc:  # noqa: BLE001 - a failed cell must not fail the run
            return f"[error] {type(exc).__name__}: {exc}"
        if cell.tripped is not None:
            raise cell.tripped  # a guardrail's tripwire ends the run, as for a direct call
        if reply.has_final:
            self._finals[ctx.tool_call_id] = reply.final
            while len(self._finals) > 64:  # kept for tool_use_behavior, if the agent uses it
                self._finals.pop(next(iter(self._finals)))
        return self._hooks.render(reply)

    def _pause(self, ctx: ToolContext[Any], key: Hashable, listing: Listing,
               reply: Reply) -> str:
        """End the call with an approval item per waiting call; a run's interpreter is held
        for the run that continues it."""
        token = uuid.uuid4().hex
        if isinstance(key, tuple) and key[0] == "run":
            self._runs.hold(key, token, ctx.tool_call,
                            (self.code_tool.limits or Limits()).pause_s)
        by_host = {b.name: b.native.sdk for b in listing.bindings}
        self._gate.pause(ctx, [(p, by_host[p.tool]) for p in reply.paused], token)
        return reply.text

    def _key(self, ctx: RunContextWrapper[Any], resumed: Resumed | None = None) -> Hashable:
        choose = self.conversation
        key = choose(ctx) if callable(choose) else choose
        if key is not None:
            return ("conversation", key)
        return self._runs.key(ctx.usage, resumed.token if resumed is not None else None)

    def _forget_run(self, run: int) -> None:
        self._listings.pop(run, None)

    def _drop(self, key: Hashable) -> None:
        """Close an interpreter, off whatever thread the collector is on."""
        self._always.pop(key, None)
        threading.Thread(target=self.code_tool.drop, args=(key,), daemon=True).start()

    async def _list(self, ctx: RunContextWrapper[Any], agent: Any) -> Listing:
        run = self._runs.run(ctx.usage)
        listing = self._listings.get(run)
        if listing is None:
            if not self.mcp_servers:
                listing = self._static
            else:
                inners = self._static.natives()
                for server in self.mcp_servers:
                    inners += await mcp_inners(server, ctx, agent)
                if self.callers:
                    inners, _ = split_callers(inners, self.callers, attrgetter("sdk_name"))
                listing = Tools.of(self._hooks, inners)
            self._listings[run] = listing
        return listing


def _sensitive(ctx: ToolContext[Any]) -> bool:
    return ctx.run_config is None or bool(ctx.run_config.trace_include_sensitive_data)
