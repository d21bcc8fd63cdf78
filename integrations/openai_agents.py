"""OpenAI Agents SDK: an agent's function tools and MCP servers behind one code tool.

    code = CodeModeToolset([get_weather, search_docs], mcp_servers=[github])
    agent = Agent(name="Assistant", instructions=code.instructions("Be brief."), tools=[code.tool])

The model sees one tool, `run_python`, and a catalog of the wrapped tools as Python functions.
Each call the code makes runs the real tool the way the SDK runs a direct call: with a
`ToolContext` built from the code tool's own, within the tool's timeout, after its approval
policy, between its guardrails and the run's and agent's tool hooks, as a function span nested
under the code tool's span. A failed call raises `ToolError` in the code; nothing a cell does
fails the run, except a guardrail's tripwire, which ends it as it would a direct call.

A call that needs approval pauses the cell: the run ends with a `ToolApprovalItem` for that
inner call in `result.interruptions` (see `_agents_gate.py`), and `Runner.run(agent, state)`
after `state.approve(item)` / `state.reject(item)` continues the cell where it stopped.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import itertools
import json
import threading
import uuid
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
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
from agents.util._approvals import evaluate_function_tool_approval
from tooliscode import Limits, MCPServer, Tool, ToolError, ToolRegistry, prompt
from tooliscode.codetool import Closing, CodeTool, Reply, Sandbox, Toolbox, fingerprint
from tooliscode.durable import Keeper, SessionStore
from tooliscode.engine import CallInfo, CallPaused, Decision, StopCell, current_call, run_in
from tooliscode.prompt import data_url
from tooliscode.runtime import Runtime, python_note
from tooliscode.tools import Caller, check_callers, split_callers

from ._agents_gate import Gate, Resumed
from ._agents_pipeline import TRIPWIRES, RunParts, guarded_call
from ._agents_runs import RunKeys
from ._agents_tools import Inner, as_inner, as_tool_error, maybe, mcp_inners, plain
from ._inner import running

__all__ = ["ApprovalCallback", "CodeModeToolset", "ConversationKey"]

ApprovalCallback = Callable[[ToolContext[Any], str, dict[str, Any]], "bool | Awaitable[bool]"]
"""`approve(context, tool_name, arguments)`: may this call of a tool that needs approval run?"""

ConversationKey = Callable[[RunContextWrapper[Any]], "Hashable | None"]
"""Maps a run's context to the conversation whose interpreter it should use (None: the run's own)."""

@dataclass
class _Cell:
    """What the calls of the running cell need: the code tool's context and context variables
    (the current trace and span among them), captured on the runner's loop, and the run's
    hooks and guardrail results."""

    ctx: ToolContext[Any]
    context: contextvars.Context
    sensitive: bool
    parts: RunParts
    pausable: bool = False
    """A call that needs approval pauses the cell (else, with no `approve`, it is refused)."""
    always: Mapping[str, Decision] = field(default_factory=dict)
    """Decisions a person made for every call of a tool (`always_approve`, `always_reject`)."""
    tripped: Exception | None = None
    """A guardrail's tripwire: the cell stopped, and the run ends with it."""
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))


@dataclass
class _Listing:
    """The tools one run's code can call (MCP tools are listed once a run), and how a
    sandbox gets them."""

    inners: list[Inner]
    toolbox: Toolbox

    @property
    def gated(self) -> bool:
        """Whether any call may need approval (only then are calls given ids and logged)."""
        return any(i.needs_approval is not False for i in self.inners)


class CodeModeToolset(Closing):
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
    instead. `callers` names tools the model calls itself: "direct" ones are left out of the
    code and given to the agent beside the code tool (`tools`), "both" ones are in each.
    """

    def __init__(self, tools: Iterable[Any] = (), *, mcp_servers: Iterable[Any] = (),
                 limits: Limits | None = None, name: str = prompt.CODE_TOOL_NAME,
                 conversation: Hashable | ConversationKey | None = None,
                 approve: ApprovalCallback | None = None,
                 callers: Mapping[str, Caller] | None = None, max_sessions: int | None = 64,
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
        inners = [as_inner(t) for t in tools]
        self.callers = check_callers(callers, [*(i.sdk_name for i in inners),
                                               *((callers or {}) if self.mcp_servers else ())])
        """Who calls each tool (the MCP servers' tools are checked when they are listed)."""
        named = {i.sdk_name for i in inners}
        self._static, direct = split_callers(
            inners, {k: v for k, v in self.callers.items() if k in named}, attrgetter("sdk_name"))
        self._direct = [i.sdk for i in direct]
        self.code_tool = CodeTool(limits=limits, idle_timeout_s=idle_timeout_s,
                                 max_sessions=max_sessions, runtime=runtime, store=store)
        """The interpreters: one per run, or per conversation."""
        self._listings: dict[int, _Listing] = {}
        self._runs = RunKeys(self._drop, self._forget_run)
        self._finals: dict[str, Any] = {}
        self._always: dict[Hashable, dict[str, Decision]] = {}
        self._gate = Gate(name)
        self.tool = self._gate.adopt(FunctionTool(
            name=name, params_json_schema=dict(prompt.CODE_TOOL_SCHEMA),
            on_invoke_tool=self._run_code,
            description=prompt.code_tool_description(
                ToolRegistry(i.tool for i in self._static), name)))

    @property
    def tools(self) -> list[FunctionTool]:
        """For `Agent(tools=...)`: the code tool, then the tools `callers` gives the model to
        call directly ("direct" and "both"). An MCP server's direct tools reach the model
        through the agent's own `mcp_servers`."""
        return [self.tool, *self._direct]

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
        """What the SDK calls: run the cell (or continue the paused one), return what the
        model reads; errors become text. A paused cell ends the call with the gate's
        approval items instead (its text never reaches the model)."""
        self._runs.sweep()
        try:
            code = _code(arguments)
            resumed = await self._gate.resumed(ctx)
            listing = await self._list(ctx, ctx.agent)
            key = self._key(ctx, resumed)
            always = self._always.setdefault(key, {})
            if resumed is not None:
                always.update(resumed.always)
            pausable = self.approve is None and ctx.tool_call is not None
            cell = _Cell(ctx, contextvars.copy_context(), _sensitive(ctx), RunParts.of(ctx),
                         pausable, always)
            call_id = ctx.tool_call_id if resumed is not None or (pausable and listing.gated) \
                else None
            if resumed is None and call_id is not None and self._paused_for(key) == call_id:
                # A new call reusing the id of a pause its run left behind (scripted models
                # and some providers reuse ids): a cell in between gives that pause up.
                await self.code_tool.arun_code("None", key=key, tools=listing.toolbox)
            reply = await self.code_tool.arun_code(
                code, key=key, context=cell, tools=listing.toolbox, call_id=call_id,
                decisions=resumed.decisions if resumed is not None else None)
            if reply.paused and cell.tripped is None:
                self._pause(ctx, key, listing, reply)
                return reply.text
        except Exception as exc:  # noqa: BLE001 - a failed cell must not fail the run
            return f"[error] {type(exc).__name__}: {exc}"
        if cell.tripped is not None:
            raise cell.tripped  # a guardrail's tripwire ends the run, as for a direct call
        if reply.has_final:
            self._finals[ctx.tool_call_id] = reply.final
            while len(self._finals) > 64:  # kept for tool_use_behavior, if the agent uses it
                self._finals.pop(next(iter(self._finals)))
        return _with_images(reply)

    def _pause(self, ctx: ToolContext[Any], key: Hashable, listing: _Listing,
               reply: Reply) -> None:
        """End the call with an approval item per waiting call; a run's interpreter is held
        for the run that continues it."""
        token = uuid.uuid4().hex
        if key[0] == "run":
            self._runs.hold(key, token, ctx.tool_call, (self.code_tool.limits or Limits()).pause_s)
        by_host = {i.tool.name: i.sdk for i in listing.inners}
        self._gate.pause(ctx, [(p, by_host[p.tool]) for p in reply.paused], token)

    def _key(self, ctx: RunContextWrapper[Any], resumed: Resumed | None = None) -> Hashable:
        choose = self.conversation
        key = choose(ctx) if callable(choose) else choose
        if key is not None:
            return ("conversation", key)
        return self._runs.key(ctx.usage, resumed.token if resumed is not None else None)

    def _paused_for(self, key: Hashable) -> str | None:
        sandbox = self.code_tool.get(key)
        session = sandbox.session if sandbox is not None else None
        return session.paused_for if session is not None else None

    def _forget_run(self, run: int) -> None:
        self._listings.pop(run, None)

    def _drop(self, key: Hashable) -> None:
        """Close an interpreter, off whatever thread the collector is on."""
        self._always.pop(key, None)
        threading.Thread(target=self.code_tool.drop, args=(key,), daemon=True).start()

    async def _list(self, ctx: RunContextWrapper[Any], agent: Any) -> _Listing:
        run = self._runs.run(ctx.usage)
        listing = self._listings.get(run)
        if listing is None:
            inners = list(self._static)
            for server in self.mcp_servers:
                inners += await mcp_inners(server, ctx, agent)
            if self.mcp_servers and self.callers:
                inners, _ = split_callers(inners, self.callers, attrgetter("sdk_name"))
            listing = self._listings[run] = _Listing(inners, Toolbox(
                lambda sandbox: [self._bind(sandbox, i) for i in inners],
                fingerprint(i.tool for i in inners)))
        return listing

    # -- one inner call ------------------------------------------------------------------

    def _bind(self, sandbox: Sandbox, inner: Inner) -> Tool:
        """The tool as the session calls it: it reads the running cell from the sandbox."""

        async def function(**arguments: Any) -> Any:
            cell = running(sandbox, _Cell)
            call = self._call(cell, inner, arguments, current_call())
            # its steps in the code tool's context (its trace and span): no task of its own
            return await run_in(cell.context.copy(), call)

        return dataclasses.replace(inner.tool, function=function)

    async def _call(self, cell: _Cell, inner: Inner, arguments: dict[str, Any],
                    info: CallInfo | None) -> Any:
        name = inner.tool.name
        text = json.dumps(arguments, ensure_ascii=False)
        with function_span(name, input=text if cell.sensitive else None) as span:
            if inner.mcp_server is not None:
                span.span_data.mcp_data = {"server": inner.mcp_server}
            call_id = info.id if info is not None else \
                f"{cell.ctx.tool_call_id}:{next(cell.ids)}"
            ctx = ToolContext.from_agent_context(
                cell.ctx, call_id, tool_name=inner.sdk_name, tool_arguments=text,
                agent=cell.ctx.agent, run_config=cell.ctx.run_config)
            try:
                if info is None or not info.approved:
                    await self._check_approval(cell, inner, ctx, arguments, info)
                if inner.guarded or cell.parts.hooks:
                    value = await guarded_call(cell.parts, inner.sdk, ctx,
                                               lambda: inner.run(ctx, arguments))
                else:
                    value = await inner.run(ctx, arguments)
                value = plain(value)
            except CallPaused:
                raise
            except Exception as exc:
                error = await as_tool_error(exc, inner, ctx)
                span.set_error(SpanError(message="Error running tool", data={
                    "tool_name": name, "error": str(error) if cell.sensitive else "(redacted)"}))
                if isinstance(exc, TRIPWIRES):
                    cell.tripped = exc  # the run ends with it once the cell has stopped
                    raise StopCell(f"{name}: a guardrail ended the run") from exc
                if error is exc:
                    raise
                raise error from exc
            if cell.sensitive:
                span.span_data.output = value
            return value

    async def _check_approval(self, cell: _Cell, inner: Inner, ctx: ToolContext[Any],
                              arguments: dict[str, Any], info: CallInfo | None) -> None:
        """Whether the call may run now: its policy, evaluated as the SDK evaluates a direct
        call's; then `approve`, a decision for all of the tool's calls, or a pause."""
        if inner.needs_approval is False:
            return
        evaluation = await evaluate_function_tool_approval(inner.sdk, ctx, ctx.tool_arguments,
                                                           ctx.tool_call_id)
        if evaluation.outcome != "require_approval":
            return
        name = inner.tool.qualified_name
        if self.approve is not None:
            if not await maybe(self.approve(ctx, name, arguments)):
                raise ToolError(f"{name}: the call was not approved")
            return
        decided = cell.always.get(inner.sdk_name)
        if decided is not None:
            if decided.action != "approve":
                raise ToolError(decided.message or "the call was not approved")
            return
        if cell.pausable and info is not None:
            raise CallPaused("approval")
        raise ToolError(f"{name} needs a person's approval, which code cannot ask for here, "
                        "so the call was refused; tell the user what you meant to do with it")


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
