"""The code's side of the PydanticAI adapter: which of a toolset's tools the code gets, and how
each call the code makes reaches the tool (through a `ToolManager`, as the agent's own calls).
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed, UserError
from pydantic_ai.messages import ToolCallPart, ToolReturn
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import ToolDefinition, ToolDenied
from pydantic_ai.toolsets import ToolsetTool
from tooliscode import Tool, ToolError
from tooliscode.codetool import Sandbox
from tooliscode.engine import CallPaused, current_call, run_in
from tooliscode.tools import Caller, check_callers, split_callers

from ._inner import running

__all__ = ["Cell", "checked", "split", "tools_of"]


@dataclass
class Cell:
    """What one `run_python` call's inner tool calls go through."""

    manager: ToolManager[Any]
    context: contextvars.Context
    """The code tool's context, so tracing spans of inner calls nest under it."""

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        call = current_call()  # the cell runs with ids: every call has one
        assert call is not None
        part = ToolCallPart(tool_name=name, args=arguments, tool_call_id=call.id)
        # its steps in the code tool's context: no task of its own
        return await run_in(self.context.copy(), self._handle(part, call.approved, call.metadata))

    async def _handle(self, part: ToolCallPart, approved: bool, metadata: Any) -> Any:
        """The call as the agent makes its own: through the `ToolManager` (which asks a
        `HandleDeferredToolCalls` capability to decide a deferred call on the spot); a
        deferral nothing decided pauses the cell."""
        try:
            result = await self.manager.handle_call(part, approved=approved, metadata=metadata,
                                                    wrap_validation_errors=False)
        except (ModelRetry, ToolFailed) as exc:
            raise ToolError(exc.message) from None
        except ApprovalRequired as exc:
            raise CallPaused("approval", exc.metadata) from None
        except CallDeferred as exc:
            raise CallPaused(exc.kind, exc.metadata) from None
        if isinstance(result, ToolDenied):
            raise ToolError(result.message)  # as a denial given on resume reads
        return result.return_value if isinstance(result, ToolReturn) else result


@dataclass(frozen=True)
class _InnerTool:
    """The function the session calls for one wrapped tool: it runs in the current cell."""

    sandbox: Sandbox
    name: str

    async def __call__(self, /, **arguments: Any) -> Any:
        return await running(self.sandbox, Cell).call(self.name, arguments)


def _stays_native(tool_def: ToolDefinition, ctx: RunContext[Any]) -> bool:
    """Tools that keep their own place: framework control tools (search, capability loading),
    tools not revealed yet, native-tool fallbacks, and other code-execution tools. (Deferred
    ones, needing approval or run outside the agent, are called from code: the cell pauses.)"""
    return (tool_def.tool_kind is not None or bool(tool_def.unless_native)
            or not ctx.is_tool_available(tool_def)
            or "code_arg_name" in (tool_def.metadata or {}))


def checked(callers: Mapping[str, str]) -> dict[str, Caller]:
    try:
        return check_callers(callers, callers)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def split(tools: dict[str, ToolsetTool[Any]], callers: Mapping[str, Caller],
           ctx: RunContext[Any]) -> tuple[dict[str, ToolsetTool[Any]], dict[str, ToolsetTool[Any]]]:
    """The tools the model sees beside `run_python`, and the ones the code calls. `callers`
    naming a tool the toolset does not list now is passed over: tools come and go between
    steps (`prepare`, filters, an MCP server's list)."""
    free = [n for n, t in tools.items() if not _stays_native(t.tool_def, ctx)]
    in_code, direct = split_callers(free, {n: c for n, c in callers.items() if n in tools}, str)
    shown = set(direct) | (tools.keys() - set(free))
    return ({n: t for n, t in tools.items() if n in shown},
            {n: tools[n] for n in in_code})


def tools_of(inner: dict[str, ToolsetTool[Any]], sandbox: Sandbox | None) -> list[Tool]:
    return [Tool(name=name, description=t.tool_def.description or "",
                 parameters=t.tool_def.parameters_json_schema,
                 output_schema=t.tool_def.return_schema,
                 function=None if sandbox is None else _InnerTool(sandbox, name))
            for name, t in inner.items()]
