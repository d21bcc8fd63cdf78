"""Calls made inside `run_python` that wait for a decision, in PydanticAI's deferred-tools terms.

PydanticAI pauses a run at a tool call through `DeferredToolRequests` (the run's output) and
continues it with `DeferredToolResults`, both keyed by the model's tool call ids. An inner call
has no id the model made, and the framework checks results against the calls of the model's
last response, so two translations make inner calls first-class:

- the code tool raises `ApprovalRequired` for its own call, with the inner calls it waits on
  in the metadata (`pause_metadata`); `inner_requests` turns that item of the run's output
  into one `ToolCallPart` per inner call, ids `"<run_python id>:<n>"`;
- results given for those ids become one approval of the `run_python` call, with the inner
  results in its metadata (`outer_results`); the code tool reads them back as the engine's
  decisions (`decisions_from`) and continues the paused cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry, ToolFailed, UserError
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart, ToolReturn
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import (
    AgentDepsT,
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDenied,
)
from tooliscode.engine import Decision, PendingCall
from tooliscode.prompt import CODE_TOOL_NAME

__all__ = ["KEY", "CodeModeApprovals", "decisions_from", "inner_requests", "open_code_calls",
           "outer_results", "pause_metadata"]

KEY = "tooliscode"
"""Our entry in the metadata of a `run_python` call's deferral and of its approval."""

_RESULTS = TypeAdapter(DeferredToolResults)


def pause_metadata(paused: Sequence[PendingCall]) -> dict[str, Any]:
    """The metadata of a paused `run_python` call: the inner calls it waits on."""
    # by hand: `asdict` would deep-copy each call's arguments, on every pause
    return {KEY: {"pending": [{"id": p.id, "tool": p.tool, "arguments": p.arguments,
                               "kind": p.kind, "metadata": p.metadata} for p in paused]}}


def _pending(requests: DeferredToolRequests, part: ToolCallPart) -> list[dict[str, Any]] | None:
    if part.tool_name != CODE_TOOL_NAME:
        return None
    ours = (requests.metadata.get(part.tool_call_id) or {}).get(KEY)
    return ours.get("pending") if isinstance(ours, dict) else None


def inner_requests(requests: DeferredToolRequests) -> DeferredToolRequests | None:
    """`requests` with each paused `run_python` call replaced by the inner calls it waits on
    (approvals in `approvals`, external results and questions in `calls`, each with the
    metadata its tool deferred it with); None when no code call paused."""
    if all(_pending(requests, part) is None for part in requests.approvals):
        return None
    approvals: list[ToolCallPart] = []
    calls = list(requests.calls)
    metadata = dict(requests.metadata)
    kinds = dict(requests._kinds)  # where a question is told from an external call
    for part in requests.approvals:
        pending = _pending(requests, part)
        if pending is None:
            approvals.append(part)
            continue
        del metadata[part.tool_call_id]
        for call in pending:
            inner = ToolCallPart(call["tool"], call["arguments"], call["id"])
            (approvals if call["kind"] == "approval" else calls).append(inner)
            if isinstance(call.get("metadata"), dict):
                metadata[call["id"]] = call["metadata"]
            if call["kind"] == "question":
                kinds[call["id"]] = "question"
    return DeferredToolRequests(calls=calls, approvals=approvals, metadata=metadata,
                                _kinds=kinds)


def open_code_calls(messages: Sequence[ModelMessage]) -> set[str]:
    """The ids of the `run_python` calls in the model's last response (the ones results can
    answer)."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return {p.tool_call_id for p in message.tool_calls if p.tool_name == CODE_TOOL_NAME}
    return set()


def outer_results(results: DeferredToolResults, messages: Sequence[ModelMessage]
                  ) -> DeferredToolResults | None:
    """`results` with the entries for inner calls (`"<run_python id>:<n>"`) moved into an
    approval of their `run_python` call, carrying them in its metadata; None when there are
    none."""
    code_calls = open_code_calls(messages)

    def owner(call_id: str) -> str | None:
        outer, sep, n = call_id.rpartition(":")
        return outer if sep and n.isdigit() and outer in code_calls else None

    if not any(owner(i) for i in (*results.approvals, *results.calls)):
        return None
    kept = DeferredToolResults()
    inner: dict[str, DeferredToolResults] = {}

    def route(call_id: str) -> DeferredToolResults:
        outer = owner(call_id)
        return kept if outer is None else inner.setdefault(outer, DeferredToolResults())

    for part in ("approvals", "calls", "metadata", "answered_by"):
        for call_id, value in getattr(results, part).items():
            getattr(route(call_id), part)[call_id] = value
    for outer, answers in inner.items():
        if outer in kept.approvals or outer in kept.calls:
            raise UserError(f"deferred_tool_results answers both the code call {outer!r} and "
                            "calls made inside it; answer only the inner calls")
        kept.approvals[outer] = ToolApproved()
        kept.metadata[outer] = {KEY: answers}
    return kept


def decisions_from(metadata: Any) -> dict[str, Decision] | None:
    """The decisions an approval of a `run_python` call carries for the inner calls its cell
    waits on (`metadata[KEY]`: a `DeferredToolResults` keyed by inner ids, or its JSON form);
    None when it carries none."""
    carried = metadata.get(KEY) if isinstance(metadata, dict) else None
    if carried is None:
        return None
    try:
        results = carried if isinstance(carried, DeferredToolResults) \
            else _RESULTS.validate_python(carried)
        answers = results.to_tool_call_results()
    except (ValidationError, UserError) as exc:
        raise UserError(f"the metadata of a {CODE_TOOL_NAME} approval must hold, under "
                        f"{KEY!r}, DeferredToolResults for the calls inside it: {exc}") from exc
    return {i: _decision(answer, results.metadata.get(i)) for i, answer in answers.items()}


def _decision(answer: Any, metadata: Any) -> Decision:
    """One inner call's result as the engine's decision: approved (perhaps with edited
    arguments) runs it with `ctx.tool_call_approved` and its metadata; denied or failed is a
    `ToolError` in the code; an external result is the call's return value."""
    if isinstance(answer, ToolApproved):
        return Decision.approve(arguments=answer.override_args, metadata=metadata)
    if isinstance(answer, ToolDenied):
        return Decision.reject(answer.message)
    if isinstance(answer, (ToolFailed, ModelRetry)):
        return Decision.reject(answer.message)
    if isinstance(answer, ToolReturn):
        return Decision.respond(answer.return_value)
    return Decision.reject(str(getattr(answer, "content", answer)))  # a legacy RetryPromptPart


@dataclass
class CodeModeApprovals(AbstractCapability[AgentDepsT]):
    """Inner calls that wait for a decision appear in the run's `DeferredToolRequests` as calls
    of their own, and `DeferredToolResults` given for them continue the cell.

    Part of `CodeMode`; add it beside a `CodeModeToolset` to get the same.
    """

    async def after_run(self, ctx: RunContext[AgentDepsT], *,
                        result: AgentRunResult[Any]) -> AgentRunResult[Any]:
        output = result.output
        if isinstance(output, DeferredToolRequests):
            rewritten = inner_requests(output)
            if rewritten is not None:
                result.output = rewritten  # this run's own result, made for this hook
        return result

    async def before_node_run(self, ctx: RunContext[AgentDepsT], *, node: Any) -> Any:
        if not Agent.is_user_prompt_node(node) or node.deferred_tool_results is None:
            return node
        results = outer_results(node.deferred_tool_results, ctx.messages)
        return node if results is None else replace(node, deferred_tool_results=results)
