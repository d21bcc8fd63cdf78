"""CodeModeToolset in the Agents SDK's real Runner, with the SDK's own scripted model."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import pytest

agents = pytest.importorskip("agents")

from _cancels import CAME_BACK, LOOP, READ, SET, cancel_when_running, leftovers, nothing_left
from agents import Agent, RunConfig, RunContextWrapper, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext
from agents.tracing import TracingProcessor, set_trace_processors
from tooliscode import Limits
from tooliscode.integrations.openai_agents import CodeModeToolset


@dataclass
class Shop:
    user: str
    seen: list


ORDERS = [{"id": i, "customer": f"c{i % 4}", "total": float(i * 10),
           "status": ("open", "paid")[i % 2]}
          for i in range(1, 41)]


@function_tool
def list_orders(wrapper: RunContextWrapper[Shop], status: str) -> list[dict]:
    """Every order with one status."""
    wrapper.context.seen.append(("list_orders", status))
    return [o for o in ORDERS if o["status"] == status]


@function_tool
async def get_customer(ctx: ToolContext[Shop], customer_id: str) -> dict:
    """One customer's record."""
    await asyncio.sleep(0.3)
    ctx.context.seen.append(("get_customer", ctx.tool_name, ctx.tool_call_id, ctx.agent.name))
    return {"id": customer_id, "name": f"Customer {customer_id[1:]}", "asked_by": ctx.context.user}


@function_tool
def broken(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"broken because {reason}")


@function_tool(timeout=0.2)
async def sluggish() -> str:
    """Takes far longer than its timeout."""
    await asyncio.sleep(10)
    return "never"


@function_tool(needs_approval=True)
def refund(order_id: int) -> str:
    """Refund an order (needs a person's approval)."""
    return f"refunded {order_id}"


PROGRAM = """\
import asyncio
paid = await list_orders(status="paid")
big = [o for o in paid if o["total"] >= 200]
totals = {}
for o in big:
    totals[o["customer"]] = totals.get(o["customer"], 0) + o["total"]
people = await asyncio.gather(*[get_customer(customer_id=c) for c in sorted(totals)])
for p in people:
    print(p["name"], totals[p["id"]], p["asked_by"])
"""


class Spans(TracingProcessor):
    """Keeps the spans of the test's runs in memory."""

    def __init__(self):
        self.ended = []

    def on_trace_start(self, trace): pass
    def on_trace_end(self, trace): pass
    def on_span_start(self, span): pass
    def shutdown(self): pass
    def force_flush(self): pass

    def on_span_end(self, span):
        self.ended.append(span)

    def functions(self):
        return [s for s in self.ended if s.span_data.type == "function"]


@pytest.fixture
def spans():
    collector = Spans()
    set_trace_processors([collector])
    yield collector
    set_trace_processors([])


def _echo_last_output(call):
    """A model step that answers with what the last tool call returned."""
    outputs = [i for i in call.input
               if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return [assistant_message(str(outputs[-1]["output"]))]


def _agent(code: CodeModeToolset, *steps) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(list(steps))
    return Agent(name="clerk", instructions=code.instructions("Answer briefly."),
                 tools=[code.tool], model=model), model


def _code_call(code: str, call_id: str = "call_1"):
    return [function_call("run_python", {"code": code}, call_id=call_id)]


async def test_a_program_loops_filters_and_gathers_over_the_tools(spans):
    shop = Shop("ann", [])
    with CodeModeToolset([list_orders, get_customer, broken]) as code:
        agent, model = _agent(code, _code_call(PROGRAM), ModelStep.respond(_echo_last_output))
        result = await Runner.run(agent, "Who paid most?", context=shop)

    assert result.final_output.splitlines() == [
        "Customer 1 1450.0 ann", "Customer 3 1550.0 ann"]
    # the model saw one tool and the catalog in its instructions
    first = model.first_call
    assert [t.name for t in first.tools] == ["run_python"]
    assert "def list_orders(status: str)" in first.system_instructions
    assert first.system_instructions.startswith("Answer briefly.")
    # the inner calls got proper contexts: the run's context object, names, nested call ids
    assert shop.seen[0] == ("list_orders", "paid")
    assert sorted(s[1:] for s in shop.seen[1:]) == [
        ("get_customer", "call_1:2", "clerk"), ("get_customer", "call_1:3", "clerk")]
    # and appear as function spans nested under the code tool's span
    functions = spans.functions()
    outer = [s for s in functions if s.span_data.name == "run_python"]
    inner = [s for s in functions if s.span_data.name != "run_python"]
    assert len(outer) == 1
    assert sorted(s.span_data.name for s in inner) == ["get_customer", "get_customer",
                                                       "list_orders"]
    assert {s.parent_id for s in inner} == {outer[0].span_id}
    assert json.loads(inner[0].span_data.input) in ({"status": "paid"}, {"customer_id": "c1"},
                                                    {"customer_id": "c3"})


async def test_failures_raise_tool_error_in_the_code_and_never_fail_the_run(spans):
    program = ("for call in (lambda: broken(reason='rust'), sluggish):\n"
               "    try:\n        call()\n    except ToolError as e:\n        print('!', e)")
    with CodeModeToolset([broken, sluggish]) as code:
        agent, model = _agent(code, _code_call(program), _code_call("1/0", "call_2"),
                              [function_call("run_python", "not json", call_id="call_3")],
                              ModelStep.respond(_echo_last_output))
        result = await Runner.run(agent, "go")

    outputs = [i["output"] for i in model.last_call.input
               if i.get("type") == "function_call_output"]
    lines = outputs[0].splitlines()
    assert lines[0] == "! ValueError: broken because rust"
    assert "sluggish" in lines[1] and "timed out" in lines[1]
    assert "ZeroDivisionError" in outputs[1]
    assert outputs[2].startswith("[error]")
    assert result.final_output == outputs[2]
    failed = {s.span_data.name: s.error for s in spans.functions()
              if s.span_data.name != "run_python"}
    assert set(failed) == {"broken", "sluggish"}
    assert all(error is not None for error in failed.values())


async def test_an_approval_callback_decides():
    asked = []

    async def approve(ctx: ToolContext, name: str, arguments: dict) -> bool:
        asked.append((name, arguments, ctx.tool_name))
        return arguments["order_id"] != 13

    program = ("print(refund(order_id=7))\ntry:\n    refund(order_id=13)\n"
               "except ToolError as e:\n    print(e)")
    with CodeModeToolset([refund], approve=approve) as code:
        agent, _ = _agent(code, _code_call(program), ModelStep.respond(_echo_last_output))
        result = await Runner.run(agent, "refund")
    assert result.final_output.splitlines() == ["refunded 7", "refund: the call was not approved"]
    assert asked == [("refund", {"order_id": 7}, "refund"), ("refund", {"order_id": 13}, "refund")]


async def test_state_lives_for_one_run_unless_bound_to_a_conversation():
    def script():
        return [_code_call("x = 41"), [assistant_message("set")],
                _code_call("print(x + 1)", "call_2"), ModelStep.respond(_echo_last_output)]

    with CodeModeToolset([list_orders]) as per_run:
        agent, _ = _agent(per_run, *script())
        await Runner.run(agent, "set x", context=Shop("a", []))
        second = await Runner.run(agent, "read x", context=Shop("a", []))
        assert "NameError" in second.final_output

    with CodeModeToolset([list_orders], conversation=lambda ctx: ctx.context.user) as chats:
        agent, _ = _agent(chats, *script(), _code_call("x = 1"), [assistant_message("set")])
        await Runner.run(agent, "set x", context=Shop("bob", []))
        second = await Runner.run(agent, "read x", context=Shop("bob", []))
        assert second.final_output == "42"
        await Runner.run(agent, "another conversation", context=Shop("eve", []))
        assert len(chats.code_tool.keys) == 2


async def test_mcp_servers_of_the_sdk(spans):
    import sys

    from agents.mcp import MCPServerStdio
    from mcp_servers import INVENTORY

    program = ("items = inventory.list_items(category='garden')\n"
               "cheap = [i['name'] for i in items if i['price'] < 5]\n"
               "print(cheap, inventory.add(a=2, b=2), inventory.describe(sku='A1'))\n"
               "try:\n    inventory.get_item(sku='A1')\nexcept ToolError as e:\n    print(e)")
    params = {"command": sys.executable, "args": [INVENTORY]}
    async with MCPServerStdio(params, require_approval={"get_item": "always"},
                              client_session_timeout_seconds=60) as server:
        with CodeModeToolset([], mcp_servers=[server]) as code:
            agent, model = _agent(code, _code_call(program), ModelStep.respond(_echo_last_output))
            paused = await Runner.run(agent, "cheap garden things?")
            # the server's require_approval pauses the inner call, named as a direct one
            [item] = paused.interruptions
            assert (item.tool_name, json.loads(item.arguments)) == ("get_item", {"sku": "A1"})
            state = paused.to_state()
            state.reject(item, rejection_message="not without asking the owner")
            result = await Runner.run(agent, state)
    lines = result.final_output.splitlines()
    assert lines[0] == "['dahlia seeds'] 4 anvil costs 120.00 and 3 are left"
    assert lines[1] == "not without asking the owner"
    assert "def list_items(category" in model.first_call.system_instructions
    inner = [s for s in spans.functions() if s.span_data.name.startswith("inventory.")]
    assert {s.span_data.mcp_data["server"] for s in inner} == {server.name}
    assert len(inner) == 4


async def test_sensitive_data_stays_out_of_traces_when_asked(spans):
    with CodeModeToolset([list_orders]) as code:
        agent, _ = _agent(code, _code_call("len(list_orders(status='open'))"),
                          ModelStep.respond(_echo_last_output))
        result = await Runner.run(agent, "count", context=Shop("a", []),
                                  run_config=RunConfig(trace_include_sensitive_data=False))
    assert "20" in result.final_output
    inner = [s for s in spans.functions() if s.span_data.name == "list_orders"]
    assert inner[0].span_data.input is None and inner[0].span_data.output is None


def test_only_function_tools_can_be_wrapped():
    from agents import WebSearchTool

    with pytest.raises(TypeError, match="function tools only"):
        CodeModeToolset([WebSearchTool()])


async def test_streamable_http_server_of_the_sdk_beside_our_own_mcp_server(spans):
    import sys

    from agents.mcp import MCPServerStreamableHttp
    from mcp_servers import INVENTORY, inventory_over_http
    from tooliscode import MCPServer

    program = ("import asyncio\n"
               "a, b = await asyncio.gather(inventory.add(a=1, b=2), shop.add(a=3, b=4))\n"
               "print(a + b, (await shop.get_item(sku='C3'))['qty'])")
    with inventory_over_http() as url:
        async with MCPServerStreamableHttp({"url": url},
                                           client_session_timeout_seconds=60) as remote, \
                MCPServer.stdio(sys.executable, [INVENTORY], name="shop") as local:
            with CodeModeToolset(mcp_servers=[remote, local]) as code:
                agent, _ = _agent(code, _code_call(program), ModelStep.respond(_echo_last_output))
                result = await Runner.run(agent, "add")
    assert result.final_output == "10 0"
    servers = {s.span_data.name: s.span_data.mcp_data["server"] for s in spans.functions()
               if s.span_data.name != "run_python"}
    assert servers == {"inventory.add": remote.name, "shop.add": "shop", "shop.get_item": "shop"}


async def test_final_answer_ends_the_run_when_the_agent_lets_it():
    with CodeModeToolset([list_orders]) as code:
        model = ScriptedModel([_code_call("n = len(list_orders(status='paid'))\n"
                                          "final_answer(f'{n} orders are paid')")])
        agent = Agent(name="clerk", instructions=code.instructions(), tools=[code.tool],
                      model=model, tool_use_behavior=code.tool_use_behavior)
        result = await Runner.run(agent, "how many?", context=Shop("a", []))
    assert result.final_output == "20 orders are paid"
    assert model.remaining_steps == 0 and len(model.calls) == 1


@function_tool
def post_tweet(content: str, tags: list[str] = [], reply_to: int | None = None,  # noqa: B006
               lang: str | None = "en") -> dict:
    """Post a tweet."""
    return {"content": content, "tags": tags, "reply_to": reply_to, "lang": lang}


async def test_a_strict_tool_needs_from_code_only_what_the_sdk_needs():
    """The SDK's strict schema lists every parameter as required; the SDK itself still takes
    a call without the defaulted ones, and fills them in. So does a call from code."""
    assert post_tweet.strict_json_schema and "tags" in post_tweet.params_json_schema["required"]
    direct = await post_tweet.on_invoke_tool(
        ToolContext(context=None, tool_name="post_tweet", tool_call_id="c",
                    tool_arguments='{"content": "hi"}'), '{"content": "hi"}')
    with CodeModeToolset([post_tweet]) as code:
        agent, model = _agent(code, _code_call("import json\n"
                                               "print(json.dumps(post_tweet(content='hi')))"),
                              ModelStep.respond(_echo_last_output))
        result = await Runner.run(agent, "go")
    assert json.loads(result.final_output) == direct == {
        "content": "hi", "tags": [], "reply_to": None, "lang": "en"}
    catalog = model.first_call.system_instructions
    assert "post_tweet(content: str, tags: list[str] = [], reply_to: int | None = None, " \
           "lang: str | None = 'en')" in catalog, catalog


@pytest.mark.parametrize("as_given", ["decorated", "callable"])
async def test_defaults_are_the_frameworks_when_code_gives_only_what_is_required(as_given):
    from _defaults import CODE, ONLY_REQUIRED, asame_as_direct, post

    sdk_tool = function_tool(post)  # strict, as the SDK makes it by default
    arguments = json.dumps(ONLY_REQUIRED)

    async def direct():
        await sdk_tool.on_invoke_tool(ToolContext(context=None, tool_name="post",
                                                  tool_call_id="c", tool_arguments=arguments),
                                      arguments)

    async def from_code():
        with CodeModeToolset([sdk_tool if as_given == "decorated" else post]) as code:
            agent, _ = _agent(code, _code_call(CODE), ModelStep.respond(_echo_last_output))
            await Runner.run(agent, "go")

    await asame_as_direct(direct, from_code)


async def test_a_streamed_run_gives_on_output_what_the_code_prints():
    """The SDK has no stream event a tool can add: the chunks go to `on_output`, named by
    the model's call id, while the streamed run goes on."""
    chunks = []
    with CodeModeToolset([list_orders], on_output=chunks.append) as code:
        model = ScriptedModel([_code_call("for i in range(200):\n    print(f'row {i}')"),
                               [assistant_message("done")]])
        agent = Agent(name="clerk", instructions=code.instructions(), tools=[code.tool],
                      model=model)
        result = Runner.run_streamed(agent, "go", context=Shop("a", []))
        kinds = [event.type async for event in result.stream_events()]
    assert "run_item_stream_event" in kinds and result.final_output == "done"
    assert "".join(c.text for c in chunks) == "".join(f"row {i}\n" for i in range(200))
    call_ids = {i.raw_item.call_id for i in result.new_items if i.type == "tool_call_item"}
    assert {c.call_id for c in chunks} == call_ids and len(call_ids) == 1


@function_tool
async def slow(seconds: float) -> str:
    """Waits on the host."""
    await asyncio.sleep(seconds)
    return "slept"


def _outputs(result) -> list[str]:
    return [i.output for i in result.new_items if i.type == "tool_call_output_item"]


async def test_a_cancelled_run_stops_its_cell_and_the_next_run_sees_the_state_before():
    with CodeModeToolset([slow], conversation="chat", limits=Limits(timeout_s=60)) as code:
        def agent(code_text: str) -> Agent:
            return _agent(code, _code_call(code_text), [assistant_message("ok")])[0]

        await Runner.run(agent(SET), "go", context=Shop("a", []))
        before = leftovers()
        await cancel_when_running(code.code_tool, Runner.run(agent(LOOP), "go",
                                                             context=Shop("a", [])))
        (read,) = _outputs(await Runner.run(agent(READ), "go", context=Shop("a", [])))
        assert CAME_BACK in read and read.endswith("\n41"), read
        await asyncio.to_thread(nothing_left, before)


async def test_the_code_tools_timeout_is_the_sdks_and_stops_the_cell():
    """The SDK enforces `timeout` on the code tool's call as a whole (each inner call is well
    within it): the cell stops, the model reads why, and the next call sees the state before."""
    with CodeModeToolset([slow], conversation="timed", timeout=1,
                         limits=Limits(timeout_s=60)) as code:
        assert code.tool.timeout_seconds == 1
        agent, _ = _agent(code, _code_call(SET, "c1"), [assistant_message("ok")], _code_call(
            "x = 42\nfor i in range(100):\n    await slow(seconds=0.2)", "c2"),
            _code_call(READ, "c3"), [assistant_message("ok")])
        await Runner.run(agent, "go", context=Shop("a", []))
        before = leftovers()
        stopped, read = _outputs(await Runner.run(agent, "go", context=Shop("a", [])))
        assert stopped.startswith("[error] The code timed out after 1 s, the tool's time limit")
        assert "back to its state before that code" in stopped
        assert CAME_BACK in read and read.endswith("\n41"), read
        await asyncio.to_thread(nothing_left, before)
    with pytest.raises(ValueError, match="greater than 0"):
        CodeModeToolset([], timeout=0)
