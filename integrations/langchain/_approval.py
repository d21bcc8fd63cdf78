"""Inner calls that wait for a person, through LangGraph interrupts and LangChain's
`HumanInTheLoopMiddleware`.

A call the code makes pauses the cell in one of two ways:
- "approval": the middleware is in `batched` mode, which reviews only the model's own calls
  (in `after_model`), so the gate here reviews inner calls with the middleware's own
  settings and builders; a pause then interrupts the graph once, with the middleware's
  request (`{"action_requests", "review_configs"}`) for every call the cell waits on.
- "interrupt": something in the tool-call chain raised a LangGraph interrupt at the call:
  the middleware in `per_call` mode, or a tool calling `interrupt()` itself.

On resume LangGraph runs `run_python` again, with the same call, and answers its interrupts
by their order within the task. So each invocation first takes again the answers its earlier
pauses used (each paused call records how many came before it, its "slot"), then gets the
answer for the calls the cell waits on: the batched request is asked again (the answer comes
back), and an interrupted call is run down the chain again (the middleware gets its answer
and runs the tool, or answers for it). The decisions go to the paused cell, which goes on:
parked in this process, or run again from the store with its calls answered from its log.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from langchain.agents.middleware import HumanInTheLoopMiddleware, InterruptOnConfig
from langchain_core.messages import ToolCall
from langgraph.errors import GraphInterrupt
from langgraph.runtime import get_runtime
from langgraph.types import interrupt
from tooliscode import OnOutput, ToolError
from tooliscode.codetool import CodeTool, Reply, Step, Steps, adrive, drive
from tooliscode.engine import CallPaused, Cancel, Decision, PendingCall, current_call

from ._chain import (
    CodeCall,
    Turn,
    failure,
    interrupted,
    request_for,
    through_chain,
    unreviewed,
)

__all__ = ["Gate", "Invocation", "inner_call"]

AGAIN = "tooliscode.langchain.again"
"""Decision metadata: ask for this call again (its answer is not in yet)."""
_AGAIN = Decision.approve(metadata=AGAIN)
_EXPIRED = "the call was not approved: nobody decided in time, so the pause expired"


@dataclass(frozen=True)
class Gate:
    """Which inner calls wait for a person: the tools the agent's reviewers review (the first
    one that reviews a tool decides its calls)."""

    reviewers: tuple[HumanInTheLoopMiddleware, ...]

    def check(self, turn: Turn, call: CodeCall, arguments: dict[str, Any],
              call_id: str) -> None:
        """Before the call goes down the chain (in the code tool's context): pause it for
        review in `batched` mode; in `per_call` mode the middleware asks in the chain, and
        the tool refuses to run if it did not (it was listed before `CodeModeMiddleware`)."""
        hitl = next((h for h in self.reviewers if call.name in h.interrupt_on), None)
        if hitl is None:
            return
        config = hitl.interrupt_on[call.name]
        state = turn.chain.request.state  # type: ignore[union-attr]
        if hitl.interrupt_mode == "per_call":
            when = config.get("when")
            if when is None or when(request_for(turn, call, arguments, call_id)):
                unreviewed.set(call.name)
            return
        tool_call = ToolCall(name=call.name, args=arguments, id=call_id, type="tool_call")
        runtime = get_runtime()
        if not hitl._should_interrupt(tool_call, config, state, runtime):  # the `when` test
            return
        action, review = hitl._create_action_and_config(tool_call, config, state, runtime)
        raise CallPaused("approval", {"slot": turn.consumed, "action": action, "review": review})


def inner_call(turn: Turn, call: CodeCall, arguments: dict[str, Any]) -> Any:
    """One call the code makes, under `CodeModeMiddleware`: down the agent's chain (or a
    pause); an awaitable under an async agent."""
    info = current_call()
    if info is None:  # cells under the middleware always run with call ids
        raise ToolError("tools can only be called while the code tool runs")
    if info.approved and info.metadata == AGAIN:
        raise CallPaused("interrupt", interrupted(turn))
    if not info.approved and info.id in turn.waiting:
        raise CallPaused(*turn.waiting[info.id])
    gate = turn.gate
    before = None
    if gate is not None and not info.approved:
        def before() -> None:
            gate.check(turn, call, arguments, info.id)
    return through_chain(turn, call, arguments, info.id, before)


# -- one invocation of run_python --------------------------------------------------------------


@dataclass(frozen=True)
class Invocation:
    """One run of `run_python` under `CodeModeMiddleware`: a new cell, or the paused one
    continued with the answers LangGraph has for it. Raises `GraphInterrupt` while it
    waits."""

    code_tool: CodeTool
    code: str
    key: Any
    outer: str
    """The model's call of `run_python`, the same each time LangGraph runs it again."""
    turn: Turn
    calls: Mapping[str, CodeCall]
    output: OnOutput | None = None
    """Where what a new cell prints goes as it runs (a continued cell streams nothing)."""
    cancel: Cancel | None = None
    """Stops the cell (a graph run asked to drain)."""

    def run(self) -> Reply:
        return drive(_steps(self))

    async def arun(self) -> Reply:
        return await adrive(_steps(self))


@dataclass(frozen=True)
class RunCode:
    """Run the cell (`decisions` None: a new one) or continue it with `decisions`."""

    of: Invocation
    decisions: Mapping[str, Decision] | None

    def run(self) -> Reply:
        return self.of.code_tool.run_code(self.of.code, **self._where())

    async def arun(self) -> Reply:
        return await self.of.code_tool.arun_code(self.of.code, **self._where())

    def _where(self) -> dict[str, Any]:
        i = self.of
        return {"key": i.key, "context": i.turn, "call_id": i.outer, "decisions": self.decisions,
                "on_output": i.output, "cancel": i.cancel}


@dataclass(frozen=True)
class GiveUp:
    """Give up the conversation's paused cell (its calls refused): a new cell does."""

    of: Invocation

    def run(self) -> None:
        self.of.code_tool.run_code("pass", key=self.of.key)

    async def arun(self) -> None:
        await self.of.code_tool.arun_code("pass", key=self.of.key)


@dataclass(frozen=True)
class Review:
    """Run a call that interrupted down the chain again, for its answer: its `Decision`, or
    None while it waits (then `turn.raised` has its interrupt)."""

    of: Invocation
    pending: PendingCall

    def run(self) -> Decision | None:
        try:
            return Decision.respond(self._through())
        except Exception as exc:  # noqa: BLE001 - see `_unanswered`
            return _unanswered(exc)

    async def arun(self) -> Decision | None:
        try:
            return Decision.respond(await self._through())
        except Exception as exc:  # noqa: BLE001 - see `_unanswered`
            return _unanswered(exc)

    def _through(self) -> Any:
        p = self.pending
        call = self.of.calls.get(p.tool)
        if call is None:  # continued by a code tool without it
            raise ToolError(f"{p.tool} is not one of the code's tools any more")
        return through_chain(self.of.turn, call, p.arguments, p.id)


def _steps(of: Invocation) -> Steps[Reply]:
    code, turn = of.code_tool, of.turn
    pending = code.paused_calls(of.outer, key=of.key, code=of.code)
    reply: Reply | None = None
    parked = code.paused_in(of.key) == of.outer
    if not pending:
        if _answered_before(turn):  # a resume, but the cell it paused is gone
            return (yield RunCode(of, {}))  # the code tool says so; nothing runs
        if parked:  # other code, paused under a reused call id
            yield GiveUp(of)
        reply = yield RunCode(of, None)
    elif not parked and any(p.kind != "approval" for p in pending):
        # Paused elsewhere: run it again from its record up to its pause, here, before any
        # call is asked about again and its tool run (a cell that now asks for other calls,
        # or whose pause expired, stops first).
        turn.waiting = {p.id: (p.kind, p.metadata) for p in pending}
        reply = yield RunCode(of, {})
        turn.waiting = {}
    while reply is None or reply.paused:
        if reply is not None:
            pending = reply.paused
        decisions = yield from _decide(of, pending)
        reply = yield RunCode(of, decisions)
    return reply


def _answered_before(turn: Turn) -> bool:
    """Does LangGraph hold an answer for this task? (Asking takes it if so.)"""
    try:
        interrupt(None)
    except GraphInterrupt:
        return False
    turn.consumed += 1
    return True


def _decide(of: Invocation, pending: tuple[PendingCall, ...]
            ) -> Generator[Step, Decision | None, dict[str, Decision]]:
    turn = of.turn
    ordered = sorted(pending, key=lambda p: int(p.id.rsplit(":", 1)[1]))
    slot = min(_slot(p) for p in ordered)
    while turn.consumed < slot:  # the answers the earlier pauses used, in their order
        interrupt(None)
        turn.consumed += 1
    decisions: dict[str, Decision] = {}
    gated = [p for p in ordered if p.kind == "approval"]
    if gated:
        answer = interrupt({"action_requests": [p.metadata["action"] for p in gated],
                            "review_configs": [p.metadata["review"] for p in gated]})
        turn.consumed += 1
        decisions.update(batched_decisions(gated, answer))
    interrupts = [p for p in ordered if p.kind != "approval"]
    if any(_expired(p) for p in interrupts):  # too late to run them: the cell gives up
        return {p.id: Decision.reject(_EXPIRED) for p in ordered}
    stop: GraphInterrupt | None = None
    for p in interrupts:
        stop = stop or turn.raised.get(p.id)  # asked in this very invocation: no answer yet
        if stop is None:
            decided = yield Review(of, p)
            if decided is not None:
                decisions[p.id] = decided
                turn.consumed += 1
                continue
            stop = turn.raised[p.id]
        decisions[p.id] = _AGAIN
    if stop is not None and all(d is _AGAIN for d in decisions.values()):
        raise stop  # nothing was answered: the same pause stands
    return decisions


def _expired(pending: PendingCall) -> bool:
    meta = pending.metadata
    expires = meta.get("expires") if isinstance(meta, dict) else None
    return expires is not None and time.time() > expires


def _slot(pending: PendingCall) -> int:
    meta = pending.metadata
    return int(meta.get("slot", 0)) if isinstance(meta, dict) else 0


def batched_decisions(gated: list[PendingCall], answer: Any) -> dict[str, Decision]:
    """The person's answer to a batched request, checked as the middleware checks one for
    the model's calls, as decisions for the paused calls."""
    given = answer.get("decisions") if isinstance(answer, dict) else None
    if not isinstance(given, list) or len(given) != len(gated):
        count = len(given) if isinstance(given, list) else 0
        raise ValueError(f"Number of human decisions ({count}) does not match number of "
                         f"hanging tool calls ({len(gated)}).")
    out: dict[str, Decision] = {}
    for p, decision in zip(gated, given):
        call = ToolCall(name=p.tool, args=p.arguments, id=p.id, type="tool_call")
        allowed = cast(InterruptOnConfig,
                       {"allowed_decisions": p.metadata["review"]["allowed_decisions"]})
        _, message = HumanInTheLoopMiddleware._process_decision(decision, call, allowed)
        kind = decision["type"]
        if kind == "approve":
            out[p.id] = Decision.approve()
        elif kind == "edit":
            edited = decision["edited_action"]
            if edited.get("name", p.tool) != p.tool:
                raise ValueError(f"an edit of the code's call {p.id} names {edited['name']!r}: "
                                 f"it can change the arguments of {p.tool!r}, not the tool")
            out[p.id] = Decision.approve(arguments=dict(edited["args"]))
        elif kind == "respond":
            out[p.id] = Decision.respond(decision["message"])
        else:  # the middleware's own wording
            out[p.id] = Decision.reject(str(message.text) if message is not None else "")
    return out


def _unanswered(exc: Exception) -> Decision | None:
    """A call run again for its answer did not give a value: None while it still waits,
    else the error the code gets (the tool failed, or the answer refused it)."""
    return None if isinstance(exc, CallPaused) else Decision.reject(failure(exc))
