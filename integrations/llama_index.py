"""LlamaIndex: a list of tools as one code tool, and the sandbox as CodeActAgent's executor.

    code = as_llama_index_tool([search_orders, get_customer])     # FunctionTools, callables
    agent = FunctionAgent(tools=[code], llm=llm)                  # or ReActAgent

    sandbox = CodeActSandbox([search_orders, get_customer])
    agent = CodeActAgent(code_execute_fn=sandbox.execute, tools=[search_orders, get_customer])

The model sees `run_python`; its code calls the wrapped tools as Python functions. Each call
runs the real tool as the agents' `call_tool` step does: `acall` (or `call` when the code tool
was called synchronously), the workflow `Context` given to tools that ask for it, a `ToolCall`
and a `ToolCallResult` event written to the run's event stream. A tool that raises, or returns
an error output, raises `ToolError` in the code; a failed cell raises from the code tool, which
the agent turns into an error output for the model.

One interpreter per conversation: the workflow `Context` the agent runs with (pass the same
`ctx` to later runs to continue a conversation) keeps a key to it in its store, so the key is
saved and restored with the context. Figures come back as `ImageBlock`s.

No `from __future__ import annotations` here: FunctionTool finds the `Context` parameter by its
annotation object.
"""

import contextvars
import inspect
import uuid
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from llama_index.core.agent.workflow import ToolCall, ToolCallResult
from llama_index.core.base.llms.types import ImageBlock, TextBlock
from llama_index.core.tools import BaseTool, FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools.types import adapt_to_async_tool
from llama_index.core.workflow import Context, Event
from tooliscode import ToolError
from tooliscode.adapters import (
    Binding,
    Cell,
    CodeArgs,
    Hooks,
    OptionArgs,
    Options,
    OutputChunk,
    OutputSink,
    Tools,
    ToolsFacade,
)
from tooliscode.adapters import evaluated as _evaluated
from tooliscode.codetool import Reply
from tooliscode.engine import run_in
from tooliscode.tools import return_schema
from typing_extensions import Unpack

# What `Context.wait_for_event` raises to suspend a step until a person answers (the step is
# then run again); not exported by the workflows package.
from workflows.runtime.types.results import WaitingForEvent

__all__ = ["CONVERSATION_KEY", "CodeActSandbox", "CodeModeTool", "CodeOutput",
           "as_llama_index_tool"]

CONVERSATION_KEY = "tooliscode_conversation"
"""Where a workflow context's store keeps the key of its interpreter."""


class CodeOutput(Event):
    """A chunk of what the code printed, written to the run's event stream as it printed it
    (`handler.stream_events()`), beside the `ToolCall` and `ToolCallResult` events."""

    call_id: str
    """The code tool's call (its inner calls' ids start with it)."""
    stream: str
    """"stdout" or "stderr"."""
    text: str


@dataclass(kw_only=True)
class _Turn(Cell):
    """What the running cell's calls need: the workflow context (None outside a workflow)
    and whether the code tool was called with `acall`."""

    ctx: Context | None
    is_async: bool
    context: contextvars.Context | None = None
    """The code tool's context variables: the workflow's step is among them (a tool that asks
    the user, `ctx.wait_for_event`, must run within it)."""


@dataclass(frozen=True)
class _Hooks(Hooks[BaseTool, _Turn]):
    """LlamaIndex tools, run as the agents' `call_tool` step runs them. `by_function`:
    named by their function's `__name__`, as CodeActAgent describes them."""

    by_function: bool = False

    def declare(self, native: BaseTool) -> Binding[BaseTool]:
        """`from_defaults` starts descriptions with the signature (dropped here: the catalog
        shows its own)."""
        meta = native.metadata
        name = meta.get_name()
        function = getattr(native, "real_fn", None) if isinstance(native, FunctionTool) else None
        description = meta.description or ""
        if description.startswith(f"{name}("):
            description = description.split("\n", 1)[1] if "\n" in description else ""
        if self.by_function and function is not None:
            name = function.__name__
        return Binding.of(native, name=name, description=description.strip(),
                          parameters=meta.get_parameters_dict(),
                          output_schema=return_schema(function) if function else None)

    async def call(self, cell: _Turn, binding: Binding[BaseTool], arguments: dict[str, Any],
                   call_id: str) -> Any:
        tool = binding.native
        if cell.is_async or _async_only(tool):
            call = _acall(adapt_to_async_tool(tool), arguments, cell.ctx, call_id)
            return await (run_in(cell.context.copy(), call) if cell.context else call)
        # Called with `call`: the sync tool runs where the code tool was called from (the
        # sandbox's own loop, no other work on it), as `call` would run it.
        try:
            output = adapt_to_async_tool(tool).call(**_with_context(tool, arguments, cell.ctx))
        except Exception as exc:
            raise ToolError(str(exc)) from exc
        return _value(output)

    def output(self, cell: _Turn) -> OutputSink | None:
        """`CodeOutput` events on the workflow's stream, when the code tool was called with
        `acall` in a workflow (its sink is then called on the workflow's loop)."""
        ctx = cell.ctx
        if ctx is None or not cell.is_async:
            return None

        def write(chunk: OutputChunk) -> None:
            ctx.write_event_to_stream(CodeOutput(call_id=chunk.call_id, stream=chunk.stream,
                                                 text=chunk.text))

        return write

    def render(self, reply: Reply) -> Any:
        if not reply.ok:
            raise ToolError(reply.text)  # the agent makes it an error output for the model
        if not reply.images:
            return reply.text
        return [TextBlock(text=reply.text),
                *(ImageBlock(image=i.data, image_mimetype=i.mime) for i in reply.images)]


class _Sandboxes(ToolsFacade):
    """The interpreters of a tool set, one per workflow context (see `CONVERSATION_KEY`;
    `None` is the one for calls without a context)."""

    def _setup(self, tools: Iterable[Any], options: Options, by_function: bool) -> None:
        natives = [t if isinstance(t, BaseTool) else FunctionTool.from_defaults(_evaluated(t))
                   for t in tools]
        self.options = options
        self._serve(Tools.of(_Hooks(by_function), natives, options.callers), options)

    async def _arun(self, code: str, ctx: Context | None, name: str) -> Any:
        turn = _Turn(ctx=ctx, is_async=True, context=contextvars.copy_context(), call_id=name,
                     tools=self._tools)
        reply = await self.code_tool.arun_code(code, key=await _conversation(ctx), context=turn,
                                               on_output=self._output(turn))
        return self._tools.hooks.render(reply)


class CodeModeTool(FunctionTool, _Sandboxes):
    """`run_python` over LlamaIndex tools; `instructions` has the guide and the catalog."""

    instructions: str


def as_llama_index_tool(tools: Iterable[Any], **options: Unpack[OptionArgs]) -> CodeModeTool:
    """One `FunctionTool` that runs code calling `tools` (LlamaIndex tools or callables), for
    `FunctionAgent`, `ReActAgent` and `AgentWorkflow`, called with `acall` or `call`.

    The options are every front end's (`tooliscode.adapters.Options`). LlamaIndex gives a
    tool no way to add to the system prompt, so the catalog rides in the tool's description
    unless `instructions="prompt"`; then put `tool.instructions` in the system prompt.
    """
    settings = Options(**options)
    name = settings.name

    def run(code: str, ctx: Context) -> Any:
        """Called with `call` (pass `ctx=None` outside a workflow): the tool's one interpreter
        for calls without a workflow to key them."""
        turn = _Turn(ctx=ctx, is_async=False, call_id=name, tools=tool._tools)
        return tool._tools.hooks.render(tool.code_tool.run_code(code, context=turn,
                                                                on_output=tool._output(turn)))

    async def arun(code: str, ctx: Context) -> Any:
        return await tool._arun(code, ctx, name)

    tool = CodeModeTool(fn=run, async_fn=arun, metadata=ToolMetadata(name=name, description="",
                                                                     fn_schema=CodeArgs))
    tool._setup(tools, settings, by_function=False)
    catalog = tool._tools.catalog(settings)
    tool.instructions = catalog.instructions
    tool.metadata.description = catalog.tool_description(settings.in_description(False))
    return tool


class CodeActSandbox(_Sandboxes):
    """The sandbox as `CodeActAgent(code_execute_fn=sandbox.execute, tools=...)`.

    Give it the same tools as the agent: the code calls them by their function names, as
    CodeActAgent describes them to the model. One interpreter per workflow context, so
    variables survive from one step to the next and across runs with the same `ctx`. The
    options are every front end's; CodeActAgent's tools are called from code only.
    """

    def __init__(self, tools: Iterable[Any] = (), **options: Unpack[OptionArgs]):
        settings = Options(**options).code_only("CodeActAgent calls its tools from code only")
        self._setup(tools, settings, by_function=True)

    async def execute(self, code: str, ctx: Context) -> Any:
        """Run one `<execute>` block; what it printed (and any error) is what the agent reads."""
        return await self._arun(code, ctx, "execute")


# -- helpers ---------------------------------------------------------------------------------


async def _conversation(ctx: Context | None) -> Hashable:
    """The conversation key kept in the context's store (made on first use)."""
    if ctx is None:
        return None
    key = await ctx.store.get(CONVERSATION_KEY, default=None)
    if key is None:
        key = uuid.uuid4().hex
        await ctx.store.set(CONVERSATION_KEY, key)
    return key


async def _acall(tool: Any, arguments: dict[str, Any], ctx: Context | None,
                 call_id: str) -> Any:
    """The call as the agents' `call_tool` step makes it: its events on the run's stream."""
    name = tool.metadata.get_name()
    if ctx is not None:
        ctx.write_event_to_stream(ToolCall(tool_name=name, tool_kwargs=arguments,
                                           tool_id=call_id))
    try:
        output = await tool.acall(**_with_context(tool, arguments, ctx))
    except WaitingForEvent:
        raise ToolError(f"{name} waits for a person's answer, which code cannot wait for "
                        "here, so the call was refused: give it to the agent as a tool of its "
                        f"own (callers={{{name!r}: 'direct'}})") from None
    except Exception as exc:  # noqa: BLE001 - reported as the agents report it, then raised
        output = ToolOutput(content=str(exc), tool_name=name, raw_input=arguments,
                            raw_output=str(exc), is_error=True, exception=exc)
    if ctx is not None:
        ctx.write_event_to_stream(ToolCallResult(
            tool_name=name, tool_kwargs=arguments, tool_id=call_id, tool_output=output,
            return_direct=False))
    return _value(output)


def _with_context(tool: BaseTool, arguments: dict[str, Any], ctx: Context | None
                  ) -> dict[str, Any]:
    """The arguments, plus the workflow context for a FunctionTool that declares one."""
    if isinstance(tool, FunctionTool) and tool.requires_context and tool.ctx_param_name:
        if ctx is None:
            raise ToolError(f"{tool.metadata.get_name()} needs a workflow Context, and this "
                            "code runs outside one")
        return {**arguments, tool.ctx_param_name: ctx}
    return arguments


def _async_only(tool: BaseTool) -> bool:
    return isinstance(tool, FunctionTool) and inspect.iscoroutinefunction(tool.real_fn)


def _value(output: ToolOutput) -> Any:
    if output.is_error:
        raise ToolError(output.content)
    return output.raw_output
