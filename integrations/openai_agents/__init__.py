"""OpenAI Agents SDK: an agent's function tools and MCP servers behind one code tool.

    code = CodeModeToolset([get_weather, search_docs], mcp_servers=[github])
    agent = Agent(name="Assistant", instructions=code.instructions("Be brief."), tools=[code.tool])

The model sees one tool, `run_python`, and a catalog of the wrapped tools as Python functions.
Each call the code makes runs the real tool the way the SDK runs a direct call: with a
`ToolContext` built from the code tool's own, within the tool's timeout, after its approval
policy, between its guardrails and the run's and agent's tool hooks, as a function span nested
under the code tool's span. A failed call raises `ToolError` in the code; nothing a cell does
fails the run, except a guardrail's tripwire, which ends it as it would a direct call.

A call that needs approval pauses the cell: the run ends with a `ToolApprovalItem` for that
inner call in `result.interruptions` (see `_gate.py`), and `Runner.run(agent, state)`
after `state.approve(item)` / `state.reject(item)` continues the cell where it stopped.
"""

from ._calls import ApprovalCallback
from ._toolset import CodeModeToolset, ConversationKey

__all__ = ["ApprovalCallback", "CodeModeToolset", "ConversationKey"]
