"""`run_python` as a LangChain tool: the wrapped tools declared and called as LangChain runs
them, one interpreter per thread."""

from __future__ import annotations

import contextvars
import copy
import inspect
from collections.abc import Iterable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import patch_config
from langchain_core.tools import BaseTool, BaseToolkit, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_function
from langgraph.config import get_stream_writer
from pydantic import PrivateAttr
from tooliscode import Limits, OnOutput, ToolError
from tooliscode.adapters import (
    Binding,
    Hooks,
    OptionArgs,
    Options,
    OutputSink,
    Tools,
    ToolsFacade,
)
from tooliscode.codetool import CodeTool, Reply
from tooliscode.engine import Cancel
from tooliscode.prompt import CODE_TOOL_NAME, CODE_TOOL_SCHEMA, base64_data
from tooliscode.tools import return_schema
from typing_extensions import Unpack

from ._approval import Gate, Invocation, inner_call
from ._chain import Chain, CodeCall, Turn, async_only, outer_id
from ._drain import drained
from ._reviewers import find, reviewed

__all__ = ["CodeModeTool", "as_langchain_tool", "chained"]

chained: contextvars.ContextVar[tuple[Chain, Gate | None] | None] = contextvars.ContextVar(
    "tooliscode_langchain_chain", default=None)
"""Set by `CodeModeMiddleware` around the `run_python` call it passes down the chain."""


class _Hooks(Hooks[BaseTool, Turn]):
    """LangChain tools, invoked with the code tool's config. Sync, so a sync run calls sync
    tools right on the session's thread; a call returns `ainvoke`'s coroutine when the cell
    runs under `ainvoke` (or the tool is async-only), and the session awaits it on the right
    loop."""

    asynchronous = False

    def __init__(self) -> None:
        self.calls: dict[str, CodeCall] = {}
        """The stand-in each tool has in the agent's chain (see `_chain.py`)."""

    def declare(self, native: BaseTool) -> Binding[BaseTool]:
        spec = convert_to_openai_function(native)
        function = getattr(native, "func", None) or getattr(native, "coroutine", None)
        self.calls[native.name] = CodeCall.of(native)
        return Binding.of(native, name=spec["name"], description=spec.get("description", ""),
                          parameters=spec.get("parameters"),
                          output_schema=return_schema(function) if function else None)

    def call(self, cell: Turn, binding: Binding[BaseTool], arguments: dict[str, Any],
             call_id: str) -> Any:
        tool = binding.native
        if cell.chain is not None:
            return inner_call(cell, self.calls[tool.name], arguments)
        if tool.name in cell.refused:
            raise ToolError(
                f"{tool.name} is reviewed by the agent's HumanInTheLoopMiddleware, which calls "
                "from code reach only under CodeModeMiddleware: give the agent "
                "middleware=[CodeModeMiddleware(tools), HumanInTheLoopMiddleware(...)] instead "
                "of this code tool in tools=; the call did not run")
        if cell.is_async or async_only(tool):
            return _ainvoke(tool, arguments, cell.config)
        try:
            return tool.invoke(arguments, cell.config)
        except ToolException as exc:
            raise ToolError(str(exc)) from None

    def render(self, reply: Reply) -> str | list[dict[str, Any]]:
        """The ToolMessage content: the text, then each figure the cell made as a standard
        image content block. A failed cell raises `ToolException`, which the tool turns into
        content with `status="error"`."""
        if not reply.ok:
            raise ToolException(reply.text)
        if not reply.images:
            return reply.text
        return [{"type": "text", "text": reply.text},
                *({"type": "image", "base64": base64_data(i), "mime_type": i.mime}
                  for i in reply.images)]

    def key(self, context: Any) -> Any:
        """The thread: `thread_id` in the run config."""
        return ((context or {}).get("configurable") or {}).get("thread_id")

    def output(self, cell: Turn) -> OutputSink | None:
        """LangGraph's `custom` stream (`get_stream_writer()`), when the code tool runs in a
        graph: each chunk as `OutputChunk.payload()`. The writer reads the graph's config from
        the context, so it is called in a copy of the code tool's, on whichever thread."""
        writer = _stream_writer()
        if writer is None:
            return None
        context = contextvars.copy_context()
        return lambda chunk: context.run(writer, chunk.payload())


def _stream_writer() -> Any:
    """The running LangGraph graph's stream writer, if the code tool runs in one."""
    try:
        return get_stream_writer()
    except (RuntimeError, KeyError):  # not inside a graph's run
        return None


async def _ainvoke(tool: BaseTool, arguments: dict[str, Any], config: RunnableConfig) -> Any:
    try:
        return await tool.ainvoke(arguments, config)
    except ToolException as exc:
        raise ToolError(str(exc)) from None


def _langchain_tools(items: Iterable[Any]) -> list[BaseTool]:
    found: list[BaseTool] = []
    for item in items:
        if isinstance(item, BaseToolkit):
            found.extend(item.get_tools())
        elif isinstance(item, BaseTool):
            found.append(item)
        elif callable(item):
            found.append(StructuredTool.from_function(coroutine=item)
                         if inspect.iscoroutinefunction(item)
                         else StructuredTool.from_function(item))
        else:
            raise TypeError(f"cannot make a LangChain tool from {type(item).__name__}: pass "
                            "BaseTools, callables or a BaseToolkit")
    return found


class CodeModeTool(BaseTool, ToolsFacade):
    """`run_python`: runs the model's code in a sandbox where the wrapped tools are functions.
    Conversations are threads (`thread_id` in the run config)."""

    name: str = CODE_TOOL_NAME
    description: str = ""
    args_schema: Any = None
    handle_tool_error: Any = True
    instructions: str = ""
    """How to use the code tool and the tool catalog, for a system prompt."""

    _tools: Tools[BaseTool, Turn] = PrivateAttr()
    _code_tool: CodeTool = PrivateAttr()
    _options: Options = PrivateAttr()

    def _to_args_and_kwargs(self, tool_input: str | dict[str, Any],
                            tool_call_id: str | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The model's call id too: it names the chunks of what the code prints."""
        args, kwargs = super()._to_args_and_kwargs(tool_input, tool_call_id)
        return args, {**kwargs, "tool_call_id": tool_call_id}

    def _run(self, code: str, run_manager: CallbackManagerForToolRun | None = None,
             *, config: RunnableConfig, tool_call_id: str | None = None
             ) -> str | list[dict[str, Any]]:
        key, turn = self._tools.hooks.key(config), self._turn(config, run_manager, False)
        output = self._output(turn, tool_call_id)
        with drained() as cancel:
            if turn.chain is None:
                reply = self.code_tool.run_code(code, key=key, context=turn, on_output=output,
                                                cancel=cancel)
            else:
                reply = self._invocation(code, key, turn, output, cancel).run()
        return self._tools.hooks.render(reply)

    async def _arun(self, code: str, run_manager: AsyncCallbackManagerForToolRun | None = None,
                    *, config: RunnableConfig, tool_call_id: str | None = None
                    ) -> str | list[dict[str, Any]]:
        key, turn = self._tools.hooks.key(config), self._turn(config, run_manager, True)
        output = self._output(turn, tool_call_id)
        with drained() as cancel:
            if turn.chain is None:
                reply = await self.code_tool.arun_code(code, key=key, context=turn,
                                                       on_output=output, cancel=cancel)
            else:
                reply = await self._invocation(code, key, turn, output, cancel).arun()
        return self._tools.hooks.render(reply)

    def _invocation(self, code: str, key: Any, turn: Turn, output: OnOutput | None,
                    cancel: Cancel | None) -> Invocation:
        assert turn.chain is not None
        hooks = self._tools.hooks
        assert isinstance(hooks, _Hooks)
        return Invocation(self.code_tool, code, key, turn.call_id, turn, hooks.calls, output,
                          cancel)

    def _turn(self, config: RunnableConfig, run_manager: Any, is_async: bool) -> Turn:
        """The running cell's context: under `CodeModeMiddleware`, with the agent's chain."""
        child = patch_config(config, callbacks=run_manager.get_child() if run_manager else None)
        found = chained.get()
        if found is None:  # a plain tool: a review around it cannot see the code's calls
            return Turn(config=child, is_async=is_async, refused=reviewed(find()),
                        call_id=self.name, tools=self._tools)
        chain, gate = found
        return Turn(config=child, is_async=is_async, chain=chain,
                    context=contextvars.copy_context(), gate=gate,
                    pause_s=(self.code_tool.limits or Limits()).pause_s,
                    call_id=outer_id(chain.request), tools=self._tools)


def as_langchain_tool(tools: Iterable[Any] | BaseToolkit,
                      **options: Unpack[OptionArgs]) -> CodeModeTool:
    """One LangChain tool that runs code calling `tools` (BaseTools, callables, a toolkit).

    The options are every front end's (`tooliscode.adapters.Options`). A LangChain tool has
    no way to add to the system prompt, so the catalog rides in the tool's description unless
    `instructions="prompt"`; then put `tool.instructions` in the system prompt.
    `callers={"name": "direct" | "both"}` keeps a tool for the model to call itself (left out
    of the code's functions for "direct"): they are `tool.direct_tools`.
    """
    settings = Options(**options)
    found = _langchain_tools(tools.get_tools() if isinstance(tools, BaseToolkit) else tools)
    wrapped = Tools.of(_Hooks(), found, settings.callers)
    catalog = wrapped.catalog(settings)
    tool = CodeModeTool(
        name=settings.name, args_schema=copy.deepcopy(CODE_TOOL_SCHEMA),
        instructions=catalog.instructions,
        description=catalog.tool_description(settings.in_description(False)))
    tool._serve(wrapped, settings)
    return tool
