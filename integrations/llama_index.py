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

import inspect
import itertools
import uuid
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.agent.workflow import ToolCall, ToolCallResult
from llama_index.core.base.llms.types import ImageBlock, TextBlock
from llama_index.core.tools import BaseTool, FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools.types import adapt_to_async_tool
from llama_index.core.workflow import Context
from pydantic import BaseModel, Field
from tooliscode import Limits, Session, Tool, ToolError, ToolRegistry
from tooliscode.codetool import CodeTool, Reply
from tooliscode.durable import Keeper, SessionStore
from tooliscode.prompt import (
    CODE_TOOL_NAME,
    CODE_TOOL_SCHEMA,
    code_tool_description,
    instructions,
)
from tooliscode.runtime import Runtime, python_note

from ._inner import bind_async, resolved, returns, toolbox

__all__ = ["CodeActSandbox", "CodeModeTool", "as_llama_index_tool"]

CONVERSATION_KEY = "tooliscode_conversation"
"""Where a workflow context's store keeps the key of its interpreter."""


class _CodeArgs(BaseModel):
    code: str = Field(description=CODE_TOOL_SCHEMA["properties"]["code"]["description"])


@dataclass
class _Turn:
    """What the running cell's calls need: the workflow context (None outside a workflow)
    and whether the code tool was called with `acall`."""

    ctx: Context | None
    is_async: bool
    name: str
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))


class _Tools:
    """The wrapped tools, as LlamaIndex runs them and as the sandbox declares them."""

    def __init__(self, tools: Iterable[Any], name_by_function: bool = False):
        self.tools = [t if isinstance(t, BaseTool) else FunctionTool.from_defaults(resolved(t))
                      for t in tools]
        self.async_tools = [adapt_to_async_tool(t) for t in self.tools]
        self.declared = [_declaration(t, name_by_function) for t in self.tools]
        self.registry = ToolRegistry(self.declared)
        self.box = toolbox(self.declared, lambda sandbox, i: bind_async(
            self.declared[i], sandbox, _Turn, lambda turn, args: self.call(i, turn, args)))

    async def call(self, index: int, turn: _Turn, arguments: dict[str, Any]) -> Any:
        if turn.is_async or _async_only(self.tools[index]):
            call_id = f"{turn.name}:{next(turn.ids)}"
            return await self._acall(self.async_tools[index], arguments, turn.ctx, call_id)
        # Called with `call`: the sync tool runs where the code tool was called from (the
        # sandbox's own loop, no other work on it), as `call` would run it.
        tool = self.tools[index]
        try:
            output = tool.call(**_with_context(tool, arguments, turn.ctx))
        except Exception as exc:
            raise ToolError(str(exc)) from exc
        return _value(output)

    async def _acall(self, tool: Any, arguments: dict[str, Any], ctx: Context | None,
                     call_id: str) -> Any:
        name = tool.metadata.get_name()
        if ctx is not None:
            ctx.write_event_to_stream(ToolCall(tool_name=name, tool_kwargs=arguments,
                                               tool_id=call_id))
        try:
            output = await tool.acall(**_with_context(tool, arguments, ctx))
        except Exception as exc:  # noqa: BLE001 - reported as the agents report it, then raised
            output = ToolOutput(content=str(exc), tool_name=name, raw_input=arguments,
                                raw_output=str(exc), is_error=True, exception=exc)
        if ctx is not None:
            ctx.write_event_to_stream(ToolCallResult(
                tool_name=name, tool_kwargs=arguments, tool_id=call_id, tool_output=output,
                return_direct=False))
        return _value(output)


class CodeModeTool(FunctionTool):
    """`run_python` over LlamaIndex tools; `instructions` has the guide and the catalog."""

    instructions: str
    codetool: CodeTool

    def session(self, key: Hashable = None) -> Session:
        """A conversation's interpreter (its key is in the workflow context's store under
        `CONVERSATION_KEY`; `None` is the one for calls without a context), started now if
        need be, e.g. to read the files its code wrote."""
        return self.codetool.session(key)

    def drop(self, key: Hashable = None) -> bool:
        """Close one conversation's interpreter now."""
        return self.codetool.drop(key)

    def close(self) -> None:
        """Close every interpreter."""
        self.codetool.close()


def as_llama_index_tool(tools: Iterable[Any], *, limits: Limits | None = None,
                        runtime: Runtime | str | None = None,
                        store: SessionStore | Keeper | None = None, name: str = CODE_TOOL_NAME,
                        instructions_in_description: bool = True,
                        idle_timeout_s: float | None = 1800.0,
                        max_sessions: int | None = None) -> CodeModeTool:
    """One `FunctionTool` that runs code calling `tools` (LlamaIndex tools or callables), for
    `FunctionAgent`, `ReActAgent` and `AgentWorkflow`, called with `acall` or `call`.

    The catalog goes in the tool's description unless `instructions_in_description` is false;
    then put `tool.instructions` in the system prompt.
    """
    wrapped = _Tools(tools)
    guide = instructions(wrapped.registry, name, python=python_note(runtime))
    sandboxes = CodeTool(wrapped.box, limits=limits, runtime=runtime, store=store,
                         idle_timeout_s=idle_timeout_s, max_sessions=max_sessions)

    def run(code: str, ctx: Context) -> Any:
        """Called with `call` (pass `ctx=None` outside a workflow): the tool's one interpreter
        for calls without a workflow to key them."""
        return _answer(sandboxes.run_code(code, context=_Turn(ctx, False, name)))

    async def arun(code: str, ctx: Context) -> Any:
        key = await _conversation(ctx)
        return _answer(await sandboxes.arun_code(code, key=key, context=_Turn(ctx, True, name)))

    description = guide if instructions_in_description else code_tool_description(
        wrapped.registry, name)
    tool = CodeModeTool(fn=run, async_fn=arun, metadata=ToolMetadata(
        name=name, description=description, fn_schema=_CodeArgs))
    tool.instructions, tool.codetool = guide, sandboxes
    return tool


class CodeActSandbox:
    """The sandbox as `CodeActAgent(code_execute_fn=sandbox.execute, tools=...)`.

    Give it the same tools as the agent: the code calls them by their function names, as
    CodeActAgent describes them to the model. One interpreter per workflow context, so
    variables survive from one step to the next and across runs with the same `ctx`.
    """

    def __init__(self, tools: Iterable[Any] = (), *, limits: Limits | None = None,
                 runtime: Runtime | str | None = None,
                 store: SessionStore | Keeper | None = None,
                 idle_timeout_s: float | None = 1800.0, max_sessions: int | None = None):
        self._tools = _Tools(tools, name_by_function=True)
        self.codetool = CodeTool(self._tools.box, limits=limits, runtime=runtime, store=store,
                                 idle_timeout_s=idle_timeout_s, max_sessions=max_sessions)

    async def execute(self, code: str, ctx: Context) -> Any:
        """Run one `<execute>` block; what it printed (and any error) is what the agent reads."""
        key = await _conversation(ctx)
        return _answer(await self.codetool.arun_code(code, key=key,
                                                     context=_Turn(ctx, True, "execute")))

    def session(self, key: Hashable = None) -> Session:
        """A conversation's interpreter (see `CodeModeTool.session`)."""
        return self.codetool.session(key)

    def close(self) -> None:
        self.codetool.close()


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


def _declaration(tool: BaseTool, name_by_function: bool) -> Tool:
    """A LlamaIndex tool as the sandbox declares it; CodeActAgent names functions by
    `__name__`, and `from_defaults` starts descriptions with the signature (dropped here:
    the catalog shows its own)."""
    meta = tool.metadata
    name = meta.get_name()
    function = getattr(tool, "real_fn", None) if isinstance(tool, FunctionTool) else None
    if name_by_function and function is not None:
        name = function.__name__
    description = meta.description or ""
    if description.startswith(f"{meta.get_name()}("):
        description = description.split("\n", 1)[1] if "\n" in description else ""
    return Tool(name=name, description=description.strip(),
                parameters=meta.get_parameters_dict(),
                output_schema=returns(function) if function is not None else None)


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


def _answer(reply: Reply) -> Any:
    if not reply.ok:
        raise ToolError(reply.text)  # the agent makes it an error output for the model
    if not reply.images:
        return reply.text
    return [TextBlock(text=reply.text),
            *(ImageBlock(image=i.data, image_mimetype=i.mime) for i in reply.images)]
