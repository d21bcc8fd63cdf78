"""`CodeMode`: code mode as an agent capability."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_ai.tools import AgentDepsT
from pydantic_ai.toolsets import AbstractToolset
from tooliscode.adapters import Options
from tooliscode.codetool import CodeTool
from typing_extensions import Unpack

from ._deferred import CodeModeApprovals
from ._toolset import CodeModeArgs, CodeModeToolset, Settings

__all__ = ["CodeMode"]


@dataclass(init=False)
class CodeMode(CodeModeApprovals[AgentDepsT], Settings):
    """`Agent(capabilities=[CodeMode()])`: the agent's tools become code, run in a sandbox.

    One capability instance keeps what outlives a run (the conversations' interpreters with
    `scope="conversation"`, the next run's spare) across the agent's runs; `close()` ends them.
    Inner calls that need approval or an external result pause the cell and end the run with
    `DeferredToolRequests` naming them (see `CodeModeApprovals`). Made with `CodeModeArgs`,
    as `CodeModeToolset`; the toolsets it wraps share its interpreters.
    """

    def __init__(self, *, options: Options | None = None, _code_tool: CodeTool | None = None,
                 **args: Unpack[CodeModeArgs]):
        self._configure(options, _code_tool, args)

    def get_wrapper_toolset(self, toolset: AbstractToolset[AgentDepsT]
                            ) -> AbstractToolset[AgentDepsT] | None:
        return CodeModeToolset(toolset, scope=self.scope, max_retries=self.max_retries,
                               prestart=self.prestart, timeout=self.timeout,
                               options=self.options, _code_tool=self.code_tool)
