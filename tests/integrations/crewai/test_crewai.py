"""CrewAI adapter: crews kicked off by CrewAI's own executor with a scripted native
function-calling LLM, real tools, tool-call hooks, the event bus, and crews as
conversations."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import _shop as shop
import pytest
from _pyplot import DRAW, give_pyplot
from _shop import BIG, CAUGHT, PROGRAM
from crewai import Agent, Crew, Task
from crewai.events.event_bus import crewai_event_bus
from crewai.events.types.tool_usage_events import ToolUsageFinishedEvent
from crewai.hooks import (
    register_before_tool_call_hook,
    unregister_before_tool_call_hook,
)
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from tooliscode import Limits
from tooliscode.integrations.crewai import CodeModeTool, as_crewai_tool, code_mode

list_orders, get_customer, refund = (tool(shop.list_orders), tool(shop.get_customer),
                                     tool(shop.refund))


class Script(BaseLLM):
    """Calls run_python with each code in turn (natively, as a function call), then answers
    with the last tool result it was shown."""

    steps: list[str] = []

    def supports_function_calling(self) -> bool:
        return True

    def call(self, messages: Any, tools: Any = None, callbacks: Any = None,
             available_functions: Any = None, from_task: Any = None, from_agent: Any = None,
             response_model: Any = None) -> Any:
        if self.steps:
            code = self.steps.pop(0)
            return [{"id": f"call-{len(self.steps)}", "type": "function", "function": {
                "name": "run_python", "arguments": json.dumps({"code": code})}}]
        said = [m for m in messages if m.get("role") == "tool"]
        return f"answer: {said[-1]['content'] if said else ''}"


@pytest.fixture(scope="module")
def agent():
    analyst = Agent(role="Analyst", goal="Answer about orders", backstory="Knows the shop.",
                    llm=Script(model="script"), tools=[list_orders, get_customer, refund])
    code = code_mode(analyst, limits=Limits(timeout_s=60))
    yield analyst
    code.close()


def kickoff(agent: Agent, *steps: str, crew: Crew | None = None) -> tuple[Crew, str, list[Any]]:
    """One task for `agent` (in `crew`, or a new one); the output and the tool events."""
    agent.llm.steps = list(steps)
    task = Task(description="Answer.", expected_output="An answer.", agent=agent)
    crew = crew or Crew(agents=[agent], tasks=[task])
    crew.tasks = [task]
    finished: list[Any] = []
    lock = threading.Lock()
    with crewai_event_bus.scoped_handlers():
        @crewai_event_bus.on(ToolUsageFinishedEvent)
        def seen(source: Any, event: ToolUsageFinishedEvent) -> None:
            with lock:
                finished.append(event)

        out = crew.kickoff()
        crewai_event_bus.flush()
    return crew, out.raw, finished


def test_code_mode_replaces_the_agents_tools(agent: Agent) -> None:
    (code,) = agent.tools
    assert isinstance(code, CodeModeTool)
    assert [t.name for t in code.tools] == ["list_orders", "get_customer", "refund"]
    assert "def list_orders(status: str) -> list[dict]:" in code.description
    bare = as_crewai_tool([])  # a sandboxed interpreter with no tools, for agents that code
    assert bare.name == "run_python" and bare.tools == []
    bare.close()


def test_program_with_hooks_and_events(agent: Agent) -> None:
    hooked: list[tuple[str, str | None]] = []

    def before(context: Any) -> Any:
        hooked.append((context.tool_name, getattr(context.task, "description", None)))
        return False if context.tool_input.get("customer_id") == "c3" else None

    register_before_tool_call_hook(before)
    try:
        _, out, events = kickoff(agent, PROGRAM.replace(
            "customers = await asyncio.gather(*(get_customer(customer_id=c) for c in ids))",
            "customers = []\nfor c in ids:\n    try:\n        customers.append("
            "await get_customer(customer_id=c))\n    except ToolError:\n"
            "        print('blocked', c)") + "print(len(big), gold)")
    finally:
        unregister_before_tool_call_hook(before)
    assert out.startswith("answer: blocked c3\n")
    assert out.endswith(f"{len(BIG)} ['c1']")
    ids = sorted({o["customer"] for o in BIG})
    assert hooked == [("run_python", "Answer."), ("list_orders", "Answer."),
                      *[("get_customer", "Answer.")] * len(ids)]
    names = sorted(e.tool_name for e in events)
    assert names == sorted(["run_python", "list_orders", *["get_customer"] * len(ids)])
    assert {(e.agent_id, e.task_name) for e in events} == {(str(agent.id), "Answer.")}


def test_a_failing_tool_and_a_failing_cell(agent: Agent) -> None:
    _, out, events = kickoff(agent, CAUGHT)
    assert out == "answer: caught: order -1 does not exist\nrefunded 7"
    _, out, events = kickoff(agent, "1 / 0")
    assert "ZeroDivisionError" in out
    (outer,) = [e for e in events if e.tool_name == "run_python"]
    assert outer.failure is not None and "ZeroDivisionError" in outer.failure.message


def test_crews_are_conversations(agent: Agent) -> None:
    crew, _, _ = kickoff(agent, "x = 41")
    _, out, _ = kickoff(agent, "print(x + 1)", crew=crew)
    assert out == "answer: 42"
    _, out, _ = kickoff(agent, "print(x)")
    assert "NameError" in out


def test_figures_are_listed(agent: Agent) -> None:
    crew = Crew(agents=[agent], tasks=[Task(description="Draw.", expected_output="A figure.",
                                            agent=agent)])
    give_pyplot(agent.tools[0].session(("crew", str(crew.id))))
    _, out, _ = kickoff(agent, DRAW, crew=crew)
    assert out.startswith("answer: drew") and ".png" in out


@pytest.mark.parametrize("as_given", ["decorated", "callable"])
def test_defaults_are_the_frameworks_when_code_gives_only_what_is_required(as_given) -> None:
    from _defaults import CODE, ONLY_REQUIRED, post, same_as_direct

    code = as_crewai_tool([tool(post) if as_given == "decorated" else post])
    try:
        # CrewAI runs a model's native call as `tool.run(**arguments)`
        same_as_direct(lambda: tool(post).run(**ONLY_REQUIRED), lambda: code.run(code=CODE))
    finally:
        code.close()


SENT: list[str] = []


@tool
def send_email(to: str) -> str:
    """Send an email (a person approves each)."""
    SENT.append(to)
    return f"sent to {to}"


def test_an_approval_hook_asks_for_the_codes_calls_too(monkeypatch) -> None:
    """An approval gate as CrewAI's docs write one: a before-tool-call hook that asks the
    person at the console. The person (stdin) says no: the code's call never runs."""
    asked: list[str] = []

    def approval(context: Any) -> Any:
        if context.tool_name != "send_email":
            return None
        asked.append(str(context.tool_input))
        answer = context.request_human_input(prompt=f"Send {context.tool_input}?",
                                             default_message="Type 'approve' to send:")
        return None if answer.lower() == "approve" else False

    monkeypatch.setattr("sys.stdin", io.StringIO("no\n"))
    emailer = Agent(role="Mailer", goal="Email customers", backstory="Writes emails.",
                    llm=Script(model="script"), tools=[send_email])
    code = code_mode(emailer)
    register_before_tool_call_hook(approval)
    SENT.clear()
    try:
        _, out, _ = kickoff(emailer, "try:\n    send_email(to='ann')\nexcept ToolError as e:\n"
                                     "    print('refused:', e)")
    finally:
        unregister_before_tool_call_hook(approval)
        code.close()
    assert asked == ["{'to': 'ann'}"] and SENT == []
    assert out.startswith("answer: refused:")


def test_on_output_gets_what_the_code_prints_as_it_runs() -> None:
    """CrewAI's streamed chunks carry the model's text and tool calls, not a running tool's
    progress: what the code prints goes to `on_output`."""
    chunks: list[Any] = []
    analyst = Agent(role="Analyst", goal="Answer about orders", backstory="Knows the shop.",
                    llm=Script(model="script"), tools=[list_orders])
    code = code_mode(analyst, limits=Limits(timeout_s=60), on_output=chunks.append)
    try:
        kickoff(analyst, "for i in range(50):\n    print(f'row {i}')")
    finally:
        code.close()
    assert "".join(c.text for c in chunks) == "".join(f"row {i}\n" for i in range(50))
