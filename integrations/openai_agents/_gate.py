"""A code tool call paused at inner calls that need approval, through the Agents SDK's own
interruptions.

The SDK already lets a running tool end the run with approval items that belong to another
agent's tool calls: that is how `Agent.as_tool()` hands up a nested agent's pending approvals.
The code tool does the same. When its cell pauses, it records, against its own tool call (as
`as_tool()` records its nested run), the result of a gate agent's run that stopped at one
`ToolApprovalItem` per waiting call, named by the inner tool's name, arguments and id
(`<outer id>:<n>`). That result is built here rather than run: running the gate took longer
than the rest of the pause. Those items become the outer run's `result.interruptions`;
`state.approve` / `state.reject` find them there, and `RunState.to_json()` carries them.
When the run resumes, the SDK calls the code tool again with the same call, and `resumed`
reads each item's decision back from the gate's state.

This leans on SDK names that are public but not exported (`agents.agent_tool_state`), on two
private fields of `FunctionTool` (`_agent_instance`, `_is_agent_tool`: without them
`RunState.from_json` drops the nested items), on `RunResult`'s fields for a resumable
checkpoint (`_original_input`, `_current_turn`), on `RunState._context`, and on the SDK
reading no model settings of an agent that calls no model (the gate has none); tests pin each.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    RunContextWrapper,
    RunResult,
    ToolApprovalItem,
    ToolOrigin,
    ToolOriginType,
)
from agents.agent_tool_state import (
    drop_agent_tool_run_result,
    get_agent_tool_state_scope,
    peek_agent_tool_run_result,
    record_agent_tool_run_result,
)
from agents.run_internal.tool_execution import resolve_approval_rejection_message
from agents.tool_context import ToolContext
from tooliscode.engine import Decision, PendingCall

__all__ = ["Gate", "Resumed"]

_INPUT = "tooliscode: calls waiting for approval; pause "
"""The gate's input, followed by the pause's token (it travels in the gate's state)."""


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
        # The SDK works out the identity of every agent a run reaches, the gate included,
        # several times a run, and flattening model settings is most of that work. The gate
        # never calls a model, so it has none (the SDK's identity then skips them).
        self.agent.model_settings = None  # type: ignore[assignment]

    def adopt(self, tool: FunctionTool) -> FunctionTool:
        """Make `tool` (the code tool) the gate's owner, as `Agent.as_tool()` marks its tools,
        so that `RunState.from_json` restores the gate's pending items."""
        tool._agent_instance = self.agent
        tool._is_agent_tool = True
        return tool

    def pause(self, ctx: ToolContext[Any], pending: Sequence[tuple[PendingCall, FunctionTool]],
              token: str) -> list[ToolApprovalItem]:
        """End the code tool's call with one approval item per pending call, each named by
        the inner tool it calls (the SDK's tool, as for a direct call)."""
        items = [ToolApprovalItem(agent=self.agent, raw_item=_raw_call(p, tool),
                                  tool_name=tool.name, tool_origin=_FUNCTION)
                 for p, tool in pending]
        result = RunResult(input=_INPUT + token, new_items=list(items), raw_responses=[],
                           final_output=None, _last_agent=self.agent, input_guardrail_results=[],
                           output_guardrail_results=[], tool_input_guardrail_results=[],
                           tool_output_guardrail_results=[],
                           context_wrapper=RunContextWrapper(context=ctx.context),
                           interruptions=items, max_turns=1)
        result._original_input = _INPUT + token  # what `to_state()` keeps as its input
        result._current_turn = 1
        assert ctx.tool_call is not None  # only a call of the model's pauses (see the toolset)
        record_agent_tool_run_result(ctx.tool_call, result,
                                     scope_id=get_agent_tool_state_scope(ctx))
        return items

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
        if gate_ctx is None:  # a state without its context holds no decisions
            return None
        config = ctx.run_config or RunConfig()
        decisions, always = {}, {}
        for item in items:
            # By name and id: each id is this pause's own (`<outer id>:<n>`), so the name
            # alone is unambiguous, and reading it so skips the identity work of
            # `get_approval_status` that the SDK has just done for the same items.
            status = gate_ctx.is_tool_approved(item.tool_name, item.call_id)
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


def _raw_call(call: PendingCall, tool: FunctionTool) -> dict[str, Any]:
    """The pending call as the function call a model would have made. A mapping, which the
    SDK accepts for any approval item: it copies one far faster than a response model on
    every lookup of a nested approval (`item.arguments` and `item.call_id` read it alike,
    and `RunState.from_json` restores it as a `ResponseFunctionToolCall`)."""
    return {"type": "function_call", "name": tool.name, "call_id": call.id,
            "arguments": json.dumps(call.arguments, ensure_ascii=False)}


_FUNCTION = ToolOrigin(type=ToolOriginType.FUNCTION)
