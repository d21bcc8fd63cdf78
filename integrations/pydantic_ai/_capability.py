"""`CodeMode`: code mode as an agent capability."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import AbstractToolset
from tooliscode.adapters import Facade, OptionArgs, Options
from tooliscode.codetool import CodeTool
from typing_extensions import Unpack

from ._deferred import CodeModeApprovals
from ._toolset import CodeModeToolset, Scope, options_of

__all__ = ["CodeMode"]


@dataclass(init=False)
class CodeMode(CodeModeApprovals[AgentDepsT], Facade):
    """`Agent(capabilities=[CodeMode()])`: the agent's tools become code, run in a sandbox.

    One capability instance keeps what outlives a run (the conversations' interpreters with
    `scope="conversation"`, the next run's spare) across the agent's runs; `close()` ends them.
    Inner calls that need approval or an external result pause the cell and end the run with
    `DeferredToolRequests` naming them (see `CodeModeApprovals`). The options are
    `CodeModeToolset`'s.
    """

    options: Options
    scope: Scope
    max_retries: int
    prestart: bool
    _code_tool: CodeTool = field(repr=False)
    """Shared by the toolsets this capability wraps."""

    def __init__(self, *, scope: Scope = "run", max_retries: int = 3, prestart: bool = True,
                 options: Options | None = None, _code_tool: CodeTool | None = None,
                 **changes: Unpack[OptionArgs]):
        self.options = options_of(options, scope, changes)
        self.scope, self.max_retries, self.prestart = scope, max_retries, prestart
        self._code_tool = _code_tool or self.options.code_tool(
            keep_spare=prestart and scope == "run")

    def get_wrapper_toolset(self, toolset: AbstractToolset[AgentDepsT]
                            ) -> AbstractToolset[AgentDepsT] | None:
        return CodeModeToolset(toolset, scope=self.scope, max_retries=self.max_retries,
                               prestart=self.prestart, options=self.options,
                               _code_tool=self.code_tool)
