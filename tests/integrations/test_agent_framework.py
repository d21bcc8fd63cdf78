"""Microsoft Agent Framework adapter: real `Agent` runs with a scripted chat client (a
`FunctionInvocationLayer` over `BaseChatClient`, as the framework's own CodeAct tests script
one), real function tools, sessions, approval and runtime keyword arguments."""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Mapping, MutableSequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from _cancels import CAME_BACK, LOOP, READ, SET, cancel_when_running, leftovers, nothing_left
from agent_framework import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationContext,
    FunctionInvocationLayer,
    MCPStdioTool,
    Message,
    tool,
)
from agent_framework.exceptions import ToolException
from tooliscode import Limits
from tooliscode.durable import FolderStore
from tooliscode.integrations.agent_framework import CodeActProvider, ExecuteCodeTool

ORDERS = [{"id": i, "customer": f"c{i % 4}", "total": (i * 37) % 250,
           "status": ("open", "paid")[i % 2]} for i in range(40)]
SEEN_CONTEXTS: list[FunctionInvocationContext] = []
REQUEST = contextvars.ContextVar("request", default=None)
"""Set by the caller around a run, as a tracing or logging library sets its current span."""
SEEN_REQUESTS: list[Any] = []


@tool
def list_orders(status: Annotated[str, "open or paid"]) -> list[dict]:
    """All orders with one status."""
    return [o for o in ORDERS if o["status"] == status]


@tool
async def get_customer(customer_id: str, ctx: FunctionInvocationContext) -> dict:
    """One customer's record."""
    SEEN_CONTEXTS.append(ctx)
    SEEN_REQUESTS.append(REQUEST.get())
    await asyncio.sleep(0.01)
    return {"id": customer_id, "name": f"Customer {customer_id}",
            "tier": "gold" if customer_id in ("c1", "c3") else "basic",
            "tenant": ctx.kwargs.get("tenant")}


@tool
def refund(order_id: int) -> str:
    """Refund one order."""
    if order_id < 0:
        raise ToolException(f"order {order_id} does not exist")
    if order_id == 0:
        raise ValueError("order 0 is special")
    return f"refunded {order_id}"


REFUNDED: list[str] = []


@tool(approval_mode="always_require")
def cancel(order_id: int) -> str:
    """Cancel an order (a person approves first)."""
    REFUNDED.append(f"cancelled {order_id}")
    return f"cancelled {order_id}"


PROGRAM = """\
import asyncio
orders = list_orders(status="paid")
big = [o for o in orders if o["total"] > 100]
ids = sorted({o["customer"] for o in big})
customers = await asyncio.gather(*(get_customer(customer_id=c) for c in ids))
gold = [c["name"] for c in customers if c["tier"] == "gold"]
print(len(big), sum(o["total"] for o in big), gold, {c["tenant"] for c in customers})
"""
BIG = [o for o in ORDERS if o["status"] == "paid" and o["total"] > 100]
GOLD = sorted({f"Customer {o['customer']}" for o in BIG if o["customer"] in ("c1", "c3")})


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Answers each model call with the next scripted reply: code for `execute_code`, or
    text. Keeps what each call was given (the function results, the options)."""

    def __init__(self, *replies: str | dict[str, Any]) -> None:
        FunctionInvocationLayer.__init__(self)
        BaseChatClient.__init__(self)
        self.replies = list(replies)
        self.calls: list[tuple[list[Message], Mapping[str, Any]]] = []

    def _inner_get_response(self, *, messages: MutableSequence[Message], stream: bool,
                            options: Mapping[str, Any], **kwargs: Any) -> Any:
        async def respond() -> ChatResponse:
            self.calls.append((list(messages), dict(options)))
            reply = self.replies.pop(0)
            if isinstance(reply, str):
                return ChatResponse(messages=Message(role="assistant", contents=[reply]))
            return ChatResponse(messages=Message(role="assistant", contents=[
                Content.from_function_call(call_id=f"call-{len(self.calls)}",
                                           name=reply.get("name", "execute_code"),
                                           arguments=reply.get("arguments",
                                                               {"code": reply.get("code")}))]))
        return respond()

    def results(self) -> list[Any]:
        """The function results the last model call was shown."""
        messages, _ = self.calls[-1]
        return [c for m in messages for c in m.contents if c.type == "function_result"]

    def last_result_text(self) -> str:
        (result,) = self.results()[-1:]
        return str(result.result)


def code(source: str) -> dict[str, Any]:
    return {"code": source}


@pytest.fixture(scope="module")
def codeact():
    provider = CodeActProvider(tools=[list_orders, get_customer, refund],
                               limits=Limits(timeout_s=20))
    yield provider
    provider.close()


async def test_a_program_gathers_tool_calls_with_the_run_context(codeact):
    client = ScriptedClient(code(PROGRAM), "done")
    agent = Agent(client=client, instructions="Be brief.", context_providers=[codeact])
    session = AgentSession()
    SEEN_CONTEXTS.clear()
    SEEN_REQUESTS.clear()
    REQUEST.set("request-7")
    result = await agent.run("Which gold customers paid most?", session=session,
                             function_invocation_kwargs={"tenant": "acme"})
    assert result.text == "done"
    assert client.last_result_text().strip() == (
        f"{len(BIG)} {sum(o['total'] for o in BIG)} {GOLD} {{'acme'}}")
    # The model saw one tool and the catalog of the provider's tools in its instructions.
    _, options = client.calls[0]
    assert [t.name for t in options["tools"]] == ["execute_code"]
    assert "Be brief." in options["instructions"]
    assert "def get_customer(customer_id: str):" in options["instructions"]  # `dict` says nothing
    # Inner calls got a context of this run: its session and its keyword arguments.
    assert len(SEEN_CONTEXTS) == len({o["customer"] for o in BIG})
    assert {c.session.session_id for c in SEEN_CONTEXTS} == {session.session_id}
    # ... and the context variables of the code tool's call (spans nest through these).
    assert SEEN_REQUESTS == ["request-7"] * len(SEEN_CONTEXTS)
    assert session.state["tooliscode_codeact"]["tool_names"] == [
        "list_orders", "get_customer", "refund"]


async def test_a_failing_tool_raises_tool_error_in_the_code(codeact):
    client = ScriptedClient(code(
        "for n in (-3, 0, 4):\n"
        "    try:\n"
        "        print(refund(order_id=n))\n"
        "    except ToolError as e:\n"
        "        print('failed:', e)"), "done")
    agent = Agent(client=client, context_providers=[codeact])
    assert (await agent.run("refund", session=AgentSession())).text == "done"
    assert client.last_result_text().splitlines() == [
        "failed: order -3 does not exist", "failed: ValueError: order 0 is special",
        "refunded 4"]


async def test_a_failing_cell_returns_its_traceback_and_the_run_goes_on(codeact):
    client = ScriptedClient(code("orders = list_orders(status='paid')\norders[99]['id']"),
                            code("len(orders)"), "done")
    agent = Agent(client=client, context_providers=[codeact])
    assert (await agent.run("go", session=AgentSession())).text == "done"
    first = str(client.results()[0].result)
    assert "IndexError: list index out of range" in first and "orders[99]" in first
    assert client.last_result_text() == "[value] 20"


async def test_state_lasts_across_runs_of_a_session_and_sessions_are_apart(codeact):
    client = ScriptedClient(code("n = 41"), "ok", code("n + 1"), "ok",
                            code("'n' in globals()"), "ok")
    agent = Agent(client=client, context_providers=[codeact])
    first, second = AgentSession(), AgentSession()
    await agent.run("set", session=first)
    await agent.run("read", session=first)
    assert client.last_result_text() == "[value] 42"
    await agent.run("read elsewhere", session=second)
    assert client.last_result_text() == "[value] False"
    assert {first.session_id, second.session_id} <= set(codeact.live())
    assert codeact.drop(second.session_id)


async def test_approval_is_asked_for_the_code_call_as_the_framework_providers_do():
    provider = CodeActProvider(tools=[cancel], limits=Limits(timeout_s=20))
    try:
        client = ScriptedClient(code("print(cancel(order_id=7))"), "done")
        agent = Agent(client=client, context_providers=[provider])
        session = AgentSession()
        REFUNDED.clear()
        paused = await agent.run("cancel order 7", session=session)
        (request,) = paused.user_input_requests
        assert request.function_call.name == "execute_code" and REFUNDED == []
        answer = request.to_function_approval_response(approved=True)
        done = await agent.run(Message(role="user", contents=[answer]), session=session)
        assert done.text == "done" and REFUNDED == ["cancelled 7"]
        assert client.last_result_text().strip() == "cancelled 7"
    finally:
        provider.close()


async def test_the_standalone_tool_sits_beside_direct_tools(codeact):
    standalone = ExecuteCodeTool(tools=[list_orders], code_tool=codeact.code_tool)
    assert standalone.approval_mode == "never_require"
    client = ScriptedClient(code("len(list_orders(status='open'))"), "done")
    agent = Agent(client=client, tools=[refund, standalone],
                  instructions=standalone.build_instructions(tools_visible_to_model=True))
    assert (await agent.run("count", session=AgentSession())).text == "done"
    assert client.last_result_text() == "[value] 20"
    _, options = client.calls[0]
    assert sorted(t.name for t in options["tools"]) == ["execute_code", "refund"]
    assert "def list_orders(status: str) -> list[dict]" in options["instructions"]


async def test_tools_registered_later_reach_the_next_run(codeact):
    extra = CodeActProvider(tools=[list_orders], limits=Limits(timeout_s=20))
    try:
        client = ScriptedClient(code("x = 1"), "ok", code("print(x)\nrefund(order_id=5)"), "ok")
        agent = Agent(client=client, context_providers=[extra])
        session = AgentSession()
        await agent.run("one", session=session)
        extra.add_tools(refund)
        await agent.run("two", session=session)
        text = client.last_result_text()
        assert "tools changed" in text and "NameError" in text  # a new guest, said so
        _, options = client.calls[-1]
        assert "def refund(order_id: int) -> str" in options["instructions"]
    finally:
        extra.close()


async def test_a_store_keeps_a_sessions_interpreter_for_another_provider(tmp_path):
    store = FolderStore(tmp_path / "store")
    session = AgentSession()
    one = CodeActProvider(tools=[list_orders], store=store)
    try:
        agent = Agent(client=ScriptedClient(code("kept = 'in the store'"), "ok"),
                      context_providers=[one])
        await agent.run("set", session=session)
    finally:
        one.close()  # waits for the save that follows the answer
    two = CodeActProvider(tools=[list_orders], store=store)
    try:
        client = ScriptedClient(code("kept"), "ok")
        # The session as a web app keeps it between requests: serialised, then loaded.
        again = AgentSession.from_dict(session.to_dict())
        await Agent(client=client, context_providers=[two]).run("get", session=again)
        assert client.last_result_text() == "[value] 'in the store'"
    finally:
        two.close()


async def test_an_mcp_tools_functions_run_from_code():
    clock = MCPStdioTool(name="clock", command=str(Path(sys.executable).parent / "mcp-server-time"),
                         args=["--local-timezone", "UTC"])
    async with clock:
        provider = CodeActProvider(tools=[clock], limits=Limits(timeout_s=20))
        try:
            client = ScriptedClient(code(
                "import json\n"
                "now = json.loads(get_current_time(timezone='Asia/Tokyo'))\n"
                "print(now['timezone'], now['datetime'][-6:])"), "done")
            await Agent(client=client, context_providers=[provider]).run(
                "time in Tokyo?", session=AgentSession())
            assert client.last_result_text().strip() == "Asia/Tokyo +09:00"
            assert {t.name for t in provider.get_tools()} == {"get_current_time", "convert_time"}
        finally:
            provider.close()
    with pytest.raises(TypeError, match="function tools only"):
        CodeActProvider(tools=[{"type": "web_search"}])


@pytest.mark.parametrize("as_given", ["decorated", "callable"])
async def test_defaults_are_the_frameworks_when_code_gives_only_what_is_required(as_given):
    from _defaults import CODE, ONLY_REQUIRED, asame_as_direct, post

    async def direct():
        client = ScriptedClient({"name": "post", "arguments": dict(ONLY_REQUIRED)}, "done")
        await Agent(client=client, tools=[tool(post)]).run("go", session=AgentSession())

    async def from_code():
        provider = CodeActProvider(tools=[tool(post) if as_given == "decorated" else post])
        try:
            await Agent(client=ScriptedClient(code(CODE), "done"),
                        context_providers=[provider]).run("go", session=AgentSession())
        finally:
            provider.close()

    await asame_as_direct(direct, from_code)


@pytest.mark.parametrize("provided", [True, False])
async def test_a_rejected_code_call_never_runs_a_tool_that_requires_approval(provided):
    """`approval_mode="always_require"` on the tool, as a user sets it, and nothing else: the
    code call waits for the user, who says no; the tool never runs (nor did it before)."""
    client = ScriptedClient(code("print(cancel(order_id=7))"), "done")
    holder: Any = CodeActProvider(tools=[cancel]) if provided else ExecuteCodeTool(tools=[cancel])
    agent = Agent(client=client, **({"context_providers": [holder]} if provided else
                                    {"tools": [holder]}))
    session = AgentSession()
    REFUNDED.clear()
    try:
        paused = await agent.run("cancel order 7", session=session)
        (request,) = paused.user_input_requests
        assert request.function_call.name == "execute_code" and REFUNDED == []
        answer = request.to_function_approval_response(approved=False)
        await agent.run(Message(role="user", contents=[answer]), session=session)
    finally:
        holder.close()
    assert REFUNDED == []


async def test_what_the_code_prints_goes_to_on_output_as_it_runs():
    """The framework has no update a running tool can add to a streamed run: the chunks go
    to the application's `on_output`, before the tool's result."""
    chunks: list[Any] = []
    provider = CodeActProvider(tools=[list_orders], limits=Limits(timeout_s=20),
                               on_output=chunks.append)
    client = ScriptedClient(code("for i in range(100):\n    print(f'row {i}')"), "done")
    try:
        result = await Agent(client=client, context_providers=[provider]).run(
            "go", session=AgentSession())
    finally:
        provider.close()
    assert result.text == "done"
    assert "".join(c.text for c in chunks) == "".join(f"row {i}\n" for i in range(100))
    assert len({c.call_id for c in chunks}) == 1


async def test_a_cancelled_run_stops_its_cell_and_the_next_run_sees_the_state_before(codeact):
    client = ScriptedClient(code(SET), "ok", code(LOOP), code(READ), "ok")
    agent = Agent(client=client, context_providers=[codeact])
    session = AgentSession()
    await agent.run("set", session=session)
    before = leftovers()
    await cancel_when_running(codeact.code_tool, agent.run("loop", session=session))
    await agent.run("read", session=session)
    read = client.last_result_text()
    assert CAME_BACK in read and read.endswith("\n41"), read
    await asyncio.to_thread(nothing_left, before)
