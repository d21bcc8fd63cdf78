"""Google ADK: an agent's tools behind one code tool, and the sandbox as its code executor.

    agent = LlmAgent(model=..., tools=[CodeModeToolset([get_weather, search_docs, mcp_tools])])
    agent = LlmAgent(model=..., code_executor=SandboxCodeExecutor())

The toolset shows the model one tool, `run_python`, and puts the catalog of the wrapped tools
(`FunctionTool`s, other ADK tools, plain callables, and the tools of ADK toolsets such as
`McpToolset`) in the system instruction. Each call the code makes runs the real tool the way
ADK's flow does: with a `ToolContext` of its own that shares the run's session and the code
tool's event actions (so state changes and saved artifacts land with the code tool's
response), through the plugins' and the agent's before/after/on-error tool callbacks, inside an
`execute_tool` span. A tool that raises (and no error callback answers) raises in the code.

One interpreter per ADK session (app, user and session id): a later turn of the same session
finds its variables; figures come back as image parts of the function response.

`SandboxCodeExecutor` is the isolated local choice for `LlmAgent(code_executor=...)`, between
`UnsafeLocalCodeExecutor` (the host's own Python) and a container: stateful per session, input
files in the session folder, figures saved as artifacts.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import inspect
import os
import time
from collections.abc import Awaitable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from google.adk.code_executors import BaseCodeExecutor
from google.adk.code_executors.code_execution_utils import (
    CodeExecutionInput,
    CodeExecutionResult,
    File,
)
from google.adk.events import Event
from google.adk.telemetry import trace_tool_call, tracer
from google.adk.tools import BaseTool, FunctionTool, ToolContext
from google.adk.tools.base_toolset import BaseToolset
from google.genai import types
from opentelemetry import context as otel_context
from pydantic import ConfigDict, PrivateAttr
from tooliscode import ToolError
from tooliscode.adapters import (
    Binding,
    Cell,
    Facade,
    Hooks,
    OptionArgs,
    Options,
    OutputChunk,
    OutputSink,
    Tools,
    cancel_when,
    code_of,
)
from tooliscode.codetool import CodeTool, Reply, Sandbox, Toolbox
from tooliscode.mcp import mcp_result_value
from tooliscode.prompt import CODE_TOOL_SCHEMA
from tooliscode.tools import return_schema
from typing_extensions import Unpack

__all__ = ["CodeModeToolset", "SandboxCodeExecutor"]


@dataclass(kw_only=True)
class _Cell(Cell):
    """The code tool's context, and the OpenTelemetry context of its call (inner calls'
    spans are its children), for the calls of the running cell."""

    ctx: ToolContext
    otel: Any
    tool: str = ""
    """The code tool's name."""


class _Hooks(Hooks[BaseTool, _Cell]):
    """ADK tools, run the way ADK's flow runs the model's calls."""

    def declare(self, native: BaseTool) -> Binding[BaseTool]:
        """A tool needing the user's confirmation is refused from code (see `_dispatch`)."""
        decl = native._get_declaration()
        assert decl is not None
        parameters = decl.parameters_json_schema
        if parameters is None and decl.parameters is not None:
            parameters = decl.parameters.json_schema.model_dump(mode="json", exclude_none=True)
        output = decl.response_json_schema
        if output is None and isinstance(native, FunctionTool):
            output = return_schema(native.func)
        confirm = getattr(native, "_require_confirmation", False)
        return Binding.of(native, name=decl.name or native.name,
                          description=decl.description or native.description,
                          parameters=parameters or {}, output_schema=output,
                          approval="asked" if confirm else "never")

    async def call(self, cell: _Cell, binding: Binding[BaseTool], arguments: dict[str, Any],
                   call_id: str) -> Any:
        tool, parent = binding.native, cell.ctx
        invocation = parent.get_invocation_context()
        with tracer.start_as_current_span(f"execute_tool {tool.name}", context=cell.otel):
            ctx = ToolContext(invocation, event_actions=parent.actions, function_call_id=call_id)
            try:
                value = await _dispatch(tool, arguments, ctx, invocation)
            except Exception as exc:
                trace_tool_call(tool, arguments, None, error=exc, invocation_context=invocation)
                raise
            trace_tool_call(tool, arguments, None, invocation_context=invocation)
        return _mcp_value(tool, value) if _is_mcp(tool) else value

    def render(self, reply: Reply) -> dict[str, Any]:
        """The function response: the text under `result` (`error` for a failed cell), and
        each figure as an image part, which ADK sends to the model as media of the
        response."""
        body: dict[str, Any] = {"result" if reply.ok else "error": reply.text}
        if reply.images:
            body["images"] = [types.Part.from_bytes(data=i.data, mime_type=i.mime)
                              for i in reply.images]
        return body

    def key(self, context: Any) -> Hashable:
        """One interpreter per ADK session: (app, user, session id)."""
        session = context.session
        return (session.app_name, session.user_id, session.id)

    def output(self, cell: _Cell) -> OutputSink | None:
        """Partial events of the run (`event.partial`, as a streamed model reply's chunks):
        `Runner.run_async` yields them as they come and keeps none in the session. Shaped
        like ADK's own streaming-tool events (the agent as author, branch `<tool>@<call
        id>`); `custom_metadata` says what they are.

        ADK has no public way for a tool to add an event to a run that is not live
        (adk-python#5444): this puts them on the invocation's event queue, as ADK's live
        streaming tools do; an ADK without that queue streams nothing here."""
        invocation = cell.ctx.get_invocation_context()
        enqueue = getattr(invocation, "_enqueue_event", None)
        if enqueue is None or getattr(invocation, "_event_queue", None) is None:
            return None
        call = cell.ctx.function_call_id
        branch = f"{cell.tool}@{call}" if call else cell.tool
        author = invocation.agent.name if invocation.agent is not None else cell.tool

        def send(chunk: OutputChunk) -> Awaitable[None]:
            return enqueue(Event(
                author=author, invocation_id=invocation.invocation_id, branch=branch,
                partial=True, content=types.Content(role="model",
                                                    parts=[types.Part(text=chunk.text)]),
                custom_metadata=chunk.payload()))

        return send


_HOOKS = _Hooks()


class CodeModeToolset(BaseToolset, Facade):
    """One `run_python` tool over ADK tools, toolsets and callables, for `LlmAgent(tools=...)`.

    `tools` takes what `LlmAgent(tools=...)` takes: callables, `BaseTool`s (`FunctionTool`s
    among them) and `BaseToolset`s (e.g. `McpToolset`, listed on each run as the agent would).
    The guide and catalog go in the system instruction. Tools that need the user's
    confirmation are refused when code calls them. The options are every front end's
    (`tooliscode.adapters.Options`); a conversation's key is (app, user, session id).
    """

    def __init__(self, tools: Iterable[Any] = (), **options: Unpack[OptionArgs]):
        super().__init__()
        self.options = Options(**options)
        self._tools: list[BaseTool] = []
        self._toolsets: list[BaseToolset] = []
        for item in tools:
            if isinstance(item, BaseToolset):
                self._toolsets.append(item)
            elif isinstance(item, BaseTool):
                self._tools.append(item)
            elif callable(item):
                self._tools.append(FunctionTool(item))
            else:
                raise TypeError(f"cannot call {type(item).__name__} from code: pass callables, "
                                "ADK tools or toolsets")
        self._code_tool = self.options.code_tool()
        self._current: _CodeTool | None = None

    async def get_tools(self, readonly_context: Any = None) -> list[BaseTool]:
        found = list(self._tools)
        for toolset in self._toolsets:
            found += await toolset.get_tools_with_prefix(readonly_context)
        current = self._code_tool_over(found)
        return [current, *current.tools.direct]

    def _session_tools(self) -> Toolbox:
        return (self._current or self._code_tool_over(list(self._tools))).tools.toolbox

    def _code_tool_over(self, found: list[BaseTool]) -> _CodeTool:
        """The code tool over `found`: the last one made while the tools read the same (a
        toolset may list new objects for the same tools: its calls then get those)."""
        callable_ = [t for t in found if t._get_declaration() is not None]
        tools = Tools.of(_HOOKS, callable_, self.options.callers)
        if any(t.name == self.options.name for t in tools.declared):
            raise ValueError(f"a wrapped tool is named {self.options.name!r}, the code tool's "
                             "name")
        current = self._current
        if current is None or current.tools.toolbox.key != tools.toolbox.key:
            current = self._current = _CodeTool(self, tools)
        else:
            current.tools = tools
        return current

    async def close(self) -> None:  # type: ignore[override] # ADK awaits a toolset's close
        """Close the wrapped toolsets and every interpreter."""
        for toolset in self._toolsets:
            await toolset.close()
        await asyncio.to_thread(self.code_tool.close)


class _CodeTool(BaseTool):
    """`run_python`: its declaration, the guide in the system instruction, and the call."""

    def __init__(self, owner: CodeModeToolset, tools: Tools[BaseTool, _Cell]):
        catalog = tools.catalog(owner.options)
        super().__init__(name=owner.options.name,
                         description=catalog.tool_description(owner.options.in_description(True)))
        self.owner, self.tools, self.guide = owner, tools, catalog.instructions

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(name=self.name, description=self.description,
                                         parameters_json_schema=dict(CODE_TOOL_SCHEMA))

    async def process_llm_request(self, *, tool_context: ToolContext, llm_request: Any) -> None:
        await super().process_llm_request(tool_context=tool_context, llm_request=llm_request)
        if self.owner.options.instructions != "description":
            llm_request.append_instructions([self.guide])

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        try:
            code = code_of(args)
        except ValueError as exc:
            return {"error": str(exc)}
        cell = _Cell(ctx=tool_context, otel=otel_context.get_current(), tools=self.tools,
                     call_id=tool_context.function_call_id or self.name, tool=self.name)
        reply = await self.owner.code_tool.arun_code(
            code, key=_HOOKS.key(tool_context), context=cell, tools=self.tools.toolbox,
            on_output=self.owner.options.output(cell.call_id, _HOOKS.output(cell)))
        return _HOOKS.render(reply)

    def _detect_error_in_response(self, response: Any) -> str | None:
        """ADK's telemetry hook: a failed cell marks the tool span as an error."""
        return "CODE_ERROR" if isinstance(response, dict) and "error" in response else None


# -- one inner call, as ADK's flow makes it ----------------------------------------------------


async def _dispatch(tool: BaseTool, args: dict[str, Any], ctx: ToolContext,
                    invocation: Any) -> Any:
    """Steps 1-6 of ADK's tool pipeline (flows/llm_flows/tools/_caller.py): the callbacks may
    answer or replace the call, as they do for the model's own calls."""
    plugins, agent = invocation.plugin_manager, invocation.agent
    result = await plugins.run_before_tool_callback(tool=tool, tool_args=args, tool_context=ctx)
    if result is None:
        result = await _first(agent, "canonical_before_tool_callbacks", tool=tool, args=args,
                              tool_context=ctx)
    if result is None:
        if await tool.check_require_confirmation(args, ctx):
            raise ToolError(f"{tool.name} needs the user's confirmation, which code cannot ask "
                            "for, so the call was refused; call it as a tool of its own")
        try:
            result = await tool.run_async(args=args, tool_context=ctx)
        except Exception as exc:
            result = await plugins.run_on_tool_error_callback(tool=tool, tool_args=args,
                                                              tool_context=ctx, error=exc)
            if result is None:
                result = await _first(agent, "canonical_on_tool_error_callbacks", tool=tool,
                                      args=args, tool_context=ctx, error=exc)
            if result is None:
                raise
    altered = await plugins.run_after_tool_callback(tool=tool, tool_args=args, tool_context=ctx,
                                                    result=result)
    if altered is None:
        altered = await _first(agent, "canonical_after_tool_callbacks", tool=tool, args=args,
                               tool_context=ctx, tool_response=result)
    return result if altered is None else altered


async def _first(agent: Any, callbacks: str, **arguments: Any) -> Any:
    """The first answer of an agent's callbacks (ADK stops at the first that is not None)."""
    for callback in getattr(agent, callbacks, None) or ():
        answer = callback(**arguments)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is not None:
            return answer
    return None


def _is_mcp(tool: BaseTool) -> bool:
    return type(tool).__module__.startswith("google.adk.tools.mcp_tool")


def _mcp_value(tool: BaseTool, result: Any) -> Any:
    """An MCP tool's dumped `CallToolResult` as the value the code gets (as our own MCP
    client gives it: structured content, else the text)."""
    if not isinstance(result, dict) or "content" not in result:
        return result
    blocks = [SimpleNamespace(**b) if b.get("type") == "text" else b
              for b in result.get("content") or ()]
    declaration = tool._get_declaration()
    return mcp_result_value(SimpleNamespace(
        is_error=bool(result.get("isError")), content=blocks,
        structured_content=result.get("structuredContent")),
        declaration.response_json_schema if declaration is not None else None)


# -- the code executor -------------------------------------------------------------------------


class SandboxCodeExecutor(BaseCodeExecutor, Facade):
    """Runs the model's code blocks in the sandbox, for `LlmAgent(code_executor=...)`.

    Stateful by default: one interpreter per ADK session (the `execution_id` ADK passes), so
    later code blocks see earlier variables. Input files are written to the session folder
    (`/session` in the code); figures come back as output files, which ADK saves as artifacts.
    The options are every front end's (`tooliscode.adapters.Options`). ADK's
    `timeout_seconds` bounds each block, and an aborted run (`run_async(abort_signal=...)`)
    stops the running one: the block comes back to the state before it, and the model reads
    why. A run whose task is cancelled does not reach it (ADK runs executors on a thread), so
    its block runs to its end or its time limit.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    stateful: bool = True
    _code_tool: CodeTool = PrivateAttr()

    def __init__(self, *, stateful: bool = True, timeout_seconds: int | None = None,
                 **options: Unpack[OptionArgs]):
        super().__init__(stateful=stateful, timeout_seconds=timeout_seconds)
        self._code_tool = Options(**options).code_only(
            "a code executor runs the model's code blocks, which call no tools").code_tool()

    def execute_code(self, invocation_context: Any,
                     code_execution_input: CodeExecutionInput) -> CodeExecutionResult:
        key = code_execution_input.execution_id if self.stateful else None
        run = None if self.stateful else self.code_tool.take()
        try:
            _write_inputs(self.code_tool, key, run, code_execution_input.input_files)
            limit = self.timeout_seconds
            until = None if limit is None else time.monotonic() + limit
            with cancel_when(functools.partial(_stopped, invocation_context, limit, until)) \
                    as cancel:
                reply = self.code_tool.run_code(code_execution_input.code, key=key, sandbox=run,
                                                cancel=cancel)
        finally:
            if run is not None:
                self.code_tool.finish(run)
        result = reply.result
        files = [File(name=os.path.basename(i.path), content=i.data, mime_type=i.mime)
                 for i in reply.images]
        if reply.ok:
            return CodeExecutionResult(stdout=reply.text, output_files=files, exit_code=0)
        return CodeExecutionResult(stdout=result.stdout if result is not None else "",
                                   stderr=reply.text, output_files=files, exit_code=1)


def _stopped(invocation: Any, limit: float | None, until: float | None) -> str | None:
    """What stops a code executor's block: ADK's own abort of the run (`run_async(
    abort_signal=...)`, `InvocationContext.abort()`), or the executor's `timeout_seconds`.
    ADK runs executors on a thread (`asyncio.to_thread`), where cancelling the run's task does
    not reach; these two do."""
    if getattr(invocation, "is_aborted", False):
        return "the ADK run was aborted"
    if until is not None and time.monotonic() > until:
        return f"the code executor's time limit, timeout_seconds={limit}, ran out"
    return None


def _write_inputs(code: CodeTool, key: Hashable, run: Sandbox | None,
                  files: Sequence[File]) -> None:
    if not files:
        return
    if run is not None:
        run.prepare(code.toolbox)
        session = run.live()
    else:
        session = code.session(key)
    for f in files:
        # ADK hands files over as bytes or as base64 text
        data = f.content if isinstance(f.content, bytes) else base64.b64decode(f.content)
        session.write_file(os.path.basename(f.name), data)
