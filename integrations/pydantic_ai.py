"""PydanticAI: code mode as a wrapper toolset and as an agent capability.

    agent = Agent(model, toolsets=[CodeModeToolset(my_toolset)])      # or
    agent = Agent(model, toolsets=[my_toolset], capabilities=[CodeMode()])

The model sees `run_python` (plus the few tools that cannot run from code, see `_stays_native`);
the wrapped tools become Python functions in the sandbox. Each call the code makes goes
through a `ToolManager` over the wrapped toolset, the way the agent calls tools itself:
argument validation, capability hooks, `call_tool` with the run's `RunContext` (so `deps`
arrive), usage counting. A `ModelRetry` from an inner tool is raised in the code as a
`ToolError` with its message; a cell that fails reaches the model as a retry prompt.

State: by default one interpreter per agent run, closed when the run ends. With
`scope="conversation"` it is kept per `conversation_id` (which PydanticAI carries over with
the message history), so a later run continuing the same conversation finds its variables.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import json
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import TypeAdapter
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed, UserError
from pydantic_ai.messages import BinaryContent, InstructionPart, ToolCallPart, ToolReturn
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import AgentDepsT, ToolDefinition, ToolDenied
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool, WrapperToolset
from tooliscode import Limits, Tool, ToolError, ToolRegistry
from tooliscode.codetool import CodeTool, Reply, Sandbox, Toolbox
from tooliscode.durable import Keeper, SessionStore
from tooliscode.prompt import (
    CODE_TOOL_NAME,
    CODE_TOOL_SCHEMA,
    code_tool_description,
    instructions,
)
from tooliscode.runtime import Runtime, python_note
from typing_extensions import TypedDict

__all__ = ["CodeMode", "CodeModeToolset", "Scope"]

Scope = Literal["run", "conversation"]


class _CodeArgs(TypedDict):
    code: str


_CODE_ARGS = TypeAdapter(_CodeArgs)


@dataclass
class _Cell:
    """What one `run_python` call's inner tool calls go through."""

    manager: ToolManager[Any]
    parent_id: str
    context: contextvars.Context
    """The code tool's context, so tracing spans of inner calls nest under it."""
    count: int = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        self.count += 1
        part = ToolCallPart(tool_name=name, args=arguments,
                            tool_call_id=f"{self.parent_id}__{self.count}")
        return await self.context.run(asyncio.ensure_future, self._handle(part))

    async def _handle(self, part: ToolCallPart) -> Any:
        try:
            result = await self.manager.handle_call(part, wrap_validation_errors=False)
        except (ModelRetry, ToolFailed) as exc:
            raise ToolError(exc.message) from None
        except (CallDeferred, ApprovalRequired):
            raise ToolError(f"{part.tool_name} needs approval or an external result, which code "
                            "cannot wait for") from None
        if isinstance(result, ToolDenied):
            raise ToolError(f"{part.tool_name} was denied: {result.message}")
        return result.return_value if isinstance(result, ToolReturn) else result


@dataclass(frozen=True)
class _InnerTool:
    """The function the session calls for one wrapped tool: it runs in the current cell."""

    sandbox: Sandbox
    name: str

    async def __call__(self, /, **arguments: Any) -> Any:
        cell = self.sandbox.context
        if not isinstance(cell, _Cell):
            raise ToolError("tools can only be called while run_python runs")
        return await cell.call(self.name, arguments)


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


def _stays_native(tool_def: ToolDefinition, ctx: RunContext[Any]) -> bool:
    """Tools that keep their own place: framework control tools (search, capability loading),
    tools not revealed yet, deferred ones (approval, external), native-tool fallbacks, and
    other code-execution tools."""
    return (tool_def.tool_kind is not None or tool_def.defer or bool(tool_def.unless_native)
            or not ctx.is_tool_available(tool_def)
            or "code_arg_name" in (tool_def.metadata or {}))


def _tools(inner: dict[str, ToolsetTool[Any]], sandbox: Sandbox | None) -> list[Tool]:
    return [Tool(name=name, description=t.tool_def.description or "",
                 parameters=t.tool_def.parameters_json_schema,
                 output_schema=t.tool_def.return_schema,
                 function=None if sandbox is None else _InnerTool(sandbox, name))
            for name, t in inner.items()]


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
            registry = ToolRegistry(_tools(inner, None))
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
    process resumes it (see `tooliscode.durable`)."""
    code_tool: CodeTool = field(default=None, kw_only=True, repr=False)  # type: ignore[assignment]
    """Where runs get interpreters; shared by the per-run copies (and by `CodeMode`'s runs).
    Made from the other options when not given."""
    _run: _RunState | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.scope not in ("run", "conversation"):
            raise UserError(f"scope must be 'run' or 'conversation', not {self.scope!r}")
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
        native = {n: t for n, t in tools.items() if _stays_native(t.tool_def, ctx)}
        inner = {n: t for n, t in tools.items() if n not in native}
        if CODE_TOOL_NAME in tools:
            raise UserError(f"a wrapped tool is named {CODE_TOOL_NAME!r}, the code tool's name")
        key, state = _tools_key(inner), self._state()
        if state.toolbox is None or key != state.toolbox.key:
            state.instructions, state.description = _catalog(key, inner,
                                                             python_note(self.runtime))
            state.toolbox = Toolbox(functools.partial(_tools, inner), key)
        if self.prestart and self.scope == "run":
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
        cell = _Cell(manager, ctx.tool_call_id or CODE_TOOL_NAME, contextvars.copy_context())
        code, where = tool_args["code"], self._where(ctx)
        reply = await self.code_tool.arun_code(code, context=cell, tools=tool.toolbox, **where)
        if not reply.ok:
            raise ModelRetry(reply.text)
        calls = reply.result.tool_calls if reply.result is not None else ()
        return ToolReturn(return_value=_with_images(reply), metadata={
            "code_mode": True, "tool_calls": [dataclasses.asdict(r) for r in calls]})

    def _where(self, ctx: RunContext[AgentDepsT]) -> dict[str, Any]:
        """Run scope: the run's own sandbox; conversation scope: the conversation's."""
        if self.scope == "run":
            return {"sandbox": self._own_sandbox(self._state())}
        return {"key": ctx.conversation_id}


def _with_images(reply: Reply) -> str | list[str | BinaryContent]:
    """The tool result: the text, then each figure the cell made as `BinaryContent`. In the
    return value (not `ToolReturn.content`, a separate user message) it stays the tool's
    result: sent natively where the provider takes files in tool results, else framed as
    coming from this tool call."""
    if not reply.images:
        return reply.text
    return [reply.text, *(BinaryContent(i.data, media_type=i.mime) for i in reply.images)]


@dataclass
class CodeMode(AbstractCapability[AgentDepsT]):
    """`Agent(capabilities=[CodeMode()])`: the agent's tools become code, run in a sandbox.

    One capability instance keeps what outlives a run (the conversations' interpreters with
    `scope="conversation"`, the next run's spare) across the agent's runs; `close()` ends them.
    """

    limits: Limits | None = None
    scope: Scope = "run"
    max_retries: int = 3
    idle_timeout_s: float | None = 1800.0
    describe_names: bool = True
    prestart: bool = True
    runtime: Runtime | str | None = None
    store: SessionStore | Keeper | None = None
    code_tool: CodeTool | None = field(default=None, init=False, repr=False)
    """Shared by the toolsets this capability wraps; made with the first."""

    def get_wrapper_toolset(self, toolset: AbstractToolset[AgentDepsT]
                            ) -> AbstractToolset[AgentDepsT] | None:
        wrapper = CodeModeToolset(toolset, limits=self.limits, scope=self.scope,
                                  max_retries=self.max_retries, idle_timeout_s=self.idle_timeout_s,
                                  describe_names=self.describe_names, prestart=self.prestart,
                                  runtime=self.runtime, store=self.store,
                                  code_tool=self.code_tool)  # type: ignore[arg-type]
        self.code_tool = wrapper.code_tool
        return wrapper

    def close(self) -> None:
        """Close the interpreters kept across runs (conversations, the spare)."""
        if self.code_tool is not None:
            self.code_tool.close()
