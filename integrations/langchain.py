"""LangChain: a collection of tools as one code tool.

    code = as_langchain_tool([search_orders, get_customer])   # BaseTools, callables, a toolkit
    agent = create_agent(model, tools=[code])

The model sees `run_python`; its code calls the wrapped tools as Python functions. Each call
runs the real tool with `invoke`/`ainvoke` and the code tool's config, its callbacks replaced
by the code tool run's child manager, so inner calls show as child runs in tracers. A
`ToolException` from an inner tool is raised in the code as a `ToolError`; a failed cell comes
back as the tool's content with `status="error"`.

One interpreter per conversation: the `thread_id` in the run config picks it (LangGraph puts
it there from the checkpointer config). Without one, the tool keeps a single interpreter.

    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})
    agent = create_agent(model, middleware=[CodeModeMiddleware([find_orders, send_email]), hitl],
                         checkpointer=saver)

`CodeModeMiddleware`, listed first, gives the agent the code tool and sends each call the code
makes through the agent's tool-call middleware, so they see it as a direct call; a call the
human-in-the-loop middleware reviews pauses the cell and interrupts the graph as a direct call
would, and `Command(resume=...)` continues the cell where it stopped.
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import patch_config
from langchain_core.tools import BaseTool, BaseToolkit, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_function
from pydantic import PrivateAttr
from tooliscode import Limits, Tool, ToolError, ToolRegistry
from tooliscode.codetool import CodeTool, Reply, Sandbox, Toolbox
from tooliscode.durable import Keeper, SessionStore
from tooliscode.prompt import (
    CODE_TOOL_NAME,
    CODE_TOOL_SCHEMA,
    base64_data,
    code_tool_description,
    instructions,
)
from tooliscode.runtime import Runtime, python_note
from tooliscode.tools import Caller, split_callers

from ._inner import running
from ._langchain_approval import Gate, Invocation, inner_call
from ._langchain_chain import Chain, CodeCall, Turn, async_only, outer_id
from ._langchain_reviewers import find, reviewed

__all__ = ["CodeModeMiddleware", "CodeModeTool", "as_langchain_tool"]

_chain: contextvars.ContextVar[tuple[Chain, Gate | None] | None] = contextvars.ContextVar(
    "tooliscode_langchain_chain", default=None)
"""Set by `CodeModeMiddleware` around the `run_python` call it passes down the chain."""


@dataclass(frozen=True)
class _InnerTool:
    """The function the session calls for one wrapped LangChain tool.

    Sync by default, so a sync run calls sync tools right on the session's thread; it returns
    `ainvoke`'s coroutine when the cell runs under `ainvoke` (or the tool is async-only), and
    the session awaits it on the right loop.
    """

    sandbox: Sandbox
    tool: BaseTool
    call: CodeCall

    def __call__(self, /, **arguments: Any) -> Any:
        turn = running(self.sandbox, Turn)
        if turn.chain is not None:
            return inner_call(turn, self.call, arguments)
        if self.tool.name in turn.refused:
            raise ToolError(
                f"{self.tool.name} is reviewed by the agent's HumanInTheLoopMiddleware, which "
                "calls from code reach only under CodeModeMiddleware: give the agent "
                "middleware=[CodeModeMiddleware(tools), HumanInTheLoopMiddleware(...)] instead "
                "of this code tool in tools=; the call did not run")
        if turn.is_async or async_only(self.tool):
            return self._ainvoke(arguments, turn.config)
        try:
            return self.tool.invoke(arguments, turn.config)
        except ToolException as exc:
            raise ToolError(str(exc)) from None

    async def _ainvoke(self, arguments: dict[str, Any], config: RunnableConfig) -> Any:
        try:
            return await self.tool.ainvoke(arguments, config)
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


def _declaration(tool: BaseTool) -> Tool:
    """The tool as the sandbox declares it (its function is bound per sandbox)."""
    return Tool.from_openai(convert_to_openai_function(tool))


def _thread_id(config: RunnableConfig | None) -> Any:
    return ((config or {}).get("configurable") or {}).get("thread_id")


class CodeModeTool(BaseTool):
    """`run_python`: runs the model's code in a sandbox where the wrapped tools are functions."""

    name: str = CODE_TOOL_NAME
    description: str = ""
    args_schema: Any = None
    handle_tool_error: Any = True
    instructions: str = ""
    """How to use the code tool and the tool catalog, for a system prompt."""

    _tools: list[BaseTool] = PrivateAttr(default_factory=list)
    _calls: dict[str, CodeCall] = PrivateAttr(default_factory=dict)
    _direct: list[BaseTool] = PrivateAttr(default_factory=list)
    _declarations: list[Tool] = PrivateAttr(default_factory=list)
    _code: CodeTool = PrivateAttr()

    @property
    def tools(self) -> list[BaseTool]:
        """The wrapped tools (the ones the code can call)."""
        return list(self._tools)

    @property
    def direct_tools(self) -> list[BaseTool]:
        """The tools `callers` gives the model itself ("direct" or "both"): give them to the
        agent beside this one (`CodeModeMiddleware` does)."""
        return list(self._direct)

    @property
    def code_tool(self) -> CodeTool:
        """The code tool that runs the cells: one interpreter per thread."""
        return self._code

    def _bind(self, sandbox: Sandbox) -> list[Tool]:
        return [dataclasses.replace(d, function=_InnerTool(sandbox, t, self._calls[t.name]))
                for d, t in zip(self._declarations, self._tools)]

    def _run(self, code: str, run_manager: CallbackManagerForToolRun | None = None,
             *, config: RunnableConfig) -> str | list[dict[str, Any]]:
        key, turn = _thread_id(config), self._turn(config, run_manager, False)
        if turn.chain is None:
            return _answer(self.code_tool.run_code(code, key=key, context=turn))
        return _answer(self._invocation(code, key, turn).run())

    async def _arun(self, code: str, run_manager: AsyncCallbackManagerForToolRun | None = None,
                    *, config: RunnableConfig) -> str | list[dict[str, Any]]:
        key, turn = _thread_id(config), self._turn(config, run_manager, True)
        if turn.chain is None:
            return _answer(await self.code_tool.arun_code(code, key=key, context=turn))
        return _answer(await self._invocation(code, key, turn).arun())

    def _invocation(self, code: str, key: Any, turn: Turn) -> Invocation:
        assert turn.chain is not None
        return Invocation(self.code_tool, code, key, outer_id(turn.chain.request), turn,
                          self._calls)

    def _turn(self, config: RunnableConfig, run_manager: Any, is_async: bool) -> Turn:
        """The running cell's context: under `CodeModeMiddleware`, with the agent's chain."""
        chained = _chain.get()
        if chained is None:  # a plain tool: a review around it cannot see the code's calls
            return Turn(_child(config, run_manager), is_async, refused=reviewed(find()))
        chain, gate = chained
        return Turn(_child(config, run_manager), is_async, chain=chain,
                    context=contextvars.copy_context(), gate=gate,
                    pause_s=(self.code_tool.limits or Limits()).pause_s)

    # -- conversations ------------------------------------------------------------------

    @property
    def thread_ids(self) -> list[Any]:
        """The conversations with a live interpreter (`None` is the one without a thread_id)."""
        return self.code_tool.keys

    def session(self, thread_id: Any = None) -> Any:
        """The live `Session` of a conversation, or `None` (e.g. to read the files it wrote)."""
        sandbox = self.code_tool.get(thread_id)
        return sandbox.session if sandbox is not None else None

    def drop(self, thread_id: Any = None) -> bool:
        """Close one conversation's interpreter now (the conversation ended)."""
        return self.code_tool.drop(thread_id)

    def close(self) -> None:
        """Close every interpreter."""
        self.code_tool.close()


def _child(config: RunnableConfig, run_manager: Any) -> RunnableConfig:
    return patch_config(config, callbacks=run_manager.get_child() if run_manager else None)


def _answer(reply: Reply) -> str | list[dict[str, Any]]:
    if not reply.ok:
        raise ToolException(reply.text)  # handled by the tool: content with status="error"
    return _with_images(reply)


def _with_images(reply: Reply) -> str | list[dict[str, Any]]:
    """The ToolMessage content: the text, then each figure the cell made as a standard
    image content block."""
    if not reply.images:
        return reply.text
    return [{"type": "text", "text": reply.text},
            *({"type": "image", "base64": base64_data(i), "mime_type": i.mime}
              for i in reply.images)]


def as_langchain_tool(tools: Iterable[Any] | BaseToolkit, *, limits: Limits | None = None,
                      name: str = CODE_TOOL_NAME, instructions_in_description: bool = True,
                      idle_timeout_s: float | None = 1800.0, max_sessions: int | None = None,
                      describe_names: bool = True, runtime: Runtime | str | None = None,
                      store: SessionStore | Keeper | None = None,
                      callers: Mapping[str, Caller] | None = None) -> CodeModeTool:
    """One LangChain tool that runs code calling `tools` (BaseTools, callables, a toolkit).

    The catalog of tools goes in the tool's description unless `instructions_in_description`
    is false; then put `tool.instructions` in the system prompt. Conversations (thread ids)
    idle for `idle_timeout_s` lose their interpreter; at most `max_sessions` are kept.
    `runtime="data"` gives the code numpy, pandas and matplotlib; `store=` keeps each thread's
    interpreter in a store that every worker process shares (`tooliscode.durable`).
    `callers={"name": "direct" | "both"}` keeps a tool for the model to call itself (left out
    of the code's functions for "direct"): they are `tool.direct_tools`.
    """
    found = _langchain_tools(tools.get_tools() if isinstance(tools, BaseToolkit) else tools)
    wrapped, direct = split_callers(found, callers, lambda t: t.name)
    declarations = [_declaration(t) for t in wrapped]
    registry = ToolRegistry(declarations)
    guide = instructions(registry, name, python=python_note(runtime))
    tool = CodeModeTool(
        name=name, args_schema=copy.deepcopy(CODE_TOOL_SCHEMA), instructions=guide,
        description=guide if instructions_in_description else code_tool_description(registry, name))
    tool._tools = wrapped
    tool._calls = {t.name: CodeCall.of(t) for t in wrapped}
    tool._direct = direct
    tool._declarations = declarations
    tool._code = CodeTool(Toolbox(tool._bind), limits=limits, describe_names=describe_names,
                          idle_timeout_s=idle_timeout_s, max_sessions=max_sessions,
                          runtime=runtime, store=store)
    return tool


class CodeModeMiddleware(AgentMiddleware):
    """Code mode as agent middleware: gives the agent `run_python` over `tools` (and the
    tools `callers` keeps for the model), and sends every call the code makes through the
    agent's `wrap_tool_call` middleware listed after this one, as a call of its own.

    List it first in `middleware=[...]`. The agent's `HumanInTheLoopMiddleware` is found
    wherever it is listed: in `batched` mode the calls the code makes to the tools it reviews
    pause the cell and interrupt the graph with its request (in `per_call` mode it asks about
    them itself, in the chain; listed before this one it cannot, and they are refused).
    `hitl` adds a reviewer the agent does not list. `tools` may be a `CodeModeTool` already
    made; otherwise the other options are `as_langchain_tool`'s.
    """

    def __init__(self, tools: CodeModeTool | Iterable[Any] | BaseToolkit, *,
                 hitl: HumanInTheLoopMiddleware | None = None, **options: Any):
        super().__init__()
        self.tool = tools if isinstance(tools, CodeModeTool) else as_langchain_tool(tools,
                                                                                   **options)
        """The code tool, registered with the agent by this middleware."""
        self.hitl = hitl
        """A reviewer to use besides the agent's own, which are found without it."""
        self.tools = [self.tool, *self.tool.direct_tools]

    @property
    def code_tool(self) -> CodeTool:
        return self.tool.code_tool

    def _gate(self, handler: Any) -> Gate | None:
        """The agent's reviewers, wherever they are listed (see `_langchain_reviewers`)."""
        reviewers = find(handler, also=self.hitl)
        return Gate(reviewers) if reviewers else None

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        if request.tool_call["name"] != self.tool.name:
            return handler(request)
        token = _chain.set((Chain(request, handler), self._gate(handler)))
        try:
            return handler(request)
        finally:
            _chain.reset(token)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        if request.tool_call["name"] != self.tool.name:
            return await handler(request)
        token = _chain.set((Chain(request, handler), self._gate(handler)))
        try:
            return await handler(request)
        finally:
            _chain.reset(token)

    def close(self) -> None:
        """Close every interpreter."""
        self.tool.close()
