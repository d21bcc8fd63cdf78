"""PydanticAI: code mode as a wrapper toolset and as an agent capability.

    agent = Agent(model, toolsets=[CodeModeToolset(my_toolset)])      # or
    agent = Agent(model, toolsets=[my_toolset], capabilities=[CodeMode()])

The model sees `run_python` (plus the few tools that cannot run from code, see `_inner.py`,
and those `callers` gives it directly); the wrapped tools become Python functions in the
sandbox. Each call the code makes goes through a `ToolManager` over the wrapped toolset, the
way the agent calls tools itself: argument validation, capability hooks, `call_tool` with the
run's `RunContext` (so `deps` arrive), usage counting. A `ModelRetry` from an inner tool is
raised in the code as a `ToolError` with its message; a cell that fails reaches the model as
a retry prompt.

A call that needs approval or an external result (`requires_approval=True`, `ApprovalRequired`,
`CallDeferred`) pauses the cell: the run ends with `DeferredToolRequests`, and a later run given
`DeferredToolResults` continues the cell where it stopped (see `_deferred.py`).

State: by default one interpreter per agent run, closed when the run ends. With
`scope="conversation"` it is kept per `conversation_id` (which PydanticAI carries over with
the message history), so a later run continuing the same conversation finds its variables.
"""

from ._capability import CodeMode
from ._deferred import CodeModeApprovals
from ._output import CodeOutputEvent
from ._toolset import CodeModeArgs, CodeModeToolset, Scope

__all__ = ["CodeMode", "CodeModeApprovals", "CodeModeArgs", "CodeModeToolset", "CodeOutputEvent",
           "Scope"]
