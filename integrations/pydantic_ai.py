"""PydanticAI: code mode as a wrapper toolset and as an agent capability.

    agent = Agent(model, toolsets=[CodeModeToolset(my_toolset)])      # or
    agent = Agent(model, toolsets=[my_toolset], capabilities=[CodeMode()])

The model sees `run_python` (plus the few tools that cannot run from code, see `_pydantic_ai_inner`,
and those `callers` gives it directly); the wrapped tools become Python functions in the
sandbox. Each call the code makes goes through a `ToolManager` over the wrapped toolset, the
way the agent calls tools itself: argument validation, capability hooks, `call_tool` with the
run's `RunContext` (so `deps` arrive), usage counting. A `ModelRetry` from an inner tool is
raised in the code as a `ToolError` with its message; a cell that fails reaches the model as
a retry prompt.

A call that needs approval or an external result (`requires_approval=True`, `ApprovalRequired`,
`CallDeferred`) pauses the cell: the run ends with `DeferredToolRequests`, and a later run given
`DeferredToolResults` continues the cell where it stopped (see `_pydantic_ai_deferred`).

State: by default one interpreter per agent run, closed when the run ends. With
`scope="conversation"` it is kept per `conversation_id` (which PydanticAI carries over with
the message history), so a later run continuing the same conversation finds its variables.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import TypeAdapter
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, ModelRetry, UserError
from pydantic_ai.messages import BinaryContent, InstructionPart, ToolReturn
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool, WrapperToolset
from tooliscode import Limits, ToolRegistry
from tooliscode.codetool import CodeTool, Reply, Sandbox, Toolbox
from tooliscode.durable import Keeper, SessionStore
from tooliscode.engine import Decision
from tooliscode.prompt import (
    CODE_TOOL_NAME,
    CODE_TOOL_SCHEMA,
    code_tool_description,
    instructions,
)
from tooliscode.runtime import Runtime, python_note
from tooliscode.tools import Caller
from typing_extensions import TypedDict

from ._pydantic_ai_deferred import (
    CodeModeApprovals,
    decisions_from,
    open_code_calls,
    pause_metadata,
)
from ._pydantic_ai_inner import Cell, checked, split, tools_of

__all__ = ["CodeMode", "CodeModeApprovals", "CodeModeToolset", "Scope"]

Scope = Literal["run", "conversation"]


class _CodeArgs(TypedDict):
    code: str


_CODE_ARGS = TypeAdapter(_CodeArgs)


@dataclass(kw_only=True)
class _CodeTool(ToolsetTool[AgentDepsT]):
    inner: dict[str, ToolsetTool[AgentDepsT]]
    toolbox: Toolbox
    """The same tools as the sandbox gets them."""


@dataclass
class _RunState:
    """One agent run's sandbox (run scope) and the tools and catalog its last step showed."""

    sandbox: Sandbox | None = None
    toolbox: Toolbox | None = None
    instructions: str | None = None
    description: str = ""


def _tools_key(inner: dict[str, ToolsetTool[Any]]) -> Hashable:
    return json.dumps([(n, t.tool_def.description, t.tool_def.parameters_json_schema,
                        t.tool_def.return_schema) for n, t in inner.items()],
                      sort_keys=True, default=str)


_catalogs: OrderedDict[Hashable, tuple[str, str]] = OrderedDict()
_CATALOGS_KEPT = 32


def _catalog(key: Hashable, inner: dict[str, ToolsetTool[Any]], python: str) -> tuple[str, str]:
    """The instructions and the code tool's description for a tool set. Every run starts
    with its own state, and building a catalog takes milliseconds for hundreds of tools, so
    the last few are kept (by the tools' content, so sharing them is safe)."""
    key = (key, python)
    made = _catalogs.get(key)
    if made is not None:
        _catalogs.move_to_end(key)
    else:
        try:
            registry = ToolRegistry(tools_of(inner, None))
        except ValueError as exc:
            raise UserError(f"code mode cannot take these tools: {exc}") from exc
        made = _catalogs[key] = (instructions(registry, python=python),
                                 code_tool_description(registry))
        while len(_catalogs) > _CATALOGS_KEPT:
            _catalogs.popitem(last=False)
    return made


@dataclass
class CodeModeToolset(WrapperToolset[AgentDepsT]):
    """Shows the model one `run_python` tool in place of the wrapped toolset's tools."""

    limits: Limits | None = None
    scope: Scope = "run"
    """`"run"`: a fresh interpreter per agent run. `"conversation"`: one per `conversation_id`,
    kept across runs until idle for `idle_timeout_s` or `close()`."""
    max_retries: int = 3
    """How many failed cells in a row the model may retry before the run fails."""
    idle_timeout_s: float | None = 1800.0
    describe_names: bool = True
    prestart: bool = True
    """Have the run's interpreter started before its first code arrives (run scope): a spare
    made when the previous run ended, or one started when the tools are first listed."""
    runtime: Runtime | str | None = None
    """The sandbox's Python: "default" (CPython 3.12) or "data" (numpy, pandas, ...)."""
    store: SessionStore | Keeper | None = None
    """Conversation scope: keep each conversation's interpreter in a store, so any worker
    process resumes it (see `tooliscode.durable`), paused cells included."""
    callers: Mapping[str, Caller] = field(default_factory=dict)
    """Who calls each tool: `"code"` (the default: only `run_python`), `"direct"` (the model,
    as a tool beside `run_python`, not in the code) or `"both"`."""
    code_tool: CodeTool = field(default=None, kw_only=True, repr=False)  # type: ignore[assignment]
    """Where runs get interpreters; shared by the per-run copies (and by `CodeMode`'s runs).
    Made from the other options when not given."""
    _run: _RunState | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.scope not in ("run", "conversation"):
            raise UserError(f"scope must be 'run' or 'conversation', not {self.scope!r}")
        self.callers = checked(self.callers)
        if self.code_tool is None:
            self.code_tool = CodeTool(limits=self.limits, describe_names=self.describe_names,
                                     idle_timeout_s=self.idle_timeout_s, runtime=self.runtime,
                                     keep_spare=self.prestart and self.scope == "run",
                                     store=self.store)

    # -- lifecycle ----------------------------------------------------------------------

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        copy = replace(self, wrapped=await self.wrapped.for_run(ctx))
        copy._run = _RunState()
        return copy

    async def for_run_step(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        wrapped = await self.wrapped.for_run_step(ctx)
        if wrapped is self.wrapped:
            return self
        copy = replace(self, wrapped=wrapped)
        copy._run = self._run
        return copy

    async def __aexit__(self, *args: object) -> bool | None:
        try:
            return await self.wrapped.__aexit__(*args)
        finally:
            self._end_run(wait=False)

    def close(self) -> None:
        """Close every interpreter this toolset keeps (conversations, the spare)."""
        self._end_run(wait=True)
        self.code_tool.close()

    def _end_run(self, wait: bool) -> None:
        """Give back the run's interpreter. It is closed (and the next run's spare started)
        on another thread: nobody needs to wait for that."""
        state, self._run = self._run, None
        if state is None or state.sandbox is None:
            return
        if wait:
            state.sandbox.close()
        else:
            self.code_tool.finish(state.sandbox, state.toolbox)

    def _continues(self, ctx: RunContext[AgentDepsT], state: _RunState) -> bool:
        """This run continues a cell paused in an earlier one (its code call is open, and its
        sandbox kept here): it will run in that sandbox, so it takes no spare. Taking one
        made the next spare start then, in the middle of the run, on every resume."""
        return state.sandbox is None and any(
            self.code_tool.has_paused_run(i) for i in open_code_calls(ctx.messages))

    def _own_sandbox(self, state: _RunState) -> Sandbox:
        if state.sandbox is None:
            state.sandbox = self.code_tool.take()
        return state.sandbox

    def _state(self) -> _RunState:
        if self._run is None:  # used without `for_run`: one state for the toolset's life
            self._run = _RunState()
        return self._run

    # -- what the model sees ------------------------------------------------------------

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        tools = await self.wrapped.get_tools(ctx)
        native, inner = split(tools, self.callers, ctx)
        if CODE_TOOL_NAME in tools:
            raise UserError(f"a wrapped tool is named {CODE_TOOL_NAME!r}, the code tool's name")
        key, state = _tools_key(inner), self._state()
        if state.toolbox is None or key != state.toolbox.key:
            state.instructions, state.description = _catalog(key, inner,
                                                             python_note(self.runtime))
            state.toolbox = Toolbox(functools.partial(tools_of, inner), key)
        if self.prestart and self.scope == "run" and not self._continues(ctx, state):
            self._own_sandbox(state).warm(state.toolbox)
        code_def = ToolDefinition(
            name=CODE_TOOL_NAME, description=state.description,
            parameters_json_schema=CODE_TOOL_SCHEMA, sequential=True,
            metadata={"code_arg_name": "code", "code_arg_language": "python"})
        code = _CodeTool(toolset=self, tool_def=code_def, max_retries=self.max_retries,
                         args_validator=_CODE_ARGS.validator, inner=inner,
                         toolbox=state.toolbox)
        return {**native, CODE_TOOL_NAME: code}

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> Any:
        upstream = await self.wrapped.get_instructions(ctx)
        own = self._state().instructions
        if own is None:
            await self.get_tools(ctx)
            own = self._state().instructions
        parts = [] if upstream is None else (
            [upstream] if isinstance(upstream, (str, InstructionPart)) else list(upstream))
        return [*parts, own]

    # -- running code -------------------------------------------------------------------

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT],
                        tool: ToolsetTool[AgentDepsT]) -> Any:
        if not isinstance(tool, _CodeTool):
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        parent = ctx.tool_manager
        manager = ToolManager(toolset=self.wrapped, ctx=ctx, tools=tool.inner,
                              root_capability=parent.root_capability if parent else None)
        call_id = ctx.tool_call_id or CODE_TOOL_NAME

        async def run(where: dict[str, Any], decisions: Mapping[str, Decision] | None) -> Reply:
            return await self.code_tool.arun_code(
                tool_args["code"], context=Cell(manager, contextvars.copy_context()),
                tools=tool.toolbox, call_id=call_id, decisions=decisions, **where)

        reply, decided = await self._cell(ctx, call_id, run)
        if reply.paused:
            # PydanticAI's own pause: the run ends with DeferredToolRequests (CodeModeApprovals
            # names the inner calls there), and approving this call continues the cell. Calls
            # decided now wait for the rest (kept), so only the rest are asked for.
            waiting = [p for p in reply.paused if p.id not in decided]
            raise ApprovalRequired(metadata=pause_metadata(waiting or reply.paused))
        if not reply.ok:
            raise ModelRetry(reply.text)
        calls = reply.result.tool_calls if reply.result is not None else ()
        return ToolReturn(return_value=_with_images(reply), metadata={
            "code_mode": True, "tool_calls": [dataclasses.asdict(r) for r in calls]})

    async def _cell(self, ctx: RunContext[AgentDepsT], call_id: str,
                    run: Callable[[dict[str, Any], Mapping[str, Decision] | None],
                                  Awaitable[Reply]]) -> tuple[Reply, Mapping[str, Decision]]:
        """Run the code call's cell, or continue the one it paused when the call comes back
        approved; also the decisions handed in."""
        decisions = decisions_from(ctx.tool_call_metadata) if ctx.tool_call_approved else None
        where, resumed = self._where(ctx, call_id if ctx.tool_call_approved else None)
        if decisions is not None:
            return await run(where, decisions), decisions
        if resumed:  # approved with nothing decided inside: the paused cell asks again
            return await run(where, {}), {}
        if ctx.tool_call_approved and "key" in where:
            # the same, for a cell paused in the conversation (here, or in its store); with
            # none, the code itself waited for approval: it runs
            reply = await run(where, {})
            if reply.result is not None:
                return reply, {}
        waiting = self._paused_beside(ctx, call_id, where)
        if waiting is not None:  # a new cell would give up the one paused beside it
            raise ModelRetry(f"[error] The code of call {waiting} is paused, waiting for a "
                             "person's decision; this code did not run. Run it again after.")
        return await run(where, None), {}

    def _paused_beside(self, ctx: RunContext[AgentDepsT], call_id: str,
                       where: dict[str, Any]) -> str | None:
        """Another code call of the model's last response whose cell is paused where this
        one would run."""
        sandbox = where.get("sandbox") or self.code_tool.get(where.get("key"))
        session = sandbox.session if sandbox is not None else None
        paused = session.paused_for if session is not None else None
        if paused is None or paused == call_id or paused not in open_code_calls(ctx.messages):
            return None
        return paused

    def _where(self, ctx: RunContext[AgentDepsT], approved: str | None
               ) -> tuple[dict[str, Any], bool]:
        """Where the code runs, and whether that is a paused cell's run sandbox. Run scope:
        the run's own sandbox or, for an approved code call whose cell paused in an earlier
        run, that run's sandbox, which becomes this run's (the one taken goes back).
        Conversation scope: the conversation's."""
        if self.scope != "run":
            return {"key": ctx.conversation_id}, False
        state = self._state()
        paused = self.code_tool.paused_run(approved) if approved is not None else None
        if paused is None:
            return {"sandbox": self._own_sandbox(state)}, False
        if state.sandbox is not None:
            self.code_tool.finish(state.sandbox, state.toolbox)
        state.sandbox = paused
        return {"sandbox": paused}, True


def _with_images(reply: Reply) -> str | list[str | BinaryContent]:
    """The tool result: the text, then each figure the cell made as `BinaryContent`. In the
    return value (not `ToolReturn.content`, a separate user message) it stays the tool's
    result: sent natively where the provider takes files in tool results, else framed as
    coming from this tool call."""
    if not reply.images:
        return reply.text
    return [reply.text, *(BinaryContent(i.data, media_type=i.mime) for i in reply.images)]


@dataclass
class CodeMode(CodeModeApprovals[AgentDepsT]):
    """`Agent(capabilities=[CodeMode()])`: the agent's tools become code, run in a sandbox.

    One capability instance keeps what outlives a run (the conversations' interpreters with
    `scope="conversation"`, the next run's spare) across the agent's runs; `close()` ends them.
    Inner calls that need approval or an external result pause the cell and end the run with
    `DeferredToolRequests` naming them (see `CodeModeApprovals`).
    """

    limits: Limits | None = None
    scope: Scope = "run"
    max_retries: int = 3
    idle_timeout_s: float | None = 1800.0
    describe_names: bool = True
    prestart: bool = True
    runtime: Runtime | str | None = None
    store: SessionStore | Keeper | None = None
    callers: Mapping[str, Caller] = field(default_factory=dict)
    code_tool: CodeTool | None = field(default=None, init=False, repr=False)
    """Shared by the toolsets this capability wraps; made with the first."""

    def __post_init__(self) -> None:
        self.callers = checked(self.callers)

    def get_wrapper_toolset(self, toolset: AbstractToolset[AgentDepsT]
                            ) -> AbstractToolset[AgentDepsT] | None:
        wrapper = CodeModeToolset(toolset, limits=self.limits, scope=self.scope,
                                  max_retries=self.max_retries, idle_timeout_s=self.idle_timeout_s,
                                  describe_names=self.describe_names, prestart=self.prestart,
                                  runtime=self.runtime, store=self.store,
                                  callers=self.callers, code_tool=self.code_tool)  # type: ignore[arg-type]
        self.code_tool = wrapper.code_tool
        return wrapper

    def close(self) -> None:
        """Close the interpreters kept across runs (conversations, the spare)."""
        if self.code_tool is not None:
            self.code_tool.close()
