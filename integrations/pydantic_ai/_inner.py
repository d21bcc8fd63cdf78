"""The code's side of the PydanticAI adapter: which of a toolset's tools the code gets, and how
each call the code makes reaches the tool (through a `ToolManager`, as the agent's own calls).
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.messages import BinaryContent, ToolCallPart, ToolReturn
from pydantic_ai.tool_manager import ToolManager
from pydantic_ai.tools import ToolDefinition, ToolDenied
from pydantic_ai.toolsets import ToolsetTool
from tooliscode import ToolError
from tooliscode.adapters import Binding, Cell, Hooks, OutputSink
from tooliscode.codetool import Reply
from tooliscode.engine import CallPaused, current_call, run_in
from tooliscode.tools import Caller, split_callers

from ._deferred import pause_metadata
from ._output import emitter

__all__ = ["HOOKS", "InnerCell", "split", "with_images"]


@dataclass(kw_only=True)
class InnerCell(Cell):
    """What one `run_python` call's inner tool calls go through."""

    manager: ToolManager[Any]
    context: contextvars.Context
    """The code tool's context, so tracing spans of inner calls nest under it."""
    decided: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Decisions handed in with this call: calls decided now wait for the rest, unasked."""
    run: RunContext[Any] | None = None
    """The code tool call's own context: what the code prints is emitted into its run."""


class _Hooks(Hooks[ToolsetTool[Any], InnerCell]):
    """A toolset's tools, called through the run's `ToolManager` as the agent calls them."""

    approves = True  # a deferral pauses the cell, and the run ends with DeferredToolRequests

    def declare(self, native: ToolsetTool[Any]) -> Binding[ToolsetTool[Any]]:
        tool_def = native.tool_def
        return Binding.of(native, name=tool_def.name, description=tool_def.description or "",
                          parameters=tool_def.parameters_json_schema,
                          output_schema=tool_def.return_schema,
                          approval="always" if tool_def.kind == "unapproved" else "never")

    def output(self, cell: InnerCell) -> OutputSink | None:
        """`CodeOutputEvent`s, emitted into the agent run's event stream."""
        return emitter(cell.run) if cell.run is not None else None

    async def call(self, cell: InnerCell, binding: Binding[ToolsetTool[Any]],
                   arguments: dict[str, Any], call_id: str) -> Any:
        info = current_call()  # the cell runs with ids: every call has one
        assert info is not None
        part = ToolCallPart(tool_name=binding.name, args=arguments, tool_call_id=call_id)
        # its steps in the code tool's context: no task of its own
        return await run_in(cell.context.copy(), _handle(cell.manager, part, info.approved,
                                                         info.metadata))

    def render(self, reply: Reply) -> ToolReturn:
        """The tool's return, with the calls the code made in its metadata; a failed cell
        is a retry prompt."""
        if not reply.ok:
            raise ModelRetry(reply.text)
        calls = reply.result.tool_calls if reply.result is not None else ()
        return ToolReturn(return_value=with_images(reply), metadata={
            "code_mode": True, "tool_calls": [dataclasses.asdict(r) for r in calls]})

    def key(self, context: Any) -> Any:
        return context.conversation_id

    def pause(self, cell: InnerCell, reply: Reply) -> Any:
        """PydanticAI's own pause: the run ends with DeferredToolRequests (CodeModeApprovals
        names the inner calls there), and approving this call continues the cell. Calls
        decided now wait for the rest (kept), so only the rest are asked for."""
        waiting = [p for p in reply.paused if p.id not in cell.decided]
        raise ApprovalRequired(metadata=pause_metadata(waiting or reply.paused))


HOOKS = _Hooks()


async def _handle(manager: ToolManager[Any], part: ToolCallPart, approved: bool,
                  metadata: Any) -> Any:
    """The call as the agent makes its own: through the `ToolManager` (which asks a
    `HandleDeferredToolCalls` capability to decide a deferred call on the spot); a deferral
    nothing decided pauses the cell."""
    try:
        result = await manager.handle_call(part, approved=approved, metadata=metadata,
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


def _stays_native(tool_def: ToolDefinition, ctx: RunContext[Any]) -> bool:
    """Tools that keep their own place: framework control tools (search, capability loading),
    tools not revealed yet, native-tool fallbacks, and other code-execution tools. (Deferred
    ones, needing approval or run outside the agent, are called from code: the cell pauses.)"""
    return (tool_def.tool_kind is not None or bool(tool_def.unless_native)
            or not ctx.is_tool_available(tool_def)
            or "code_arg_name" in (tool_def.metadata or {}))


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


def with_images(reply: Reply) -> str | list[str | BinaryContent]:
    """The tool result: the text, then each figure the cell made as `BinaryContent`. In the
    return value (not `ToolReturn.content`, a separate user message) it stays the tool's
    result: sent natively where the provider takes files in tool results, else framed as
    coming from this tool call."""
    if not reply.images:
        return reply.text
    return [reply.text, *(BinaryContent(i.data, media_type=i.mime) for i in reply.images)]
