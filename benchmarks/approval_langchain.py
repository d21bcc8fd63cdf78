"""The LangChain flows bench_approval.py times: an agent whose code calls a tool a person
reviews (`CodeModeMiddleware` + `HumanInTheLoopMiddleware`), and the same agent calling the
tool itself, both with LangChain's fake chat model replying from the conversation."""

from __future__ import annotations

import collections
import json
import time
import uuid
from typing import Any

from _util import Paired, settle
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import Field
from tooliscode import Limits
from tooliscode.integrations.langchain import CodeModeMiddleware

FRAMEWORK = "LangChain"
MODES = ("batched", "per_call")
RAN: collections.Counter[str] = collections.Counter()


@tool
def send_email(to: str, body: str) -> str:
    """Send an email (a person reviews each)."""
    RAN["send_email"] += 1
    return f"sent to {to}"


@tool
def send_note(to: str, body: str) -> str:
    """The same as `send_email`, unreviewed: the baseline a pause is measured against."""
    RAN["send_note"] += 1
    return f"sent to {to}"


@tool
def ping(n: int) -> int:
    """An ungated call."""
    RAN["ping"] += 1
    return n


class Model(GenericFakeChatModel):
    """Replies from the conversation: a user message is code to run, or `CALL name {json}`
    for a direct call; a tool's answer ends the turn."""

    messages: Any = Field(default_factory=lambda: iter(()))

    def bind_tools(self, tools: Any, **kwargs: Any) -> Model:
        return self

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        text = str(last.content)
        if isinstance(last, ToolMessage):
            reply = AIMessage("done")
        elif text.startswith("CALL "):
            _, name, arguments = text.split(" ", 2)
            reply = AIMessage("", tool_calls=[{"name": name, "args": json.loads(arguments),
                                               "id": "call_1", "type": "tool_call"}])
        else:
            reply = AIMessage("", tool_calls=[{"name": "run_python", "args": {"code": text},
                                               "id": "call_1", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def agent(mode: str, runtime: str | None, code: bool) -> tuple[Any, CodeModeMiddleware | None]:
    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True}, interrupt_mode=mode)
    if not code:
        return create_agent(Model(), tools=[send_email, send_note, ping], middleware=[hitl],
                            checkpointer=InMemorySaver()), None
    middleware = CodeModeMiddleware([send_email, send_note, ping], hitl=hitl, runtime=runtime,
                                    limits=Limits(timeout_s=60))
    return create_agent(Model(), middleware=[middleware, hitl],
                        checkpointer=InMemorySaver()), middleware


def approve(interrupts: list[Any]) -> Command:
    first = interrupts[0].value
    if "action_requests" in first:
        return Command(resume={"decisions": [{"type": "approve"}] * len(first["action_requests"])})
    return Command(resume={i.id: {"type": "approve"} for i in interrupts})


def turn(graph: Any, thread: str, message: str) -> int:
    """One user turn, every pause approved: the pauses it made."""
    config = {"configurable": {"thread_id": thread}}
    result = graph.invoke({"messages": [("user", message)]}, config, version="v2")
    pauses = 0
    while result.interrupts:
        pauses += 1
        result = graph.invoke(approve(result.interrupts), config, version="v2")
    return pauses


def _timed_s(graph: Any, thread: str, timed: str, pauses: int) -> float:
    start = time.perf_counter()
    assert turn(graph, thread, timed) == pauses
    return time.perf_counter() - start


def pause_resume_s(mode: str, runtime: str, samples: int) -> Paired:
    """A turn with one reviewed call, paused and resumed, less the same turn calling an
    unreviewed twin (`send_note`): what the pause adds, from code and called directly, in
    `samples` rounds of the four flows taking turns.

    Each round starts four new threads with a turn that makes a call (a conversation's first
    call from code costs its interpreter a few ms once, pause or not), lets the process settle
    (a new interpreter taken from the pool has the pool boot its replacement in the
    background: a few hundred ms of CPU that would weigh on whichever turn came next), then,
    flow by flow, makes one more untimed call (what settling left cold is warm again) and
    times the next turn."""
    ours, code = agent(mode, runtime, True)
    theirs, _ = agent(mode, runtime, False)
    flows = {("ours", 1): (ours, "ping(n=1)", "send_email(to='ann', body='hi')"),
             ("ours", 0): (ours, "ping(n=1)", "send_note(to='ann', body='hi')"),
             ("theirs", 1): (theirs, 'CALL ping {"n": 1}',
                             'CALL send_email {"to": "ann", "body": "hi"}'),
             ("theirs", 0): (theirs, 'CALL ping {"n": 1}',
                             'CALL send_note {"to": "ann", "body": "hi"}')}
    measured = Paired()
    try:
        for sample in range(samples + 3):
            threads = {key: uuid.uuid4().hex for key in flows}
            for key, (graph, first, _) in flows.items():
                turn(graph, threads[key], first)
            settle()
            took = {}
            for key, (graph, first, timed) in flows.items():
                turn(graph, threads[key], first)
                took[key] = _timed_s(graph, threads[key], timed, key[1])
            if sample >= 3:
                measured.add(took["ours", 1], took["theirs", 1], took["ours", 0],
                             took["theirs", 0])
    finally:
        assert code is not None
        code.close()
    return measured


def calls_across_pause(mode: str, runtime: str) -> int:
    """The tool runs of a cell making 100 ungated calls, then one reviewed call."""
    graph, code = agent(mode, runtime, True)
    RAN.clear()
    try:
        turn(graph, uuid.uuid4().hex, "total = sum(ping(n=i) for i in range(100))\n"
                                      "send_email(to='ann', body=str(total))")
    finally:
        assert code is not None
        code.close()
    return sum(RAN.values())
