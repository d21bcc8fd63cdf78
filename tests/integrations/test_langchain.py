"""LangChain adapter: `create_agent` and LangGraph's `ToolNode` with LangChain's own fake chat
model, real tools, callbacks and thread ids."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import pytest
from _cancels import (
    CAME_BACK,
    LOOP,
    READ,
    SET,
    cancel_when_running,
    leftovers,
    nothing_left,
    running,
)
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, BaseToolkit, ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import NodeTimeoutError
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import RunControl
from pydantic import Field
from tooliscode import Limits
from tooliscode.integrations.langchain import CodeModeTool, as_langchain_tool

ORDERS = [{"id": i, "customer": f"c{i % 4}", "total": (i * 37) % 250,
           "status": ("open", "paid")[i % 2]} for i in range(40)]


@tool
def list_orders(status: str) -> list[dict]:
    """All orders with one status."""
    return [o for o in ORDERS if o["status"] == status]


@tool
async def get_customer(customer_id: str) -> dict:
    """One customer's record."""
    await asyncio.sleep(0.01)
    return {"id": customer_id, "name": f"Customer {customer_id}",
            "tier": "gold" if customer_id in ("c1", "c3") else "basic"}


@tool
def refund(order_id: int) -> str:
    """Refund one order."""
    if order_id < 0:
        raise ToolException(f"order {order_id} does not exist")
    return f"refunded {order_id}"


PROGRAM = """\
import asyncio
orders = await list_orders(status="paid")
big = [o for o in orders if o["total"] > 100]
ids = sorted({o["customer"] for o in big})
customers = await asyncio.gather(*(get_customer(customer_id=c) for c in ids))
gold = [c["name"] for c in customers if c["tier"] == "gold"]
print(len(big), sum(o["total"] for o in big), gold)
"""


BIG = [o for o in ORDERS if o["status"] == "paid" and o["total"] > 100]


def expected_output() -> str:
    big = BIG
    gold = sorted({f"Customer {o['customer']}" for o in big if o["customer"] in ("c1", "c3")})
    return f"{len(big)} {sum(o['total'] for o in big)} {gold}"


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, plus the `bind_tools` that `create_agent` needs."""

    bound: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        self.bound = list(tools)
        return self


def code_call(code: str, call_id: str | None = None) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "run_python", "args": {"code": code},
                                              "id": call_id or f"call_{uuid.uuid4().hex[:8]}"}])


class Recorder(BaseCallbackHandler):
    """Tool runs as the callbacks see them: (name, run_id, parent_run_id, outcome)."""

    def __init__(self) -> None:
        self.runs: dict[uuid.UUID, dict[str, Any]] = {}

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, *, run_id: uuid.UUID,
                      parent_run_id: uuid.UUID | None = None, **kwargs: Any) -> None:
        self.runs[run_id] = {"name": serialized["name"], "parent": parent_run_id,
                             "input": input_str}

    def on_tool_end(self, output: Any, *, run_id: uuid.UUID, **kwargs: Any) -> None:
        self.runs[run_id]["output"] = output

    def on_tool_error(self, error: BaseException, *, run_id: uuid.UUID, **kwargs: Any) -> None:
        self.runs[run_id]["error"] = str(error)

    def named(self, name: str) -> list[dict[str, Any]]:
        return [{"id": k, **v} for k, v in self.runs.items() if v["name"] == name]


@pytest.fixture
def code_tool():
    code = as_langchain_tool([list_orders, get_customer, refund], limits=Limits(timeout_s=30))
    yield code
    code.close()


def check_program_run(messages: list[Any], recorder: Recorder) -> None:
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert tool_messages[0].content == expected_output()
    assert tool_messages[0].status == "success"
    assert messages[-1].content == "Two gold customers."
    (outer,) = recorder.named("run_python")
    inner = recorder.named("list_orders") + recorder.named("get_customer")
    assert [r["name"] for r in inner].count("get_customer") == len({o["customer"] for o in BIG}) > 1
    assert all(r["parent"] == outer["id"] for r in inner), "inner calls are child runs"
    assert all("output" in r for r in inner)


def test_create_agent_sync(code_tool: CodeModeTool) -> None:
    model = ScriptedChatModel(messages=iter([code_call(PROGRAM), AIMessage("Two gold customers.")]))
    agent = create_agent(model, tools=[code_tool])
    recorder = Recorder()
    out = agent.invoke({"messages": [("user", "Which gold customers have big paid orders?")]},
                       {"callbacks": [recorder]})
    assert [t.name for t in model.bound] == ["run_python"]
    check_program_run(out["messages"], recorder)


async def test_create_agent_async(code_tool: CodeModeTool) -> None:
    model = ScriptedChatModel(messages=iter([code_call(PROGRAM), AIMessage("Two gold customers.")]))
    agent = create_agent(model, tools=[code_tool])
    recorder = Recorder()
    out = await agent.ainvoke({"messages": [("user", "Which gold customers?")]},
                              {"callbacks": [recorder]})
    check_program_run(out["messages"], recorder)


def test_description_carries_the_catalog(code_tool: CodeModeTool) -> None:
    for name in ("list_orders", "get_customer", "refund"):
        assert f"def {name}(" in code_tool.description
    assert code_tool.instructions == code_tool.description
    short = as_langchain_tool([refund], instructions="prompt")
    assert "def refund(" not in short.description and "def refund(" in short.instructions
    short.close()


def test_tool_exception_reaches_the_code_and_the_model(code_tool: CodeModeTool) -> None:
    caught = ("try:\n    refund(order_id=-1)\nexcept ToolError as e:\n    print('caught:', e)\n"
              "print(refund(order_id=7))")
    model = ScriptedChatModel(messages=iter([
        code_call(caught), code_call("refund(order_id=-5)"), AIMessage("ok")]))
    recorder = Recorder()
    out = create_agent(model, tools=[code_tool]).invoke(
        {"messages": [("user", "refund")]}, {"callbacks": [recorder]})
    first, second = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert first.content == "caught: order -1 does not exist\nrefunded 7"
    assert first.status == "success"
    assert second.status == "error"
    assert "ToolError: order -5 does not exist" in second.content
    errors = [r for r in recorder.named("refund") if "error" in r]
    assert [r["error"] for r in errors] == ["order -1 does not exist", "order -5 does not exist"]


def test_thread_id_keys_the_interpreter(code_tool: CodeModeTool) -> None:
    def run(code: str, thread: str) -> ToolMessage:
        model = ScriptedChatModel(messages=iter([code_call(code), AIMessage("ok")]))
        out = create_agent(model, tools=[code_tool]).invoke(
            {"messages": [("user", "go")]}, {"configurable": {"thread_id": thread}})
        return [m for m in out["messages"] if isinstance(m, ToolMessage)][-1]

    assert run("x = 41", "a").status == "success"
    assert run("print(x + 1)", "a").content == "42"
    other = run("print(x)", "b")
    assert other.status == "error" and "NameError" in other.content
    assert set(code_tool.live()) == {"a", "b"}
    assert code_tool.drop("a")
    assert "NameError" in run("print(x)", "a").content


def tool_node_graph(code_tool: CodeModeTool) -> Any:
    """A LangGraph graph that is only a `ToolNode`, with a checkpointer keyed by thread_id."""
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([code_tool]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile(checkpointer=InMemorySaver())


def test_tool_node_with_thread_ids(code_tool: CodeModeTool) -> None:
    app = tool_node_graph(code_tool)

    def call(code: str, thread: str) -> ToolMessage:
        out = app.invoke({"messages": [code_call(code, "call_1")]},
                         {"configurable": {"thread_id": thread}})
        return out["messages"][-1]

    first = call("rows = list_orders(status='open')\nlen(rows)", "t1")
    assert first.content == "[value] 20" and first.tool_call_id == "call_1"
    assert call("print(max(r['total'] for r in rows))", "t1").content == str(
        max(o["total"] for o in ORDERS if o["status"] == "open"))
    failed = call("print(rows)", "t2")
    assert failed.status == "error" and "NameError" in failed.content


async def test_tool_node_async_gather(code_tool: CodeModeTool) -> None:
    app = tool_node_graph(code_tool)
    code = ("import asyncio\nnames = await asyncio.gather(*(get_customer(customer_id=f'c{i}') "
            "for i in range(4)))\nprint([n['tier'] for n in names])")
    out = await app.ainvoke({"messages": [code_call(code)]},
                            {"configurable": {"thread_id": "async"}})
    assert out["messages"][-1].content == "['basic', 'gold', 'basic', 'gold']"


class _Toolkit(BaseToolkit):
    def get_tools(self) -> list[BaseTool]:
        return [refund]


def test_callables_and_toolkits() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    async def twice(x: int) -> int:
        """Double a number."""
        return 2 * x

    code = as_langchain_tool([add, twice, _Toolkit()])
    try:
        assert [t.name for t in code.tools] == ["add", "twice", "refund"]
        assert code.invoke({"code": "print(add(a=1, b=2), twice(x=4), refund(order_id=3))"}) \
            == "3 8 refunded 3"
        toolkit_only = as_langchain_tool(_Toolkit())
        assert [t.name for t in toolkit_only.tools] == ["refund"]
        toolkit_only.close()
    finally:
        code.close()
    with pytest.raises(TypeError):
        as_langchain_tool([42])


@pytest.mark.parametrize("as_given", ["decorated", "callable"])
def test_defaults_are_the_frameworks_when_code_gives_only_what_is_required(as_given) -> None:
    from _defaults import CODE, ONLY_REQUIRED, post, same_as_direct
    from langchain_core.tools import StructuredTool
    from langchain_core.tools import tool as lc_tool

    given = lc_tool(post) if as_given == "decorated" else post
    direct = given if as_given == "decorated" else StructuredTool.from_function(post)
    code = as_langchain_tool([given])
    try:
        same_as_direct(lambda: direct.invoke(ONLY_REQUIRED),
                       lambda: code.invoke({"code": CODE}))
    finally:
        code.close()


STREAMED = "for i in range(300):\n    print(f'row {i}')\nprint('done')"
STREAMED_TEXT = "".join(f"row {i}\n" for i in range(300)) + "done\n"


def test_langgraph_custom_stream_carries_what_the_code_prints(code_tool: CodeModeTool) -> None:
    model = ScriptedChatModel(messages=iter([code_call(STREAMED, "call_7"), AIMessage("ok")]))
    agent = create_agent(model, tools=[code_tool])
    chunks = [c for c in agent.stream({"messages": [("user", "go")]}, stream_mode="custom")
              if isinstance(c, dict) and c.get("type") == "tooliscode.output"]
    assert chunks and {c["call_id"] for c in chunks} == {"call_7"}
    assert "".join(c["text"] for c in chunks) == STREAMED_TEXT
    assert {c["stream"] for c in chunks} == {"stdout"}


async def test_langgraph_custom_stream_async_with_the_other_modes(code_tool: CodeModeTool) -> None:
    model = ScriptedChatModel(messages=iter([code_call(STREAMED, "call_8"), AIMessage("ok")]))
    agent = create_agent(model, tools=[code_tool])
    seen: list[tuple[str, Any]] = []
    async for mode, chunk in agent.astream({"messages": [("user", "go")]},
                                           stream_mode=["updates", "custom"]):
        seen.append((mode, chunk))
    custom = [c for m, c in seen if m == "custom"]
    assert "".join(c["text"] for c in custom) == STREAMED_TEXT
    assert {c["call_id"] for c in custom} == {"call_8"}
    # the chunks come before the tool's message does
    first_tool_update = next(i for i, (m, c) in enumerate(seen) if m == "updates" and "tools" in c)
    assert all(i < first_tool_update for i, (m, _) in enumerate(seen) if m == "custom")


PRINTS_THEN_LOOPS = "x = 42\nprint('started', flush=True)\nwhile True:\n    pass"


@pytest.fixture(scope="module")
def stoppable():
    """A code tool in a graph that is only a `ToolNode` (the code runs until it is stopped),
    and the same node under a 1 s node timeout."""
    code = as_langchain_tool([], limits=Limits(timeout_s=60))
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([code]), timeout=1)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    yield code, tool_node_graph(code), graph.compile(checkpointer=InMemorySaver())
    code.close()


def _thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def _last(out: dict[str, Any]) -> str:
    return out["messages"][-1].content


async def _stop_async(how: str, code: CodeModeTool, app: Any, timed: Any, thread: str) -> None:
    given = {"messages": [code_call(PRINTS_THEN_LOOPS)]}
    if how == "task cancelled":
        await cancel_when_running(code.code_tool, app.ainvoke(given, _thread(thread)))
    elif how == "stream closed":
        stream = app.astream(given, _thread(thread), stream_mode="custom")
        async for chunk in stream:
            assert chunk["text"] == "started\n"  # the cell runs: stop reading
            break
        await stream.aclose()
    else:  # LangGraph's own node timeout
        with pytest.raises(NodeTimeoutError):
            await timed.ainvoke(given, _thread(thread))
    assert running(code.code_tool) is None


@pytest.mark.parametrize("how", ["task cancelled", "stream closed", "node timeout"])
async def test_an_async_run_stopped_stops_its_cell_and_the_next_sees_the_state_before(
        stoppable, how):
    code, app, timed = stoppable
    thread = f"async-{how}"
    await app.ainvoke({"messages": [code_call(SET)]}, _thread(thread))
    before = leftovers()
    await _stop_async(how, code, app, timed, thread)
    read = _last(await app.ainvoke({"messages": [code_call(READ)]}, _thread(thread)))
    assert CAME_BACK in read and read.endswith("\n41"), read
    await asyncio.to_thread(nothing_left, before)


def test_a_sync_stream_closed_after_a_drain_request_stops_its_cell(stoppable):
    """Closing a sync stream cannot reach a running tool (LangGraph waits for the step's
    threads): a drain request (`RunControl`) does, and the stream then closes at once."""
    code, app, _ = stoppable
    app.invoke({"messages": [code_call(SET)]}, _thread("sync-stream"))
    before = leftovers()
    control = RunControl()
    stream = app.stream({"messages": [code_call(PRINTS_THEN_LOOPS)]}, _thread("sync-stream"),
                        stream_mode="custom", control=control)
    for chunk in stream:
        assert chunk["text"] == "started\n"
        control.request_drain("the user left")
        break
    stream.close()
    assert running(code.code_tool) is None
    stopped = app.get_state(_thread("sync-stream")).values["messages"][-1]
    assert stopped.status == "error" and "CancelledError" in stopped.content
    assert "(the graph run was asked to drain: the user left)" in stopped.content
    assert _last(app.invoke({"messages": [code_call(READ)]}, _thread("sync-stream"))) == "41"
    nothing_left(before)


def test_a_drain_requested_from_another_thread_stops_a_sync_runs_cell(stoppable):
    code, app, _ = stoppable
    app.invoke({"messages": [code_call(SET)]}, _thread("sync-drain"))
    control = RunControl()

    def drain() -> None:
        while running(code.code_tool) is None:
            time.sleep(0.005)
        control.request_drain()

    threading.Thread(target=drain, daemon=True).start()
    stopped = _last(app.invoke({"messages": [code_call(LOOP)]}, _thread("sync-drain"),
                               control=control))
    assert "(the graph run was asked to drain: shutdown)" in stopped
    assert _last(app.invoke({"messages": [code_call(READ)]}, _thread("sync-drain"))) == "41"
