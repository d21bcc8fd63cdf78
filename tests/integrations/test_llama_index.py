"""LlamaIndex adapter: FunctionAgent, ReActAgent and CodeActAgent run by their own workflow
runner, with LlamaIndex's scripted function-calling mock LLM, real FunctionTools (sync, async,
one that wants the workflow Context) and the run's event stream.

No `from __future__ import annotations`: FunctionTool finds a `Context` parameter by its
annotation object."""

import asyncio
import json
import threading
from typing import Any

import pytest
from _cancels import CAME_BACK, LOOP, READ, SET, leftovers, nothing_left, running, until_running
from _pyplot import DRAW, PNG_MAGIC, give_pyplot
from _shop import BIG, CAUGHT, CUSTOMERS, GOLD, ORDERS, PROGRAM, get_customer, list_orders, refund
from llama_index.core.agent.workflow import (
    CodeActAgent,
    FunctionAgent,
    ReActAgent,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, ToolCallBlock
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent
from tooliscode import Limits
from tooliscode.integrations.llama_index import (
    CONVERSATION_KEY,
    CodeActSandbox,
    as_llama_index_tool,
)
from workflows.errors import WorkflowCancelledByUser, WorkflowTimeoutError


async def visits(ctx: Context) -> int:
    """How many times this conversation asked (kept in the workflow's state)."""
    count = await ctx.store.get("visits", default=0) + 1
    await ctx.store.set("visits", count)
    return count


TOOLS = [list_orders, FunctionTool.from_defaults(async_fn=get_customer),
         FunctionTool.from_defaults(async_fn=visits), refund]

@pytest.fixture(scope="module")
def code():
    tool = as_llama_index_tool(TOOLS, limits=Limits(timeout_s=60))
    yield tool
    tool.close()


def function_calls(*codes: str) -> MockFunctionCallingLLM:
    """An LLM that calls run_python with each code in turn, then answers with the last tool
    result it was given."""
    steps = list(codes)

    def reply(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        if steps:
            return ChatMessage(role="assistant", blocks=[ToolCallBlock(
                tool_call_id=f"call-{len(steps)}", tool_name="run_python",
                tool_kwargs={"code": steps.pop(0)})])
        return ChatMessage(role="assistant", content=f"answer: {messages[-1].content}")

    return MockFunctionCallingLLM(response_generator=reply)


async def run(agent: Any, ctx: Context | None = None) -> tuple[Any, list[Any]]:
    handler = agent.run("go", ctx=ctx)
    events = [e async for e in handler.stream_events()]
    return await handler, events


def results(events: list[Any]) -> list[ToolCallResult]:
    return [e for e in events if isinstance(e, ToolCallResult)]


async def test_function_agent_gathers_calls_with_context_and_events(code) -> None:
    agent = FunctionAgent(tools=[code], llm=function_calls(
        PROGRAM + "print(len(big), gold, await visits())"))
    ctx = Context(agent)
    answer, events = await run(agent, ctx)
    expected = f"{len(BIG)} {GOLD} 1"
    assert str(answer) == f"answer: {expected}"
    inner = [e for e in results(events) if e.tool_name != "run_python"]
    assert [e.tool_name for e in inner] == ["list_orders", *["get_customer"] * CUSTOMERS, "visits"]
    assert all(e.tool_id.startswith("run_python:") and not e.tool_output.is_error for e in inner)
    assert len([e for e in events if isinstance(e, ToolCall)]) >= len(inner) + 1
    (outer,) = [e for e in results(events) if e.tool_name == "run_python"]
    assert outer.tool_output.content == expected and not outer.tool_output.is_error
    assert await ctx.store.get("visits") == 1, "the inner tool got the run's Context"


async def test_react_agent_and_failures(code) -> None:
    steps = [CAUGHT, "refund(order_id=-5)", "1 / 0"]

    def reply(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        if steps:
            return ChatMessage(role="assistant", content="Thought: I need code.\nAction: "
                               f"run_python\nAction Input: {json.dumps({'code': steps.pop(0)})}")
        return ChatMessage(role="assistant", content="Thought: done.\nAnswer: done")

    agent = ReActAgent(tools=[code], llm=MockFunctionCallingLLM(response_generator=reply))
    answer, events = await run(agent)
    assert "done" in str(answer)
    outer = [e.tool_output for e in results(events) if e.tool_name == "run_python"]
    assert outer[0].content == "caught: order -1 does not exist\nrefunded 7"
    assert outer[1].is_error and "order -5 does not exist" in outer[1].content
    assert outer[2].is_error and "ZeroDivisionError" in outer[2].content
    refunds = [e.tool_output for e in results(events) if e.tool_name == "refund"]
    assert [r.is_error for r in refunds] == [True, False, True]


async def test_one_interpreter_per_context(code) -> None:
    agent = FunctionAgent(tools=[code], llm=function_calls("x = 41"))
    ctx = Context(agent)
    await run(agent, ctx)
    agent.llm = function_calls("print(x + 1)")
    answer, _ = await run(agent, ctx)
    assert str(answer) == "answer: 42"
    assert await ctx.store.get(CONVERSATION_KEY) in code.live()
    agent.llm = function_calls("print(x)")
    _, events = await run(agent, Context(agent))
    (other,) = results(events)
    assert other.tool_output.is_error and "NameError" in other.tool_output.content


def test_sync_call_without_a_workflow(code) -> None:
    out = code.call(code="print(sum(o['total'] for o in list_orders(status='open')))", ctx=None)
    assert out.content == str(sum(o["total"] for o in ORDERS if o["status"] == "open"))


async def test_figures_come_back_as_image_blocks(code) -> None:
    agent = FunctionAgent(tools=[code], llm=function_calls(DRAW))
    ctx = Context(agent)
    key = "figures"
    await ctx.store.set(CONVERSATION_KEY, key)
    give_pyplot(code.session(key))
    _, events = await run(agent, ctx)
    (result,) = results(events)
    text, image = result.tool_output.blocks
    assert text.text.startswith("drew")
    assert isinstance(image, ImageBlock) and image.image_mimetype == "image/png"
    assert image.resolve_image().read().startswith(PNG_MAGIC)


async def test_codeact_agent_keeps_state_between_steps() -> None:
    sandbox = CodeActSandbox([list_orders, refund], limits=Limits(timeout_s=60))
    steps = ["<execute>\npaid = list_orders(status='paid')\nprint(len(paid))\n</execute>",
             "<execute>\nprint(refund(order_id=paid[0]['id']))\n</execute>"]

    def reply(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        said = steps.pop(0) if steps else f"Finished: {messages[-1].content.splitlines()[-1]}"
        return ChatMessage(role="assistant", content=said)

    agent = CodeActAgent(code_execute_fn=sandbox.execute, tools=[list_orders, refund],
                         llm=MockFunctionCallingLLM(response_generator=reply))
    try:
        answer, events = await run(agent)
    finally:
        sandbox.close()
    executed = [e.tool_output.content for e in results(events) if e.tool_name == "execute"]
    assert executed == [str(len([o for o in ORDERS if o["status"] == "paid"])),
                        f"refunded {ORDERS[1]['id']}"]
    assert [e.tool_name for e in results(events)].count("refund") == 1
    assert str(answer) == f"Finished: refunded {ORDERS[1]['id']}"


@pytest.mark.parametrize("as_given", ["tool", "callable"])
async def test_defaults_are_the_frameworks_when_code_gives_only_what_is_required(as_given):
    from _defaults import CODE, ONLY_REQUIRED, asame_as_direct, post

    code = as_llama_index_tool([FunctionTool.from_defaults(post) if as_given == "tool" else post])
    try:
        await asame_as_direct(lambda: FunctionTool.from_defaults(post).acall(**ONLY_REQUIRED),
                              lambda: code.acall(code=CODE, ctx=None))
    finally:
        code.close()


SENT: list[str] = []


async def send_email(ctx: Context, to: str) -> str:
    """Send an email; a person approves each (the workflow asks, as LlamaIndex's
    human-in-the-loop tools do)."""
    answer = await ctx.wait_for_event(HumanResponseEvent, waiter_id=f"send-{to}",
                                      waiter_event=InputRequiredEvent(prefix=f"Email {to}?"))
    if answer.response != "yes":
        return f"not sent to {to}: {answer.response}"
    SENT.append(to)
    return f"sent to {to}"


async def test_a_tool_asking_the_user_never_runs_unanswered_from_code() -> None:
    """The workflow's own approval, as a user writes it into a tool: a step waiting for a
    person is run again once they answer, which a call from code cannot be; the call is
    refused, naming the fix, and the email is never sent."""
    code = as_llama_index_tool([send_email], limits=Limits(timeout_s=30))
    agent = FunctionAgent(tools=[code], llm=function_calls(
        "try:\n    send_email(to='ann')\nexcept ToolError as e:\n    print(e)"))
    SENT.clear()
    try:
        answer, events = await run(agent)
    finally:
        code.close()
    assert not [e for e in events if isinstance(e, InputRequiredEvent)]
    assert "send_email waits for a person's answer" in str(answer)
    assert "callers={'send_email': 'direct'}" in str(answer) and SENT == []


@pytest.mark.parametrize("how", ["function_agent", "codeact"])
async def test_what_the_code_prints_comes_as_workflow_stream_events(code, how) -> None:
    from llama_index.core.agent.workflow import CodeActAgent
    from tooliscode.integrations.llama_index import CodeOutput

    printing = "for i in range(200):\n    print(f'row {i}')"
    if how == "function_agent":
        agent = FunctionAgent(tools=[code], llm=function_calls(printing))
    else:
        sandbox = CodeActSandbox([list_orders], limits=Limits(timeout_s=60))
        steps = [f"<execute>\n{printing}\n</execute>", "done"]
        agent = CodeActAgent(code_execute_fn=sandbox.execute, tools=[list_orders],
                             llm=MockFunctionCallingLLM(response_generator=lambda m, **k:
                                                        ChatMessage(role="assistant",
                                                                    content=steps.pop(0))))
    try:
        _, events = await run(agent, Context(agent))
    finally:
        if how == "codeact":
            sandbox.close()
    chunks = [e for e in events if isinstance(e, CodeOutput)]
    assert "".join(c.text for c in chunks) == "".join(f"row {i}\n" for i in range(200))
    assert {c.stream for c in chunks} == {"stdout"}
    done = next(i for i, e in enumerate(events) if isinstance(e, ToolCallResult))
    assert all(events.index(c) < done for c in chunks)  # while the code ran


RELEASED = threading.Event()


async def hold() -> str:
    """Waits until the test lets it go."""
    while not RELEASED.is_set():
        await asyncio.sleep(0.01)
    return "released"


@pytest.fixture(scope="module")
def held():
    tool = as_llama_index_tool([FunctionTool.from_defaults(async_fn=hold)],
                               limits=Limits(timeout_s=60))
    yield tool
    RELEASED.set()
    tool.close()


async def test_cancelling_a_run_stops_its_cell_and_the_next_run_calls_again_from_before(held):
    """LlamaIndex's own cancel (`cancel_run`) stops the cell at once. The workflow Context
    keeps the cancelled step's tool call, and the next run with it makes that call again: in
    the state from before the stopped cell."""
    RELEASED.clear()
    agent = FunctionAgent(tools=[held], llm=function_calls(SET))
    ctx = Context(agent)
    await run(agent, ctx)
    before = leftovers()
    agent.llm = function_calls("x += 1\nawait hold()")
    handler = agent.run("go", ctx=ctx)
    session = await until_running(held.code_tool)
    await handler.cancel_run()
    with pytest.raises(WorkflowCancelledByUser):
        await handler
    assert session._running is None
    RELEASED.set()
    agent.llm = function_calls(READ)
    _, events = await run(agent, ctx)
    again, *read = [r for r in results(events) if r.tool_name == "run_python"]
    if not read:  # a step of the cancelled run, still winding down, used the new LLM's call
        # up (seen in about one run in three); the read is then asked for once more
        agent.llm = function_calls(READ)
        _, events = await run(agent, ctx)
        read = [r for r in results(events) if r.tool_name == "run_python"]
    read = read[-1]
    assert again.tool_kwargs == {"code": "x += 1\nawait hold()"}
    assert again.tool_output.content.startswith(f"[note] {CAME_BACK}")
    # 41 + 1 once: the stopped cell's change is gone
    assert read.tool_output.content.splitlines()[-1] == "42"
    await asyncio.to_thread(nothing_left, before)


async def test_a_workflow_timeout_stops_the_cell(held):
    """LlamaIndex has no tool timeout; a workflow's `timeout` bounds the whole run, and
    cancelling its step stops the cell."""
    agent = FunctionAgent(tools=[held], llm=function_calls(LOOP), timeout=1)
    with pytest.raises(WorkflowTimeoutError):
        await run(agent, Context(agent))
    assert running(held.code_tool) is None
