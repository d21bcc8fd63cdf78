"""Inner calls under the Agents SDK's own control: a call that needs approval pauses the cell
and ends the run with a `ToolApprovalItem` for it; `state.approve` / `state.reject` and
`Runner.run(agent, state)` continue the cell where it stopped, in this process or another
(over a real Redis). Guardrails and hooks see inner calls. Counters at the tools prove that
nothing runs twice and that a rejected call never runs.

Run as a script (`python tests/integrations/test_openai_agents_approval.py URL STATE_FILE`),
it is the other process: it resumes a run from its serialized state and prints what happened.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    AgentHooks,
    RunHooks,
    Runner,
    RunState,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailTripwireTriggered,
    function_tool,
    set_tracing_disabled,
    tool_input_guardrail,
    tool_output_guardrail,
)
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402
from tooliscode import Limits  # noqa: E402
from tooliscode.integrations.openai_agents import CodeModeToolset  # noqa: E402

if __name__ != "__main__":
    from durable.conftest import redis_url  # noqa: F401 - the fixture

RAN: collections.Counter[str] = collections.Counter()
HERE = Path(__file__).resolve()


@function_tool
def find_late_orders() -> list[dict]:
    """Orders past their due date."""
    RAN["find_late_orders"] += 1
    return [{"id": 1, "customer": "ann"}, {"id": 2, "customer": "bob"}]


@function_tool(needs_approval=True)
def send_email(to: str, body: str) -> str:
    """Send an email; a person approves each one."""
    RAN["send_email"] += 1
    return f"sent to {to}"


@function_tool
def ping(n: int) -> int:
    """An ungated call."""
    RAN["ping"] += 1
    return n


async def _big(ctx, params: dict, call_id: str) -> bool:
    return params.get("amount", 0) > 100


@function_tool(needs_approval=_big)
def refund(order_id: int, amount: int) -> str:
    """Refund an order; a person approves refunds over 100."""
    RAN["refund"] += 1
    return f"refunded {amount} on {order_id}"


@tool_input_guardrail
def no_spam(data) -> ToolGuardrailFunctionOutput:
    text = json.loads(data.context.tool_arguments or "{}").get("text", "")
    if "spam" in text:
        return ToolGuardrailFunctionOutput.reject_content("no spam, please", output_info="spam")
    return ToolGuardrailFunctionOutput.allow(output_info="clean")


@tool_output_guardrail
def checked(data) -> ToolGuardrailFunctionOutput:
    return ToolGuardrailFunctionOutput.allow(output_info=f"checked {data.output}")


@function_tool(tool_input_guardrails=[no_spam], tool_output_guardrails=[checked])
def notify(to: str, text: str) -> str:
    """Send a short note (guarded)."""
    RAN["notify"] += 1
    return f"noted {to}"


@tool_input_guardrail
def no_big_transfers(data) -> ToolGuardrailFunctionOutput:
    amount = json.loads(data.context.tool_arguments or "{}").get("amount", 0)
    if amount > 1000:
        return ToolGuardrailFunctionOutput.raise_exception(output_info="too big")
    return ToolGuardrailFunctionOutput.allow()


@function_tool(tool_input_guardrails=[no_big_transfers])
def transfer(amount: int) -> str:
    """Move money (a tripwire stops big transfers)."""
    RAN["transfer"] += 1
    return f"moved {amount}"


TOOLS = [find_late_orders, send_email, ping, refund, notify, transfer]
ONE_BY_ONE = ("late = find_late_orders()\n"
              "out = []\n"
              "for o in late:\n"
              "    try:\n"
              "        out.append(send_email(to=o['customer'],\n"
              "                              body=f\"order {o['id']} is late\"))\n"
              "    except ToolError as e:\n"
              "        out.append(f'refused: {e}')\n"
              "print(out)")
GATHERED = ("import asyncio\n"
            "late = find_late_orders()\n"
            "sent = await asyncio.gather(*[send_email(to=o['customer'], body='late') "
            "for o in late], return_exceptions=True)\n"
            "print([str(s) for s in sent], n)")


class Seen(RunHooks):
    """Run hooks (and, as `AgentSeen`, agent hooks) that record the tool calls they see."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    async def on_tool_start(self, context, agent, tool) -> None:
        self.events.append(("start", tool.name, context.tool_call_id))

    async def on_tool_end(self, context, agent, tool, result) -> None:
        self.events.append(("end", tool.name, context.tool_call_id))


class AgentSeen(AgentHooks):
    on_tool_start = Seen.on_tool_start
    on_tool_end = Seen.on_tool_end

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []


@pytest.fixture(autouse=True)
def _counters():
    RAN.clear()


@pytest.fixture(scope="module", autouse=True)
def _no_traces():
    set_tracing_disabled(True)  # nothing to export offline
    yield
    set_tracing_disabled(False)


@pytest.fixture(scope="module")
def code():
    with CodeModeToolset(TOOLS, limits=Limits(timeout_s=30)) as toolset:
        yield toolset


def _answer(call) -> list:
    outputs = [i for i in call.input if isinstance(i, dict)
               and i.get("type") == "function_call_output"]
    return [assistant_message(str(outputs[-1]["output"]))]


def _agent(toolset: CodeModeToolset, program: str, call_id: str, resumed: bool = False,
           **options) -> Agent:
    """An agent whose model runs `program` once, then answers with what it read back (only
    answers, for a run `resumed` from its state)."""
    steps = [[function_call("run_python", {"code": program}, call_id=call_id)],
             ModelStep.respond(_answer)]
    model = ScriptedModel(steps[1:] if resumed else steps)
    return Agent(name="support", model=model, tools=toolset.tools, **options)


def _items(result) -> list[tuple[str, dict, str]]:
    return [(i.tool_name, json.loads(i.arguments), i.call_id) for i in result.interruptions]


async def test_gated_calls_one_after_another_pause_one_at_a_time(code):
    agent = _agent(code, ONE_BY_ONE, "seq_1")
    paused = await Runner.run(agent, "email the late customers")
    assert _items(paused) == [("send_email", {"to": "ann", "body": "order 1 is late"}, "seq_1:2")]
    assert paused.interruptions[0].agent.name == "run_python" and RAN == {"find_late_orders": 1}
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    paused = await Runner.run(agent, state)
    assert _items(paused) == [("send_email", {"to": "bob", "body": "order 2 is late"}, "seq_1:3")]
    assert RAN == {"find_late_orders": 1, "send_email": 1}
    # the second decision travels as JSON: the run's interpreter is found by its pause
    state = await RunState.from_json(agent, paused.to_state().to_json())
    state.reject(state.get_interruptions()[0], rejection_message="Bob asked us not to")
    done = await Runner.run(agent, state)
    assert done.final_output == "['sent to ann', 'refused: Bob asked us not to']"
    assert RAN == {"find_late_orders": 1, "send_email": 1}  # the rejected call never ran


async def test_gathered_gated_calls_pause_together(code):
    agent = _agent(code, "n = 7\n" + GATHERED, "gat_1")
    paused = await Runner.run(agent, "email them all at once")
    assert _items(paused) == [("send_email", {"to": "ann", "body": "late"}, "gat_1:2"),
                              ("send_email", {"to": "bob", "body": "late"}, "gat_1:3")]
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    still = await Runner.run(agent, state)  # one undecided: the SDK keeps the run paused
    assert _items(still) == [("send_email", {"to": "bob", "body": "late"}, "gat_1:3")]
    assert RAN == {"find_late_orders": 1}
    state = still.to_state()
    state.reject(still.interruptions[0])
    done = await Runner.run(agent, state)
    assert done.final_output == "['sent to ann', 'Tool execution was not approved.'] 7"
    assert RAN == {"find_late_orders": 1, "send_email": 1}


async def test_a_policy_function_and_always_approve(code):
    program = ("print(refund(order_id=1, amount=20))\n"
               "for i in range(3):\n"
               "    print(refund(order_id=2 + i, amount=500))")
    agent = _agent(code, program, "pol_1")
    paused = await Runner.run(agent, "refund")
    assert _items(paused) == [("refund", {"order_id": 2, "amount": 500}, "pol_1:2")]
    assert RAN == {"refund": 1}  # the small refund needed no approval
    state = paused.to_state()
    state.approve(paused.interruptions[0], always_approve=True)
    done = await Runner.run(agent, state)  # the later big refunds no longer pause
    assert done.final_output.splitlines()[-1] == "refunded 500 on 4"
    assert RAN == {"refund": 4}


async def test_a_hundred_calls_and_one_gated_make_101_calls_in_all(code):
    program = ("total = sum(ping(n=i) for i in range(100))\n"
               "print(total, send_email(to='z', body='b'))")
    agent = _agent(code, program, "hund_1")
    paused = await Runner.run(agent, "go")
    state = paused.to_state()
    state.approve(paused.interruptions[0])
    done = await Runner.run(agent, state)
    assert done.final_output == "4950 sent to z"
    assert RAN == {"ping": 100, "send_email": 1}


async def test_a_new_call_reusing_a_left_pause_id_runs_its_own_code():
    with CodeModeToolset(TOOLS, conversation="reuse") as toolset:
        left = await Runner.run(_agent(toolset, "x = 1\nsend_email(to='a', body='b')",
                                       "same_1"), "go")
        assert left.interruptions  # never answered: the next run starts over
        done = await Runner.run(_agent(toolset, "print(x, ping(n=2))", "same_1"), "again")
        assert done.final_output == "1 2" and RAN == {"ping": 1}


@pytest.mark.parametrize("timeout", [None, 60.0])
async def test_guardrails_and_hooks_see_inner_calls(code, timeout):
    """With or without a timeout on the code tool (the SDK then runs it in another task),
    the run's hooks are found, and the guardrails' results join the run's."""
    program = ("print(notify(to='ann', text='hello'))\n"
               "try:\n    notify(to='bob', text='buy spam')\nexcept ToolError as e:\n"
               "    print('refused:', e)")
    hooks, agent_hooks = Seen(), AgentSeen()
    agent = _agent(code, program, "hook_1", hooks=agent_hooks)
    if timeout is not None:
        agent = agent.clone(tools=[dataclasses.replace(code.tool, timeout_seconds=timeout)])
    result = await Runner.run(agent, "notify", hooks=hooks)
    assert result.final_output == "noted ann\nrefused: no spam, please"
    assert RAN == {"notify": 1}  # the rejected call never ran
    expected = [("start", "run_python", "hook_1"), ("start", "notify", "hook_1:1"),
                ("end", "notify", "hook_1:1"), ("end", "run_python", "hook_1")]
    assert hooks.events == expected and agent_hooks.events == expected
    assert [r.output.output_info for r in result.tool_input_guardrail_results] == ["clean", "spam"]
    assert [r.output.output_info for r in result.tool_output_guardrail_results] == [
        "checked noted ann"]


async def test_without_the_sdks_executor_inner_calls_keep_guardrails_and_agent_hooks(code):
    """The code tool called outside a run (no executor to find the run's hooks on): the
    guardrails and the agent's hooks still see each inner call."""
    agent_hooks = AgentSeen()
    agent = Agent(name="support", tools=code.tools, hooks=agent_hooks)
    arguments = json.dumps({"code": "print(notify(to='a', text='hi'))\ntry:\n"
                                    "    notify(to='b', text='spam')\nexcept ToolError as e:\n"
                                    "    print(e)"})
    ctx = ToolContext(context=None, tool_name="run_python", tool_call_id="bare_1",
                      tool_arguments=arguments, agent=agent)
    assert await code.tool.on_invoke_tool(ctx, arguments) == "noted a\nno spam, please"
    assert agent_hooks.events == [("start", "notify", "bare_1:1"), ("end", "notify", "bare_1:1")]


async def test_a_tripwire_ends_the_run_as_for_a_direct_call(code):
    program = ("print(transfer(amount=5))\n"
               "try:\n    transfer(amount=5000)\nexcept BaseException:\n    pass\n"
               "transfer(amount=6)")
    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        await Runner.run(_agent(code, program, "trip_1"), "move money")
    assert RAN == {"transfer": 1}  # the cell stopped at the tripwire: nothing ran after it
    done = await Runner.run(_agent(code, "print(transfer(amount=7))", "trip_2"), "again")
    assert done.final_output == "moved 7"


async def test_an_unanswered_pause_expires_and_leaves_no_interpreter():
    with CodeModeToolset(TOOLS, limits=Limits(timeout_s=30, pause_s=0.5)) as toolset:
        agent = _agent(toolset, "send_email(to='late', body='b')", "exp_1")
        paused = await Runner.run(agent, "go")
        [key] = toolset.code_tool.keys
        session = toolset.code_tool.get(key).session
        assert paused.interruptions and session.paused_for == "exp_1"
        await asyncio.sleep(1.0)
        state = paused.to_state()
        state.approve(paused.interruptions[0])
        done = await Runner.run(agent, state)  # too late: nothing runs
        assert "no paused cell" in done.final_output and RAN["send_email"] == 0
        for _ in range(100):  # the expired run's interpreter is closed off the caller's path
            if session.closed and key not in toolset.code_tool.keys:
                break
            await asyncio.sleep(0.05)
        assert session.closed and key not in toolset.code_tool.keys


def _shop(url: str, key: str) -> CodeModeToolset:
    from tooliscode.durable import RedisStore

    return CodeModeToolset(TOOLS, conversation=key, store=RedisStore(url),
                           limits=Limits(timeout_s=60))


async def test_a_run_resumes_in_a_new_process_from_its_json_over_redis(redis_url, tmp_path):
    with _shop(redis_url, "shop-1") as toolset:
        agent = _agent(toolset, "n = 41", "new_0")
        await Runner.run(agent, "set n")
        paused = await Runner.run(_agent(toolset, GATHERED, "new_1"), "email them")
        assert [i[2] for i in _items(paused)] == ["new_1:2", "new_1:3"]
        (tmp_path / "state.json").write_text(json.dumps(paused.to_state().to_json()))
    assert RAN == {"find_late_orders": 1}
    done = subprocess.run([sys.executable, str(HERE), redis_url, str(tmp_path / "state.json")],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ),
                          cwd=HERE.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    other = json.loads(done.stdout.strip().splitlines()[-1])
    assert other["final"] == "['sent to ann', 'not Bob'] 41"
    assert other["ran"] == {"send_email": 1}  # nothing ran twice; the rejected call never ran


async def test_a_cell_that_differs_when_continued_stops_before_any_call(redis_url):
    """The clock chooses the cell's first call: continued elsewhere (its calls answered from
    the record), it asks for another call, and stops with no call made."""
    program = ("import time\n"
               "first = ping(n=int(time.time() * 1000) % 1000003)\n"
               "send_email(to='w', body=str(first))")
    with _shop(redis_url, "shop-2") as first:
        agent = _agent(first, program, "clk_1")
        paused = await Runner.run(agent, "go")
        data = paused.to_state().to_json()
    await asyncio.sleep(0.01)
    with _shop(redis_url, "shop-2") as second:  # no parked cell here: it runs again
        agent = _agent(second, program, "clk_1", resumed=True)
        state = await RunState.from_json(agent, data)
        state.approve(state.get_interruptions()[0])
        done = await Runner.run(agent, state)
    assert "CellStopped" in done.final_output and "no call was made" in done.final_output
    assert RAN == {"ping": 1}


async def test_callers_give_tools_to_the_model_directly():
    with CodeModeToolset([find_late_orders, ping, send_email],
                         callers={"ping": "direct", "find_late_orders": "both"}) as toolset:
        assert [t.name for t in toolset.tools] == ["run_python", "find_late_orders", "ping"]
        model = ScriptedModel([
            [function_call("ping", {"n": 3}, call_id="dir_1")],
            [function_call("run_python", {"code": "print(len(find_late_orders()))\nping(n=1)"},
                           call_id="dir_2")],
            [assistant_message("done")]])
        agent = Agent(name="support", model=model, tools=toolset.tools,
                      instructions=toolset.instructions())
        await Runner.run(agent, "go")
        outputs = [i["output"] for i in model.last_call.input
                   if isinstance(i, dict) and i.get("type") == "function_call_output"]
        assert outputs[0] == "3" and outputs[1].startswith("2\n") and "NameError" in outputs[1]
        assert "def ping" not in model.first_call.system_instructions
        assert "def find_late_orders" in model.first_call.system_instructions
    with pytest.raises(ValueError, match="callers names 'pong'"):
        CodeModeToolset([ping], callers={"pong": "direct"})


# -- the other process ----------------------------------------------------------------------


async def _resume_elsewhere(url: str, path: str) -> None:
    with _shop(url, "shop-1") as toolset:
        agent = _agent(toolset, GATHERED, "new_1", resumed=True)
        state = await RunState.from_json(agent, json.loads(Path(path).read_text()))
        ann, bob = state.get_interruptions()
        state.approve(ann)
        state.reject(bob, rejection_message="not Bob")
        started = time.perf_counter()
        done = await Runner.run(agent, state)
        print(json.dumps({"final": done.final_output, "ran": dict(RAN),
                          "s": time.perf_counter() - started}))


if __name__ == "__main__":
    set_tracing_disabled(True)
    asyncio.run(_resume_elsewhere(sys.argv[1], sys.argv[2]))
