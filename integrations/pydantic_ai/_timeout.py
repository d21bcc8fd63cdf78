"""The time limit PydanticAI sets on the code tool's calls, which it does not enforce itself.

PydanticAI bounds the calls of its function tools (`Tool(timeout=...)`, the agent's
`tool_timeout`) in `FunctionToolset.call_tool`; a toolset's own tools, as ours is, get no
bound (pydantic-ai-harness#308: a code call then runs past the agent's `tool_timeout`). So
the code tool reads the limit the way a function tool's call would: its definition's
`timeout` (which `prepare_tools` may change), else the agent's `tool_timeout`.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.tools import ToolDefinition

__all__ = ["time_limit"]


def time_limit(ctx: RunContext[Any], tool_def: ToolDefinition) -> float | None:
    """Seconds one call of the code tool may take in all, or None for no limit."""
    if tool_def.timeout is not None:
        return tool_def.timeout
    # The agent keeps `tool_timeout` only privately; PydanticAI's own function toolset is
    # given it at construction (pydantic_ai/agent/__init__.py).
    agent_timeout = getattr(ctx.agent, "_tool_timeout", None)
    return agent_timeout if isinstance(agent_timeout, (int, float)) else None
