"""A code tool call paused at inner calls that need approval, through the Agents SDK's own
interruptions.

The SDK already lets a running tool end the run with approval items that belong to another
agent's tool calls: that is how `Agent.as_tool()` hands up a nested agent's pending approvals.
The code tool does the same. When its cell pauses, a gate agent runs once: its "model" calls
each waiting inner call by the inner tool's name, arguments and id (`<outer id>:<n>`), and its
tools are stand-ins that need approval, so the gate's run ends at once with one
`ToolApprovalItem` per waiting call. Recorded against the code tool's call (as `as_tool()`
records its nested run), those items become the outer run's `result.interruptions`;
`state.approve` / `state.reject` find them there, and `RunState.to_json()` carries them.
When the run resumes, the SDK calls the code tool again with the same call, and `resumed`
reads each item's decision back from the gate's state.

This leans on SDK names that are public but not exported (`agents.agent_tool_state`), on two
private fields of `FunctionTool` (`_agent_instance`, `_is_agent_tool`: without them
`RunState.from_json` drops the nested items) and on `RunState._context`; tests pin each.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    ToolApprovalItem,
    Usage,
)
from agents.agent_tool_state import (
    drop_agent_tool_run_result,
    get_agent_tool_state_scope,
    peek_agent_tool_run_result,
    record_agent_tool_run_result,
)
from agents.run_internal.tool_execution import resolve_approval_rejection_message
from agents.tool_context import ToolContext
from openai.types.responses import ResponseFunctionToolCall
from tooliscode.engine import Decision, PendingCall

__all__ = ["Gate", "Resumed"]

_INPUT = "tooliscode: calls waiting for approval; pause "
"""The gate run's input, followed by the pause's token (it travels in the gate's state)."""


@dataclass(frozen=True)
class Resumed:
    """What a resumed code tool call learns from its pause: a decision per decided item, the
    pause's token, and the tools a person approved or rejected for good (`always_approve`,
    `always_reject`)."""

    decisions: dict[str, Decision]
    token: str | None
    always: dict[str, Decision] = field(default_factory=dict)


class Gate:
    """The agent whose pending calls stand for a paused cell's calls (its name is what
    `item.agent.name` shows: the code tool's)."""

    def __init__(self, name: str):
        self.agent: Agent[Any] = Agent(name=name)

    def adopt(self, tool: FunctionTool) -> FunctionTool:
        """Make `tool` (the code tool) the gate's owner, as `Agent.as_tool()` marks its tools,
        so that `RunState.from_json` restores the gate's pending items."""
        tool._agent_instance = self.agent
        tool._is_agent_tool = True
        return tool

    async def pause(self, ctx: ToolContext[Any], pending: Sequence[tuple[PendingCall, FunctionTool]],
                    token: str) -> list[ToolApprovalItem]:
        """End the code tool's call with one approval item per pending call, each named by
        the inner tool it calls (the SDK's tool, as for a direct call)."""
        calls = [ResponseFunctionToolCall(type="function_call", name=tool.name, call_id=p.id,
                                          arguments=json.dumps(p.arguments, ensure_ascii=False))
                 for p, tool in pending]
        by_name = {tool.name: tool for _, tool in pending}  # one stand-in per name
        stand_ins = [_stand_in(tool) for tool in by_name.values()]
        result = await Runner.run(self.agent.clone(tools=stand_ins), _INPUT + token,
                                  context=ctx.context,
                                  run_config=RunConfig(model=_Calls(calls), tracing_disabled=True))
        record_agent_tool_run_result(ctx.tool_call, result,
                                     scope_id=get_agent_tool_state_scope(ctx))
        return list(result.interruptions)

    async def resumed(self, ctx: ToolContext[Any]) -> Resumed | None:
        """The decisions for this call's pause, when the run resumes one (None otherwise);
        the pause is forgotten by the SDK from here on, so the call can end."""
        if ctx.tool_call is None:
            return None
        scope = get_agent_tool_state_scope(ctx)
        pending = peek_agent_tool_run_result(ctx.tool_call, scope_id=scope)
        items = getattr(pending, "interruptions", None) if pending is not None else None
        if not items:
            return None
        state = pending.to_state()  # type: ignore[union-attr]
        gate_ctx = state._context
        config = ctx.run_config or RunConfig()
        decisions, always = {}, {}
        for item in items:
            status = gate_ctx.get_approval_status(item.tool_name, item.call_id,
                                                  tool_namespace=item.tool_namespace,
                                                  existing_pending=item)
            if status is None:
                continue
            if status:
                decisions[item.call_id] = Decision.approve()
            else:
                decisions[item.call_id] = Decision.reject(await resolve_approval_rejection_message(
                    context_wrapper=gate_ctx, run_config=config, tool_type="function",
                    tool_name=item.tool_name, call_id=item.call_id,
                    tool_namespace=item.tool_namespace, existing_pending=item))
            # a decision for every later call of the tool (always_approve / always_reject)
            if gate_ctx.is_tool_approved(item.tool_name, "\x00later") is not None:
                always[item.tool_name] = decisions[item.call_id]
        drop_agent_tool_run_result(ctx.tool_call, scope_id=scope)
        original = state._original_input
        token = original[len(_INPUT):] if isinstance(original, str) and \
            original.startswith(_INPUT) else None
        return Resumed(decisions, token, always)


def _stand_in(tool: FunctionTool) -> FunctionTool:
    """A tool of the gate's named like `tool`: it needs approval and never runs. Nothing
    reads its schema (the gate's model is this module's), so it has none to weigh on the
    SDK's bookkeeping."""
    return FunctionTool(name=tool.name, description="", params_json_schema=_ANY,
                        on_invoke_tool=_never, strict_json_schema=False, needs_approval=True)


_ANY: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}


async def _never(ctx: Any, arguments: str) -> str:
    raise RuntimeError("a paused call's stand-in never runs")


class _Calls(Model):
    """The gate's model: one response, the waiting calls."""

    def __init__(self, calls: list[ResponseFunctionToolCall]):
        self.calls = calls

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(output=list(self.calls), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the gate runs without streaming")
