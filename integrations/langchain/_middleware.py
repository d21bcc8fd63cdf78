"""Code mode as LangChain agent middleware: the code's calls go down the agent's own
tool-call chain."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain_core.tools import BaseToolkit
from tooliscode.adapters import Facade, OptionArgs
from tooliscode.codetool import CodeTool
from typing_extensions import Unpack

from ._approval import Gate
from ._chain import Chain
from ._reviewers import find
from ._tool import CodeModeTool, as_langchain_tool, chained

__all__ = ["CodeModeMiddleware"]


class CodeModeMiddleware(AgentMiddleware, Facade):
    """Code mode as agent middleware: gives the agent `run_python` over `tools` (and the
    tools `callers` keeps for the model), and sends every call the code makes through the
    agent's `wrap_tool_call` middleware listed after this one, as a call of its own.

    List it first in `middleware=[...]`. The agent's `HumanInTheLoopMiddleware` is found
    wherever it is listed: in `batched` mode the calls the code makes to the tools it reviews
    pause the cell and interrupt the graph with its request (in `per_call` mode it asks about
    them itself, in the chain; listed before this one it cannot, and they are refused).
    `hitl` adds a reviewer the agent does not list. `tools` may be a `CodeModeTool` already
    made; otherwise the options are every front end's (`tooliscode.adapters.Options`).
    """

    def __init__(self, tools: CodeModeTool | Iterable[Any] | BaseToolkit, *,
                 hitl: HumanInTheLoopMiddleware | None = None, **options: Unpack[OptionArgs]):
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
        """The agent's reviewers, wherever they are listed (see `_reviewers.py`)."""
        reviewers = find(handler, also=self.hitl)
        return Gate(reviewers) if reviewers else None

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        if request.tool_call["name"] != self.tool.name:
            return handler(request)
        token = chained.set((Chain(request, handler), self._gate(handler)))
        try:
            return handler(request)
        finally:
            chained.reset(token)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        if request.tool_call["name"] != self.tool.name:
            return await handler(request)
        token = chained.set((Chain(request, handler), self._gate(handler)))
        try:
            return await handler(request)
        finally:
            chained.reset(token)
