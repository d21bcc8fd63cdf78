"""An inner call run the way the Agents SDK runs a direct call: the tool's input guardrails,
then `on_tool_start` of the run's hooks and the agent's, the call itself, the output
guardrails, then `on_tool_end`; guardrail results join the run's own result lists.

The run's `RunHooks` and result lists are on no context object a tool receives: they belong
to the SDK's executor running the code tool's call, found here through that call's task
(`running_executor`). Without it (a future SDK that runs tools otherwise) inner calls still
get the guardrails and the agent's hooks; tests pin the lookup.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agents import (
    AgentHooks,
    FunctionTool,
    RunHooks,
    ToolInputGuardrailData,
    ToolInputGuardrailResult,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailData,
    ToolOutputGuardrailResult,
    ToolOutputGuardrailTripwireTriggered,
)
from agents.tool_context import ToolContext
from tooliscode import ToolError

__all__ = ["RunParts", "TRIPWIRES", "guarded_call", "running_executor"]

TRIPWIRES = (ToolInputGuardrailTripwireTriggered, ToolOutputGuardrailTripwireTriggered)
"""What a guardrail raises to end the whole run."""

_EXECUTOR_STEP = "_FunctionToolBatchExecutor._invoke_tool_and_run_post_invoke"


def running_executor(ctx: ToolContext[Any]) -> Any:
    """The SDK's executor running the tool call `ctx` belongs to: the task whose coroutine is
    the executor's invoke step with `ctx` as its tool context (the current task, or, when the
    tool has a timeout, the task awaiting it). None if there is none."""
    current = asyncio.current_task()
    tasks = [current] if current is not None else []
    for task in [*tasks, *asyncio.all_tasks()]:
        coro = task.get_coro()
        frame = getattr(coro, "cr_frame", None)
        if frame is not None and getattr(coro, "__qualname__", "") == _EXECUTOR_STEP and \
                frame.f_locals.get("tool_context") is ctx:
            return frame.f_locals.get("self")
    return None


def _overrides(hooks: Any, base: Any) -> bool:
    """Whether `hooks` does anything on tool start or end (the base classes do nothing)."""
    kind: Any = type(hooks)
    return kind.on_tool_start is not base.on_tool_start or \
        kind.on_tool_end is not base.on_tool_end


@dataclass
class RunParts:
    """What a code tool call's inner calls share with the run: its hooks (those that do
    something) and its guardrail result lists."""

    hooks: list[Any] = field(default_factory=list)
    input_results: list[ToolInputGuardrailResult] = field(default_factory=list)
    output_results: list[ToolOutputGuardrailResult] = field(default_factory=list)

    @classmethod
    def of(cls, ctx: ToolContext[Any]) -> RunParts:
        executor = running_executor(ctx)
        agent_hooks = getattr(ctx.agent, "hooks", None)
        hooks = [h for h, base in ((getattr(executor, "hooks", None), RunHooks),
                                   (agent_hooks, AgentHooks))
                 if h is not None and _overrides(h, base)]
        if executor is None:
            return cls(hooks)
        return cls(hooks, executor.tool_input_guardrail_results,
                   executor.tool_output_guardrail_results)


async def guarded_call(parts: RunParts, tool: FunctionTool, ctx: ToolContext[Any],
                       call: Callable[[], Awaitable[Any]]) -> Any:
    """`call()` between `tool`'s guardrails and the hooks, in the SDK's order. A guardrail's
    rejection raises `ToolError` with its message (after an input guardrail the call is not
    made and the hooks do not fire, as for a direct call); a tripwire raises the SDK's own
    exception."""
    agent: Any = ctx.agent  # the SDK gives a tool's context the agent running it
    for guardrail in tool.tool_input_guardrails or ():
        out = await guardrail.run(ToolInputGuardrailData(context=ctx, agent=agent))
        parts.input_results.append(ToolInputGuardrailResult(guardrail=guardrail, output=out))
        rejected = _verdict(out, ToolInputGuardrailTripwireTriggered, guardrail)
        if rejected is not None:
            raise ToolError(rejected)
    if parts.hooks:
        await asyncio.gather(*(h.on_tool_start(ctx, agent, tool) for h in parts.hooks))
    result = await call()
    rejected = None
    for checker in tool.tool_output_guardrails or ():
        out = await checker.run(ToolOutputGuardrailData(context=ctx, agent=agent, output=result))
        parts.output_results.append(ToolOutputGuardrailResult(guardrail=checker, output=out))
        rejected = _verdict(out, ToolOutputGuardrailTripwireTriggered, checker)
        if rejected is not None:
            break
    final = result if rejected is None else rejected  # what on_tool_end sees, as natively
    if parts.hooks:
        await asyncio.gather(*(h.on_tool_end(ctx, agent, tool, final) for h in parts.hooks))
    if rejected is not None:
        raise ToolError(rejected)
    return result


def _verdict(out: Any, tripwire: Any, guardrail: Any) -> str | None:
    """A guardrail's rejection message, if it rejected; its tripwire raised, if it tripped."""
    behavior = out.behavior
    if behavior["type"] == "raise_exception":
        raise tripwire(guardrail=guardrail, output=out)
    return behavior["message"] if behavior["type"] == "reject_content" else None
