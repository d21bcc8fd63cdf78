"""`CodeModeToolset`: a wrapper toolset that shows the model `run_python` in place of the
wrapped toolset's tools."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from pydantic import TypeAdapter
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ModelRetry, UserError
from pydantic_ai.messages import InstructionPart
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import AgentDepsT, ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool, WrapperToolset
from tooliscode.adapters import Facade, OptionArgs, Options, Tools, cancel_after
from tooliscode.codetool import CodeTool, Reply, Sandbox, Toolbox
from tooliscode.engine import Cancel, Decision
from tooliscode.prompt import CODE_TOOL_SCHEMA
from typing_extensions import TypedDict, Unpack

from ._deferred import decisions_from, open_code_calls
from ._inner import HOOKS, InnerCell, split
from ._timeout import time_limit

__all__ = ["CodeModeArgs", "CodeModeToolset", "Scope", "Settings"]

Scope = Literal["run", "conversation"]


class _CodeArgs(TypedDict):
    code: str


_CODE_ARGS = TypeAdapter(_CodeArgs)


class CodeModeArgs(OptionArgs, total=False):
    """The keyword arguments of `CodeModeToolset` and `CodeMode`: every front end's options
    (`tooliscode.adapters.Options`), and PydanticAI's own."""

    scope: Scope
    """`"run"`: a fresh interpreter per agent run. `"conversation"`: one per
    `conversation_id`, kept across runs (with a `store`, in any worker process, paused cells
    included)."""
    max_retries: int
    """How many failed cells in a row the model may retry before the run fails."""
    prestart: bool
    """Have the run's interpreter started before its first code arrives (run scope): a spare
    made when the previous run ended, or one started when the tools are first listed."""
    timeout: float | None
    """The time limit of one code tool call, in seconds, as `Tool(timeout=...)`: at that time
    the cell is stopped, the session comes back to its state before it, and the model reads
    so in a retry prompt (as for a function tool that timed out). None: the agent's
    `tool_timeout`, if it has one (PydanticAI applies that only to its function tools)."""


_DEFAULTS: CodeModeArgs = {"scope": "run", "max_retries": 3, "prestart": True, "timeout": None}
"""PydanticAI's own options' defaults (the others are every front end's, `Options`)."""


@dataclass(init=False)
class Settings(Facade):
    """What `CodeModeToolset` and `CodeMode` are made with (see `CodeModeArgs`)."""

    options: Options
    scope: Scope
    max_retries: int
    prestart: bool
    timeout: float | None
    _code_tool: CodeTool = field(repr=False)
    """Where runs get interpreters; shared by the per-run copies (and by `CodeMode`'s)."""

    def _configure(self, options: Options | None, code_tool: CodeTool | None,
                   args: CodeModeArgs) -> None:
        """Take `args` (mistakes reported as PydanticAI reports them, `UserError`)."""
        given: dict[str, Any] = {**_DEFAULTS, **args}
        self.scope = given.pop("scope")
        self.max_retries = given.pop("max_retries")
        self.prestart = given.pop("prestart")
        self.timeout = given.pop("timeout")
        if self.scope not in ("run", "conversation"):
            raise UserError(f"scope must be 'run' or 'conversation', not {self.scope!r}")
        if self.timeout is not None and not self.timeout > 0:
            raise UserError(f"timeout must be > 0, got {self.timeout}")
        try:
            self.options = Options.of(options, **given)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        self._code_tool = code_tool or self.options.code_tool(
            keep_spare=self.prestart and self.scope == "run")


@dataclass(kw_only=True)
class _CodeTool(ToolsetTool[AgentDepsT]):
    inner: dict[str, ToolsetTool[AgentDepsT]]
    tools: Tools[ToolsetTool[Any], InnerCell]
    """The same tools as the sandbox gets them."""


@dataclass
class _RunState:
    """One agent run's sandbox (run scope) and the tools and catalog its last step showed."""

    sandbox: Sandbox | None = None
    tools: Tools[ToolsetTool[Any], InnerCell] | None = None
    instructions: str | None = None
    description: str = ""


@dataclass(frozen=True)
class _Declared:
    """Wrapped tools as one step declared them, and their catalog."""

    definitions: tuple[ToolDefinition, ...]
    tools: Tools[ToolsetTool[Any], InnerCell]
    instructions: str
    description: str


@dataclass
class _Shown:
    """The tools the last step of any run declared, kept across runs (the per-run copies
    share it): a step whose wrapped tools have the same definitions takes them as they are,
    instead of declaring and describing them again (some 0.1 ms of every run). Replaced
    whole, so that runs side by side never read half of another's."""

    last: _Declared | None = None


@dataclass(init=False)
class CodeModeToolset(WrapperToolset[AgentDepsT], Settings):
    """Shows the model one `run_python` tool in place of the wrapped toolset's tools. Made
    with `CodeModeArgs`."""

    _run: _RunState | None = field(default=None, init=False, repr=False, compare=False)
    _shown: _Shown = field(default_factory=_Shown, init=False, repr=False, compare=False)

    def __init__(self, wrapped: AbstractToolset[AgentDepsT], *, options: Options | None = None,
                 _code_tool: CodeTool | None = None, **args: Unpack[CodeModeArgs]):
        self.wrapped = wrapped
        self._configure(options, _code_tool, args)
        self._run = None
        self._shown = _Shown()

    # -- lifecycle ----------------------------------------------------------------------

    async def for_run(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        copy = replace(self, wrapped=await self.wrapped.for_run(ctx))
        copy._run, copy._shown = _RunState(), self._shown
        return copy

    async def for_run_step(self, ctx: RunContext[AgentDepsT]) -> AbstractToolset[AgentDepsT]:
        wrapped = await self.wrapped.for_run_step(ctx)
        if wrapped is self.wrapped:
            return self
        copy = replace(self, wrapped=wrapped)
        copy._run, copy._shown = self._run, self._shown
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
            self.code_tool.finish(state.sandbox, state.tools.toolbox if state.tools else None)

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

    def _session_tools(self) -> Toolbox | None:
        tools = self._state().tools
        return tools.toolbox if tools is not None else None

    # -- what the model sees ------------------------------------------------------------

    async def get_tools(self, ctx: RunContext[AgentDepsT]) -> dict[str, ToolsetTool[AgentDepsT]]:
        tools = await self.wrapped.get_tools(ctx)
        name = self.options.name
        native, inner = split(tools, self.options.callers, ctx)
        if name in tools:
            raise UserError(f"a wrapped tool is named {name!r}, the code tool's name")
        state, shown = self._state(), self._shown.last
        definitions = tuple(tool.tool_def for tool in inner.values())
        if shown is None or shown.definitions != definitions:
            listed = Tools.of(HOOKS, inner.values())
            try:
                catalog = listed.catalog(self.options)
            except ValueError as exc:
                raise UserError(f"code mode cannot take these tools: {exc}") from exc
            shown = self._shown.last = _Declared(
                definitions, listed, catalog.instructions,
                catalog.tool_description(self.options.in_description(True)))
        listed = shown.tools
        if state.tools is not listed:
            state.tools, state.instructions, state.description = \
                listed, shown.instructions, shown.description
        if self.prestart and self.scope == "run" and not self._continues(ctx, state):
            self._own_sandbox(state).warm(state.tools.toolbox)
        code_def = ToolDefinition(
            name=name, description=state.description, parameters_json_schema=CODE_TOOL_SCHEMA,
            sequential=True, timeout=self.timeout,
            metadata={"code_arg_name": "code", "code_arg_language": "python"})
        code = _CodeTool(toolset=self, tool_def=code_def, max_retries=self.max_retries,
                         args_validator=cast(Any, _CODE_ARGS.validator), inner=inner,
                         tools=listed)
        return {**native, name: code}

    async def get_instructions(self, ctx: RunContext[AgentDepsT]) -> Any:
        upstream = await self.wrapped.get_instructions(ctx)
        own = self._state().instructions
        if own is None:
            await self.get_tools(ctx)
            own = self._state().instructions
        parts = [] if upstream is None else (
            [upstream] if isinstance(upstream, (str, InstructionPart)) else list(upstream))
        return parts if self.options.instructions == "description" else [*parts, own]

    # -- running code -------------------------------------------------------------------

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: RunContext[AgentDepsT],
                        tool: ToolsetTool[AgentDepsT]) -> Any:
        if not isinstance(tool, _CodeTool):
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        parent = ctx.tool_manager
        manager = ToolManager(toolset=self.wrapped, ctx=ctx, tools=tool.inner,
                              root_capability=parent.root_capability if parent else None)
        cell = InnerCell(manager=manager, context=contextvars.copy_context(), tools=tool.tools,
                         call_id=ctx.tool_call_id or self.options.name, run=ctx)
        seconds = time_limit(ctx, tool.tool_def)
        with cancel_after(seconds, f"PydanticAI's time limit for this tool call, {seconds} s, "
                                   "ran out") as cancel:
            reply = await self._cell(ctx, cell, tool_args["code"], cancel)
        return HOOKS.pause(cell, reply) if reply.paused else HOOKS.render(reply)

    async def _cell(self, ctx: RunContext[AgentDepsT], cell: InnerCell, code: str,
                    cancel: Cancel | None = None) -> Reply:
        """Run the code call's cell, or continue the one it paused when the call comes back
        approved (`cell.decided`: the decisions handed in)."""
        call_id = cell.call_id

        output = self.options.output(call_id, HOOKS.output(cell))

        async def run(where: dict[str, Any], decisions: Mapping[str, Decision] | None) -> Reply:
            return await self.code_tool.arun_code(code, context=cell, tools=cell.tools.toolbox,
                                                  call_id=call_id, decisions=decisions,
                                                  on_output=output, cancel=cancel, **where)

        decisions = decisions_from(ctx.tool_call_metadata) if ctx.tool_call_approved else None
        where, resumed = self._where(ctx, call_id if ctx.tool_call_approved else None)
        if decisions is not None:
            cell.decided = decisions
            return await run(where, decisions)
        if resumed:  # approved with nothing decided inside: the paused cell asks again
            return await run(where, {})
        if ctx.tool_call_approved and "key" in where:
            # the same, for a cell paused in the conversation (here, or in its store); with
            # none, the code itself waited for approval: it runs
            reply = await run(where, {})
            if reply.result is not None:
                return reply
        waiting = self.code_tool.paused_in(where.get("key"), where.get("sandbox"))
        if waiting is not None and waiting != call_id and waiting in open_code_calls(
                ctx.messages):  # a new cell would give up the one paused beside it
            raise ModelRetry(f"[error] The code of call {waiting} is paused, waiting for a "
                             "person's decision; this code did not run. Run it again after.")
        return await run(where, None)

    def _where(self, ctx: RunContext[AgentDepsT], approved: str | None
               ) -> tuple[dict[str, Any], bool]:
        """Where the code runs, and whether that is a paused cell's run sandbox. Run scope:
        the run's own sandbox or, for an approved code call whose cell paused in an earlier
        run, that run's sandbox, which becomes this run's (the one taken goes back).
        Conversation scope: the conversation's."""
        if self.scope != "run":
            return {"key": HOOKS.key(ctx)}, False
        state = self._state()
        paused = self.code_tool.paused_run(approved) if approved is not None else None
        if paused is None:
            return {"sandbox": self._own_sandbox(state)}, False
        if state.sandbox is not None:
            self.code_tool.finish(state.sandbox, state.tools.toolbox if state.tools else None)
        state.sandbox = paused
        return {"sandbox": paused}, True
