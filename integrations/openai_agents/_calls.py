"""The Agents SDK's side of the kit: how a call the code makes runs (as the SDK runs a direct
call: its span, approval policy, guardrails and hooks), and how a reply becomes the SDK's
tool output."""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents import ToolOutputImage, ToolOutputText
from agents.tool_context import ToolContext
from agents.tracing import SpanError, function_span
from agents.util._approvals import evaluate_function_tool_approval
from tooliscode import ToolError
from tooliscode.adapters import Binding, Cell, Hooks, unapproved
from tooliscode.codetool import Reply
from tooliscode.engine import CallInfo, CallPaused, Decision, StopCell, current_call, run_in
from tooliscode.prompt import data_url

from ._pipeline import TRIPWIRES, RunParts, guarded_call
from ._tools import Inner, as_tool_error, maybe, plain

__all__ = ["ApprovalCallback", "CodeCell", "SdkHooks"]

ApprovalCallback = Callable[[ToolContext[Any], str, dict[str, Any]], "bool | Awaitable[bool]"]
"""`approve(context, tool_name, arguments)`: may this call of a tool that needs approval run?"""


@dataclass(kw_only=True)
class CodeCell(Cell):
    """What the calls of the running cell need: the code tool's context and context variables
    (the current trace and span among them), captured on the runner's loop, and the run's
    hooks and guardrail results."""

    ctx: ToolContext[Any]
    context: contextvars.Context
    sensitive: bool
    parts: RunParts
    pausable: bool = False
    """A call that needs approval pauses the cell (else, with no `approve`, it is refused)."""
    always: Mapping[str, Decision] = field(default_factory=dict)
    """Decisions a person made for every call of a tool (`always_approve`, `always_reject`)."""
    tripped: Exception | None = None
    """A guardrail's tripwire: the cell stopped, and the run ends with it."""


@dataclass(frozen=True)
class SdkHooks(Hooks[Inner, CodeCell]):
    """Function tools and MCP tools, run as the SDK runs the model's calls; `approve` decides
    in this process instead of pausing (see `CodeModeToolset`)."""

    approve: ApprovalCallback | None = None
    approves = True

    def declare(self, native: Inner) -> Binding[Inner]:
        tool = native.tool
        needs = native.sdk.needs_approval
        return Binding.of(native, name=tool.name, description=tool.description,
                          parameters=tool.parameters, output_schema=tool.output_schema,
                          namespace=tool.namespace, python_name=tool.python_name,
                          metadata=tool.metadata, timeout_s=tool.timeout_s,
                          approval="never" if needs is False else
                          "always" if needs is True else "asked")

    async def call(self, cell: CodeCell, binding: Binding[Inner], arguments: dict[str, Any],
                   call_id: str) -> Any:
        info = current_call()  # read here: the code tool's context below does not have it
        # its steps in the code tool's context (its trace and span): no task of its own
        return await run_in(cell.context.copy(), self._call(cell, binding, arguments, call_id,
                                                            info))

    async def _call(self, cell: CodeCell, binding: Binding[Inner], arguments: dict[str, Any],
                    call_id: str, info: CallInfo | None) -> Any:
        inner, name = binding.native, binding.name
        text = json.dumps(arguments, ensure_ascii=False)
        with function_span(name, input=text if cell.sensitive else None) as span:
            if inner.mcp_server is not None:
                span.span_data.mcp_data = {"server": inner.mcp_server}
            ctx = ToolContext.from_agent_context(
                cell.ctx, call_id, tool_name=inner.sdk_name, tool_arguments=text,
                agent=cell.ctx.agent, run_config=cell.ctx.run_config)
            try:
                if binding.approval != "never" and (info is None or not info.approved):
                    await self._check_approval(cell, binding, ctx, arguments, info is not None)
                if inner.guarded or cell.parts.hooks:
                    value = await guarded_call(cell.parts, inner.sdk, ctx,
                                               lambda: inner.run(ctx, arguments))
                else:
                    value = await inner.run(ctx, arguments)
                value = plain(value)
            except CallPaused:
                raise
            except Exception as exc:
                error = await as_tool_error(exc, inner, ctx)
                span.set_error(SpanError(message="Error running tool", data={
                    "tool_name": name, "error": str(error) if cell.sensitive else "(redacted)"}))
                if isinstance(exc, TRIPWIRES):
                    cell.tripped = exc  # the run ends with it once the cell has stopped
                    raise StopCell(f"{name}: a guardrail ended the run") from exc
                if error is exc:
                    raise
                raise error from exc
            if cell.sensitive:
                span.span_data.output = value
            return value

    async def _check_approval(self, cell: CodeCell, binding: Binding[Inner],
                              ctx: ToolContext[Any], arguments: dict[str, Any],
                              with_id: bool) -> None:
        """Whether the call may run now: its policy, evaluated as the SDK evaluates a direct
        call's; then `approve`, a decision for all of the tool's calls, or a pause."""
        inner = binding.native
        evaluation = await evaluate_function_tool_approval(inner.sdk, ctx, ctx.tool_arguments,
                                                           ctx.tool_call_id)
        if evaluation.outcome != "require_approval":
            return
        name = binding.tool.qualified_name
        if self.approve is not None:
            if not await maybe(self.approve(ctx, name, arguments)):
                raise ToolError(f"{name}: the call was not approved")
            return
        decided = cell.always.get(inner.sdk_name)
        if decided is not None:
            if decided.action != "approve":
                raise ToolError(decided.message or "the call was not approved")
            return
        if cell.pausable and with_id:
            raise CallPaused("approval")
        raise unapproved(name)

    def render(self, reply: Reply) -> str | list[ToolOutputText | ToolOutputImage]:
        """The code tool's output: the text, then each figure the cell made as the SDK's image
        output (a Chat Completions model keeps only the text, which lists the files)."""
        if not reply.images:
            return reply.text
        return [ToolOutputText(text=reply.text),
                *(ToolOutputImage(image_url=data_url(i), detail="auto") for i in reply.images)]
