"""PydanticAI adapter: real agent runs scripted with PydanticAI's `FunctionModel`."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import pytest
from _cancels import CAME_BACK, LOOP, READ, SET, cancel_when_running, leftovers, nothing_left
from _pydantic_ai_script import ANSWER, Script, tool_returns
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UserError
from pydantic_ai.mcp import MCPToolset, StdioTransport
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from tooliscode import Limits
from tooliscode.integrations.pydantic_ai import CodeMode, CodeModeToolset

ORDERS = [{"id": i, "customer": f"c{i % 4}", "total": (i * 37) % 250,
           "status": ("open", "paid")[i % 2]} for i in range(40)]
BIG = [o for o in ORDERS if o["status"] == "paid" and o["total"] > 100]


@dataclass
class Deps:
    region: str
    seen: list[str] = field(default_factory=list)


def make_toolset() -> FunctionToolset[Deps]:
    toolset: FunctionToolset[Deps] = FunctionToolset()

    @toolset.tool
    def list_orders(ctx: RunContext[Deps], status: str) -> list[dict]:
        """All orders with one status."""
        ctx.deps.seen.append(f"list_orders:{ctx.tool_name}")
        return [o for o in ORDERS if o["status"] == status]

    @toolset.tool
    async def get_customer(ctx: RunContext[Deps], customer_id: str) -> dict:
        """One customer's record, from the region in the run's deps."""
        await asyncio.sleep(0.01)
        return {"id": customer_id, "region": ctx.deps.region,
                "tier": "gold" if customer_id in ("c1", "c3") else "basic"}

    @toolset.tool_plain
    def refund(order_id: int) -> str:
        """Refund one order."""
        if order_id < 0:
            raise ModelRetry(f"order {order_id} does not exist; order ids are positive")
        return f"refunded {order_id}"

    @toolset.tool_plain
    def weekday(day: date) -> str:
        """The weekday of a date."""
        return day.strftime("%A")

    @toolset.tool_plain(requires_approval=True)
    def delete_everything() -> str:
        """Needs a human's approval."""
        return "deleted"

    return toolset


PROGRAM = """\
import asyncio
orders = await list_orders(status="paid")
big = [o for o in orders if o["total"] > 100]
ids = sorted({o["customer"] for o in big})
customers = await asyncio.gather(*(get_customer(customer_id=c) for c in ids))
gold = [c["id"] for c in customers if c["tier"] == "gold"]
print(len(big), sum(o["total"] for o in big), gold, customers[0]["region"])
"""
EXPECTED = (f"{len(BIG)} {sum(o['total'] for o in BIG)} "
            f"{sorted({o['customer'] for o in BIG} & {'c1', 'c3'})} eu")


async def test_program_through_the_toolset() -> None:
    script = Script(PROGRAM)
    agent = Agent(script.model, deps_type=Deps,
                  toolsets=[CodeModeToolset(make_toolset(), limits=Limits(timeout_s=30))])
    deps = Deps(region="eu")
    result = await agent.run("Which gold customers have big paid orders?", deps=deps)

    assert result.output == f"answer: {EXPECTED}"
    info = script.infos[0]
    assert [t.name for t in info.function_tools] == ["run_python"]
    assert "def list_orders(status: str)" in (info.instructions or "")
    assert "def delete_everything()" in (info.instructions or ""), "gated tools are code too"
    (part,) = tool_returns(result.all_messages())
    assert part.content == EXPECTED and part.outcome == "success"
    calls = part.metadata["tool_calls"]
    customers = len({o["customer"] for o in BIG})
    assert [c["name"] for c in calls] == ["list_orders"] + ["get_customer"] * customers
    assert all(c["ok"] for c in calls)
    assert deps.seen == ["list_orders:list_orders"], "inner tools get a RunContext of their own"
    assert result.usage.tool_calls == 1 + len(calls)
    assert result.usage.requests == 2


async def test_model_retry_from_an_inner_tool() -> None:
    script = Script("print(refund(order_id=-3))", "print(refund(order_id=3))")
    agent = Agent(script.model, deps_type=Deps, toolsets=[CodeModeToolset(make_toolset())])
    result = await agent.run("refund order 3", deps=Deps(region="eu"))

    retried, returned = tool_returns(result.all_messages())
    assert retried.outcome == "retried"
    assert "ToolError: order -3 does not exist; order ids are positive" in retried.content
    assert returned.outcome == "success" and returned.content == "refunded 3"
    assert result.output == "answer: refunded 3"


async def test_caught_model_retry_and_validation_stay_in_the_code() -> None:
    code = ("try:\n    refund(order_id=-1)\nexcept ToolError as e:\n    print('caught:', e)\n"
            "print(weekday(day='2024-01-01'))\n"
            "try:\n    weekday(day='2024-13-45')\nexcept ToolError as e:\n    print('bad:', e)")
    script = Script(code)
    agent = Agent(script.model, deps_type=Deps, toolsets=[CodeModeToolset(make_toolset())])
    result = await agent.run("go", deps=Deps(region="eu"))
    (part,) = tool_returns(result.all_messages())
    caught, monday, bad = part.content.splitlines()
    assert caught == "caught: order -1 does not exist; order ids are positive"
    assert monday == "Monday", "arguments are validated (a str became a date) by the toolset"
    assert bad.startswith("bad: invalid arguments") and "day" in bad
    assert [c["ok"] for c in part.metadata["tool_calls"]] == [False, True, False]


async def test_too_many_failed_cells_end_the_run() -> None:
    script = Script(*["1 / 0"] * 5)
    agent = Agent(script.model, deps_type=Deps,
                  toolsets=[CodeModeToolset(make_toolset(), max_retries=1)])
    with pytest.raises(Exception, match="exceeded max retries"):
        await agent.run("go", deps=Deps(region="eu"))


@dataclass
class SeenCalls(AbstractCapability[Any]):
    """Records the tool calls that reach the capability hooks."""

    names: list[str] = field(default_factory=list)

    async def before_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart,
                                  tool_def: Any, args: Any) -> Any:
        self.names.append(call.tool_name)
        return args


async def test_capability_and_hooks_see_inner_calls() -> None:
    script = Script(PROGRAM)
    seen = SeenCalls()
    agent = Agent(script.model, deps_type=Deps, toolsets=[make_toolset()],
                  capabilities=[seen, CodeMode(callers={"delete_everything": "direct",
                                                        "weekday": "both"})])
    result = await agent.run("go", deps=Deps(region="eu"))
    assert result.output == f"answer: {EXPECTED}"
    info = script.infos[0]
    assert [t.name for t in info.function_tools] == ["weekday", "delete_everything",
                                                     "run_python"]
    assert "delete_everything" not in (info.instructions or "")
    assert "def weekday(day: " in (info.instructions or "")
    customers = len({o["customer"] for o in BIG})
    assert seen.names == ["run_python", "list_orders"] + ["get_customer"] * customers


async def test_state_lives_per_run_by_default() -> None:
    agent = Agent(Script("x = 41", "print(x + 1)", ANSWER, "print(x)").model, deps_type=Deps,
                  toolsets=[CodeModeToolset(make_toolset())])
    first = await agent.run("go", deps=Deps(region="eu"))
    assert first.output == "answer: 42"
    again = await agent.run("go", deps=Deps(region="eu"), message_history=first.all_messages())
    retried = tool_returns(again.new_messages())[0]
    assert retried.outcome == "retried" and "NameError" in retried.content


async def spare_after_run(toolset: CodeModeToolset[Any]) -> Any:
    """The spare a run left for the next one, once started (on another thread; it is offered
    before its start)."""
    assert toolset.code_tool is not None
    for _ in range(500):
        spare = toolset.code_tool.spare
        if spare is not None and spare.session is not None:
            return spare
        await asyncio.sleep(0.01)
    raise AssertionError("no spare after 5 s")


async def test_a_run_without_code_hands_its_interpreter_on_and_one_with_code_does_not() -> None:
    toolset = CodeModeToolset(make_toolset())
    agent = Agent(Script(ANSWER, ANSWER, "x = 41", ANSWER, "print(x)").model, deps_type=Deps,
                  toolsets=[toolset])
    try:
        await agent.run("no code", deps=Deps(region="eu"))
        first = await spare_after_run(toolset)
        await agent.run("no code again", deps=Deps(region="eu"))
        kept = await spare_after_run(toolset)
        assert kept is first and kept.session is not None  # not closed, not restarted
        session = kept.session
        await agent.run("code", deps=Deps(region="eu"))
        after_code = await spare_after_run(toolset)
        if session.runtime.renews:  # renewed in place: the same guest, made new again
            assert after_code is first and after_code.session is session
        else:
            assert after_code is not first
            for _ in range(500):  # the used one is closed (soon after the run's end)
                if first.session is None:
                    break
                await asyncio.sleep(0.01)
            assert first.session is None
            assert after_code.session is not session
        later = await agent.run("code", deps=Deps(region="eu"))
        assert "NameError" in tool_returns(later.new_messages())[0].content
    finally:
        toolset.close()


async def test_conversation_scope_keeps_state_across_runs() -> None:
    script = Script("total = sum(o['total'] for o in list_orders(status='open'))", ANSWER,
                    "print(total)", ANSWER, "print(total)")
    code_mode = CodeMode(scope="conversation")
    agent = Agent(script.model, deps_type=Deps, toolsets=[make_toolset()],
                  capabilities=[code_mode])
    try:
        first = await agent.run("sum", deps=Deps(region="eu"))
        later = await agent.run("again", deps=Deps(region="eu"),
                                message_history=first.all_messages())
        expected = sum(o["total"] for o in ORDERS if o["status"] == "open")
        assert later.output == f"answer: {expected}"
        assert later.conversation_id == first.conversation_id
        fresh = await agent.run("new", deps=Deps(region="eu"))  # another conversation
        assert "NameError" in tool_returns(fresh.new_messages())[0].content
    finally:
        code_mode.close()


async def test_over_an_mcp_server() -> None:
    # a server that starts slowly on a loaded machine is not what this tests: wait for it
    server = MCPToolset(StdioTransport(command=sys.executable,
                                       args=["-m", "mcp_server_time", "--local-timezone", "UTC"]),
                        init_timeout=60)
    code = ("import asyncio\nzones = ['Europe/Paris', 'Asia/Tokyo', 'America/New_York']\n"
            "times = await asyncio.gather(*(get_current_time(timezone=z) for z in zones))\n"
            "print(sorted(t['timezone'] for t in times))\n"
            "print(type(times[0]).__name__, 'datetime' in times[0])")
    script = Script(code)
    agent = Agent(script.model, toolsets=[CodeModeToolset(server)])
    result = await agent.run("what time is it?")
    (part,) = tool_returns(result.all_messages())
    assert part.content == ("['America/New_York', 'Asia/Tokyo', 'Europe/Paris']\n"
                            "dict True"), part.content
    assert [t.name for t in script.infos[0].function_tools] == ["run_python"]
    assert "def get_current_time(timezone: str)" in (script.infos[0].instructions or "")


async def test_tools_that_change_between_steps() -> None:
    """A guest's tools are fixed when it starts: when the wrapped tools change, a new
    interpreter takes over, and the model is told its variables are gone."""
    toolset = make_toolset()
    hidden = {"refund"}
    code_mode = CodeModeToolset(toolset.filtered(lambda ctx, d: d.name not in hidden))

    def hide_weekday(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        hidden.add("weekday")  # takes effect when the next step lists the tools
        return script(messages, info)

    script = Script("x = 1\nprint('refund' in globals(), 'weekday' in globals())", "print(x)")
    agent = Agent(FunctionModel(hide_weekday), deps_type=Deps, toolsets=[code_mode])
    result = await agent.run("go", deps=Deps(region="eu"))
    first, second = tool_returns(result.all_messages())
    assert first.content == "False True"
    assert second.outcome == "retried" and "The tools changed" in second.content
    assert "NameError" in second.content
    assert "weekday" not in (script.infos[-1].instructions or "")


async def test_tools_that_change_between_runs_are_shown_as_they_are_now() -> None:
    """The tools a run declared, and their catalog, serve the next runs while the wrapped
    tools keep their definitions: one added (or changed) between runs is in the next run's
    code and instructions."""
    toolset = make_toolset()
    code_mode = CodeModeToolset(toolset)
    probe = "print('shout' in globals(), refund.__doc__.strip())"
    scripts = [Script(probe) for _ in range(3)]
    for n, script in enumerate(scripts):
        if n == 1:
            @toolset.tool_plain
            def shout(text: str) -> str:
                """Say it loudly."""
                return text.upper()
        if n == 2:
            toolset.tools["refund"].description = "Refund one order, in full."
        agent = Agent(script.model, deps_type=Deps, toolsets=[code_mode])
        (found,) = tool_returns((await agent.run("go", deps=Deps(region="eu"))).all_messages())
        assert found.content == ("False Refund one order.", "True Refund one order.",
                                 "True Refund one order, in full.")[n]
        assert ("shout(" in (script.infos[0].instructions or "")) == (n > 0)


@pytest.mark.parametrize("as_given", ["decorated", "callable"])
async def test_defaults_are_the_frameworks_when_code_gives_only_what_is_required(as_given):
    from _defaults import CODE, ONLY_REQUIRED, asame_as_direct, post

    def toolset() -> FunctionToolset[None]:
        if as_given == "callable":
            return FunctionToolset([post])
        made: FunctionToolset[None] = FunctionToolset()
        made.tool_plain(post)
        return made

    def calls_post(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("post", dict(ONLY_REQUIRED))])
        return ModelResponse(parts=[TextPart("done")])

    async def direct():
        await Agent(FunctionModel(calls_post), toolsets=[toolset()]).run("go")

    async def from_code():
        wrapper = CodeModeToolset(toolset())
        try:
            await Agent(Script(CODE).model, toolsets=[wrapper]).run("go")
        finally:
            wrapper.close()

    await asame_as_direct(direct, from_code)


STREAMED = "for i in range(300):\n    print(f'row {i}')\nimport sys\nprint('warn', file=sys.stderr)"
STREAMED_OUT = "".join(f"row {i}\n" for i in range(300))


@pytest.mark.parametrize("how", ["toolset", "capability"])
async def test_streamed_runs_carry_what_the_code_prints(how) -> None:
    from pydantic_ai import AgentRunResultEvent
    from pydantic_ai.messages import FunctionToolResultEvent
    from tooliscode.integrations.pydantic_ai import CodeOutputEvent

    script = Script(STREAMED)
    if how == "toolset":
        agent = Agent(script.model, deps_type=Deps,
                      toolsets=[CodeModeToolset(make_toolset(), limits=Limits(timeout_s=30))])
    else:
        agent = Agent(script.model, deps_type=Deps, toolsets=[make_toolset()],
                      capabilities=[CodeMode(limits=Limits(timeout_s=30))])
    async with agent.run_stream_events("go", deps=Deps(region="eu")) as stream:
        events = [e async for e in stream]
    chunks = [e for e in events if isinstance(e, CodeOutputEvent)]
    assert "".join(c.text for c in chunks if c.stream == "stdout") == STREAMED_OUT
    assert "".join(c.text for c in chunks if c.stream == "stderr") == "warn\n"
    (code_call,) = {c.tool_call_id for c in chunks}
    (result,) = [e for e in events if isinstance(e, FunctionToolResultEvent)]
    assert result.tool_call_id == code_call and result.part.tool_name == "run_python"
    assert events.index(chunks[-1]) < events.index(result)  # while it ran, not after
    assert isinstance(events[-1], AgentRunResultEvent)


@pytest.fixture(scope="module")
def chat():
    """Code mode keeping one interpreter per conversation, shared by the tests of stops."""
    mode = CodeMode(scope="conversation", limits=Limits(timeout_s=60))
    yield mode
    mode.close()


def slow_toolset() -> FunctionToolset[None]:
    toolset: FunctionToolset[None] = FunctionToolset()

    @toolset.tool_plain
    async def slow(seconds: float) -> str:
        """Waits on the host."""
        await asyncio.sleep(seconds)
        return "slept"

    return toolset


@pytest.mark.parametrize("stopped", [LOOP, "x = 42\nawait slow(seconds=60)"],
                         ids=["loop", "slow tool"])
async def test_a_cancelled_run_stops_its_cell_and_the_next_run_sees_the_state_before(chat, stopped):
    def agent(code: str) -> Agent:
        return Agent(Script(code).model, toolsets=[slow_toolset()], capabilities=[chat])

    conversation = f"cancelled-{len(stopped)}"
    await agent(SET).run("go", conversation_id=conversation)
    before = leftovers()
    await cancel_when_running(chat.code_tool, agent(stopped).run("go",
                                                                conversation_id=conversation))
    result = await agent(READ).run("go", conversation_id=conversation)
    (read,) = tool_returns(result.all_messages())
    assert CAME_BACK in read.content and read.content.endswith("\n41"), read.content
    await asyncio.to_thread(nothing_left, before)


async def test_the_agents_tool_timeout_bounds_the_whole_code_call(chat):
    """pydantic-ai-harness#308: each inner call is within the agent's `tool_timeout`, but the
    code tool's call as a whole is stopped at it, and the model reads so."""
    script = Script(SET, ANSWER, "x = 42\nfor i in range(100):\n    await slow(seconds=0.2)",
                    READ)
    agent = Agent(script.model, toolsets=[slow_toolset()], capabilities=[chat], tool_timeout=1)
    await agent.run("go", conversation_id="timed")
    before = leftovers()
    result = await agent.run("go", conversation_id="timed")
    stopped, read = tool_returns(result.new_messages())
    assert stopped.outcome == "retried"  # as a function tool that timed out
    assert "CancelledError: the cell was cancelled after" in stopped.content
    assert "(PydanticAI's time limit for this tool call, 1 s, ran out)" in stopped.content
    assert "back to its state before this cell" in stopped.content
    assert read.content == "41"
    await asyncio.to_thread(nothing_left, before)


async def test_the_code_tools_own_timeout_is_its_definitions():
    script = Script(SET, LOOP, READ)
    code = CodeModeToolset(slow_toolset(), timeout=0.5, limits=Limits(timeout_s=60))
    result = await Agent(script.model, toolsets=[code]).run("go")
    assert [t.timeout for t in script.infos[0].function_tools] == [0.5]
    _, stopped, read = tool_returns(result.all_messages())
    assert "(PydanticAI's time limit for this tool call, 0.5 s, ran out)" in stopped.content
    assert read.content == "41"
    code.close()
    with pytest.raises(UserError, match="timeout must be > 0"):
        CodeMode(timeout=0)
