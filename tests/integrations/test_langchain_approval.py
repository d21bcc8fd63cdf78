"""Calls the code makes under LangChain's human-in-the-loop middleware: the cell pauses at a
reviewed call, the graph interrupts as for a direct call, and `Command(resume=...)` goes on
with the same cell. Both of the middleware's modes, sync and async agents, in this process
and in new processes over a real Redis store. Counters at the tools prove that nothing runs
twice and that a refused call never runs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

import pytest
from _langchain_agents import (
    RAN,
    SENT,
    TOOLS,
    CodeModel,
    Recorder,
    answer,
    decide,
    make_agent,
    step,
    tool_messages,
)
from durable.conftest import redis_url  # noqa: F401 - the fixture
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, ToolRetryMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from tooliscode import Limits
from tooliscode.durable import FolderStore, Keeper
from tooliscode.integrations.langchain import CodeModeMiddleware, as_langchain_tool

MODES = ["batched", "per_call"]
GATHERED = ("import asyncio\n"
            "late = find_late_orders()\n"
            "sent = await asyncio.gather(*(send_email(to=o['customer'],\n"
            "                                         body=f\"order {o['id']}\")\n"
            "                              for o in late), return_exceptions=True)\n"
            "print([str(s) for s in sent])")
ONE_BY_ONE = ("for o in find_late_orders():\n"
              "    try:\n"
              "        print(send_email(to=o['customer'], body='late'))\n"
              "    except ToolError as e:\n"
              "        print('refused:', e)")


@pytest.fixture(autouse=True)
def _counters():
    RAN.clear()
    SENT.clear()


class Agent:
    """One agent with code mode, human-in-the-loop in `mode`, and a middleware that records
    what its `wrap_tool_call` sees; each conversation gets its own thread."""

    def __init__(self, mode: str, checkpointer: Any = None, **options: Any):
        self.mode = mode
        self.saver = checkpointer or InMemorySaver()
        self.recorder = Recorder()
        options.setdefault("limits", Limits(timeout_s=30))
        self.graph, self.code = make_agent(mode, self.saver, self.recorder, **options)
        self.rounds: list[list[Any]] = []

    def start(self, code: str, thread: str | None = None, callbacks: list | None = None) -> Any:
        self.config = {"configurable": {"thread_id": thread or uuid.uuid4().hex},
                       "callbacks": callbacks or []}
        self.rounds = []
        return self._step(self.graph.invoke({"messages": [("user", code)]}, self.config,
                                            version="v2"))

    def resume(self, policy: Any = decide) -> Any:
        return self._step(self.graph.invoke(answer(self.last, policy), self.config,
                                            version="v2"))

    async def astart(self, code: str) -> Any:
        self.config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        self.rounds = []
        return self._step(await self.graph.ainvoke({"messages": [("user", code)]},
                                                    self.config, version="v2"))

    async def aresume(self, policy: Any = decide) -> Any:
        return self._step(await self.graph.ainvoke(answer(self.last, policy), self.config,
                                                   version="v2"))

    def _step(self, result: Any) -> Any:
        self.last = list(result.interrupts)
        if self.last:
            self.rounds.append([i.value for i in self.last])
        self.result = result
        return result

    def finish(self, policy: Any = decide) -> str:
        """Answer every pause with `policy`; the code tool's message."""
        while self.last:
            self.resume(policy)
        return tool_messages(self.result.value)[-1]

    def actions(self) -> list[list[tuple[str, dict]]]:
        """Each pause's reviewed calls: (tool, arguments)."""
        out = []
        for values in self.rounds:
            if "action_requests" in values[0]:
                out.append([(a["name"], a["args"]) for a in values[0]["action_requests"]])
            else:
                out.append([(v["name"], v["args"]) for v in values])
        return out


@pytest.fixture(scope="module", params=MODES)
def agent(request):
    made = Agent(request.param)
    yield made
    made.code.close()


def test_approve_runs_the_call_once(agent):
    agent.start("print(send_email(to='ann', body='hi'))")
    assert agent.actions() == [[("send_email", {"to": "ann", "body": "hi"})]]
    assert RAN["send_email"] == 0  # nothing runs before the person decides
    assert agent.finish() == "sent to ann"
    assert SENT == [("ann", "hi")] and RAN["send_email"] == 1


def test_reject_raises_tool_error_with_the_reviewers_message_and_never_runs(agent):
    agent.start("try:\n    send_email(to='bob', body='hi')\nexcept ToolError as e:\n"
                "    print('refused:', e)")
    message = agent.finish()
    assert message.startswith("refused: ") and "not to bob" in message
    assert RAN["send_email"] == 0 and SENT == []


def test_edit_runs_the_call_with_the_edited_arguments(agent):
    agent.start("print(send_email(to='boss', body='draft'))")
    assert agent.finish() == "sent to boss"
    assert SENT == [("boss", "edited")]


def test_respond_makes_the_message_the_result_without_running(agent):
    agent.start("print(send_email(to='cy', body='hi'))")
    assert agent.finish() == "cy was phoned instead"
    assert RAN["send_email"] == 0


def test_calls_one_after_another_pause_one_at_a_time(agent):
    agent.start(ONE_BY_ONE)
    message = agent.finish()
    assert agent.actions() == [[("send_email", {"to": "ann", "body": "late"})],
                               [("send_email", {"to": "bob", "body": "late"})]]
    assert message.splitlines()[0] == "sent to ann" and "not to bob" in message
    assert dict(RAN) == {"find_late_orders": 1, "send_email": 1}


def test_gathered_calls(agent):
    """Batched: one pause for both calls. Per call: LangGraph answers one interrupt of a
    task per resume, so they come one at a time."""
    agent.start(GATHERED)
    message = agent.finish()
    ann, bob = ("send_email", {"to": "ann", "body": "order 1"}), \
        ("send_email", {"to": "bob", "body": "order 2"})
    assert agent.actions() == ([[ann, bob]] if agent.mode == "batched" else [[ann], [bob]])
    assert "'sent to ann'" in message and "not to bob" in message
    assert dict(RAN) == {"find_late_orders": 1, "send_email": 1}


def test_a_hundred_ungated_calls_and_one_gated_make_101_calls(agent):
    agent.start("total = sum(ping(n=i) for i in range(100))\n"
                "print(total, send_email(to='ann', body='total'))")
    assert RAN["ping"] == 100
    assert agent.finish() == "4950 sent to ann"
    assert sum(RAN.values()) == 101


def test_wrap_tool_call_middleware_sees_the_codes_calls(agent):
    agent.recorder.seen.clear()
    agent.start("late = find_late_orders()\nprint(send_email(to='ann', body='x'))")
    agent.finish()
    seen = agent.recorder.seen
    assert "find_late_orders:call_1:1" in seen and "send_email:call_1:2" in seen
    assert seen.count("find_late_orders:call_1:1") == 1  # not again on resume


class ChildRuns(BaseCallbackHandler):
    """The tool runs callbacks report, as `name` or `name<parent>`."""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}
        self.runs: list[str] = []

    def on_tool_start(self, serialized: dict, input_str: str, *, run_id: Any,
                      parent_run_id: Any = None, **kwargs: Any) -> None:
        self.names[run_id] = serialized["name"]
        parent = self.names.get(parent_run_id)
        self.runs.append(f"{serialized['name']}<{parent}>" if parent else serialized["name"])


def test_inner_calls_are_child_runs_of_the_code_tool_and_async_tools_run(agent):
    runs = ChildRuns()
    agent.start("print(customer(name='ann')['vip'], send_email(to='ann', body='x'))",
                callbacks=[runs])
    assert agent.finish() == "True sent to ann"
    assert "customer<run_python>" in runs.runs and "send_email<run_python>" in runs.runs
    assert dict(RAN) == {"customer": 1, "send_email": 1}


def test_the_request_has_the_shape_of_a_direct_calls(agent):
    """The same tool, reviewed once as the model's own call and once as the code's."""
    direct = Agent(agent.mode, callers={"send_email": "both"})
    try:
        direct.start('CALL send_email {"to": "ann", "body": "hi"}')
        native = direct.last
        direct.start("print(send_email(to='ann', body='hi'))")
        inner = direct.last
    finally:
        direct.code.close()
    assert len(native) == len(inner) == 1
    if agent.mode == "batched":
        assert native[0].value == inner[0].value
    else:
        assert native[0].value.keys() == inner[0].value.keys()
        assert {k: v for k, v in native[0].value.items() if k != "tool_call_id"} == \
            {k: v for k, v in inner[0].value.items() if k != "tool_call_id"}
        assert native[0].response_schema == inner[0].response_schema
        assert inner[0].value["tool_call_id"] == "call_1:1"


async def test_async_agent(agent):
    await agent.astart(GATHERED)
    while agent.last:
        await agent.aresume()
    message = tool_messages(agent.result.value)[-1]
    assert "'sent to ann'" in message and "not to bob" in message
    assert dict(RAN) == {"find_late_orders": 1, "send_email": 1}
    assert "send_email:call_1:2" in agent.recorder.seen


def test_a_lost_pause_is_said_and_nothing_runs_again(agent):
    """Without a store a pause lives in its process: here the conversation's interpreter
    was closed meanwhile. The resume says so; the calls made before the pause are not made
    again."""
    agent.start("late = find_late_orders()\nprint(send_email(to='ann', body='x'))")
    agent.code.tool.drop(agent.config["configurable"]["thread_id"])
    message = agent.finish()
    assert "no paused cell" in message and "nothing ran" in message
    assert dict(RAN) == {"find_late_orders": 1}


def test_a_new_turn_instead_of_an_answer_gives_the_pause_up(agent):
    """The user writes again instead of answering, and the model's next call has the same
    id (scripted models reuse theirs): the new code runs, the paused cell is given up."""
    agent.start("late = find_late_orders()\nprint(send_email(to='ann', body='x'))")
    thread = agent.config["configurable"]["thread_id"]
    agent.start("print('new cell', len(late))", thread)
    assert agent.last == [] and tool_messages(agent.result.value)[-1] == "new cell 2"
    assert dict(RAN) == {"find_late_orders": 1}


@pytest.mark.parametrize("mode", MODES)
def test_callers_keep_tools_for_the_model(mode):
    made = Agent(mode, callers={"ping": "direct", "send_email": "both"})
    try:
        assert made.code.tools[1:] == [t for t in TOOLS if t.name in ("send_email", "ping")]
        assert [t.name for t in made.code.tool.tools] == ["find_late_orders", "send_email",
                                                          "customer"]
        made.start("ping(n=1)")
        assert "NameError" in tool_messages(made.result.value)[-1]
        made.start('CALL ping {"n": 3}')
        assert tool_messages(made.result.value)[-1] == "3"
    finally:
        made.code.close()
    with pytest.raises(ValueError, match="not one of the tools"):
        CodeModeMiddleware(TOOLS, callers={"nope": "direct"})


@tool
def flaky(n: int) -> int:
    """Fails on every other call."""
    RAN["flaky"] += 1
    if RAN["flaky"] % 2:
        raise ValueError("try again")
    return n


@pytest.mark.parametrize("code_first", [True, False])
def test_retry_middleware_after_code_mode_retries_the_codes_calls(code_first):
    """What sees the code's calls is the middleware listed after code mode: listed before
    it, a retry middleware retries only `run_python` itself, not the calls its code makes."""
    retry = ToolRetryMiddleware(max_retries=1, initial_delay=0, jitter=False,
                                tools=["flaky"], on_failure="error")
    code = CodeModeMiddleware([flaky])
    middleware = [code, retry] if code_first else [retry, code]
    graph = create_agent(CodeModel(), middleware=middleware)
    try:
        state = graph.invoke({"messages": [("user", "print(flaky(n=7))")]})
    finally:
        code.close()
    message = tool_messages(state)[-1]
    if code_first:
        assert message == "7" and RAN["flaky"] == 2
    else:
        assert "ValueError: try again" in message and RAN["flaky"] == 1


def test_per_call_review_listed_before_code_mode_refuses_the_call():
    """The calls the code makes pass only through the middleware listed after code mode: a
    reviewing middleware listed before it cannot ask, so the tool refuses to run."""
    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True}, interrupt_mode="per_call")
    code = CodeModeMiddleware(TOOLS, hitl=hitl)
    graph = create_agent(CodeModel(), middleware=[hitl, code], checkpointer=InMemorySaver())
    try:
        state = graph.invoke({"messages": [("user", "send_email(to='ann', body='x')")]},
                             {"configurable": {"thread_id": "t"}})
    finally:
        code.close()
    assert "list it after CodeModeMiddleware" in tool_messages(state)[-1]
    assert RAN["send_email"] == 0


def _parked_threads() -> list[str]:
    """The threads waiting inside a paused call for its decision."""
    return [str(tid) for tid, frame in sys._current_frames().items()
            if any(f.f_code.co_name == "park" and f.f_code.co_filename.endswith("_pause.py")
                   for f, _ in traceback.walk_stack(frame))]


@pytest.mark.parametrize("mode", MODES)
def test_an_abandoned_pause_expires_leaving_no_thread_or_lease_and_nothing_runs(mode, tmp_path):
    store = FolderStore(tmp_path / "store")
    made = Agent(mode, store=Keeper(store), limits=Limits(timeout_s=30, pause_s=0.5))
    try:
        made.start("late = find_late_orders()\nprint(send_email(to='ann', body='x'))", "conv")
        assert made.last and len(_parked_threads()) == 1  # the guest waits in the call
        deadline = time.monotonic() + 10  # the lease is given back on another thread
        while not (free := store.acquire("conv", "someone else", 5.0)) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        assert free  # no lease is held while paused
        store.release("conv", "someone else")
        deadline = time.monotonic() + 10
        while _parked_threads() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _parked_threads() == []  # expired: nothing waits any more
        message = made.finish()  # the answer comes too late
        assert "expired" in message, message
        assert dict(RAN) == {"find_late_orders": 1}
        assert made.code.code_tool.paused_calls("call_1", key="conv") == ()
    finally:
        made.code.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_cell_that_asks_for_other_calls_on_resume_stops_before_any(mode, tmp_path):
    """A cell reading the clock to choose its next call, continued by another code tool
    (another process, as far as it knows) from the store: the first call that differs from
    the record stops it, and no call is made."""
    keeper_path, saver = tmp_path / "store", InMemorySaver()
    first = Agent(mode, saver, store=Keeper(FolderStore(keeper_path)))
    first.start("import time\nfirst = ping(n=int(time.time() * 1000) % 1000003)\n"
                "send_email(to='ann', body=str(first))", "conv")
    first.code.close()
    time.sleep(0.01)
    second = Agent(mode, saver, store=Keeper(FolderStore(keeper_path)))
    second.config, second.last = first.config, first.last
    try:
        message = second.finish()
    finally:
        second.code.close()
    assert "CellStopped" in message and "no call was made" in message
    assert dict(RAN) == {"ping": 1}


WORKER = Path(__file__).parents[1] / "_langchain_agents.py"


@pytest.mark.parametrize("mode", MODES)
def test_resume_in_new_processes_over_redis(mode, redis_url, tmp_path):  # noqa: F811
    """The pause in this process, then every resume in a process of its own, with the
    checkpointer's state saved between them and the session in Redis. The cell goes on
    where it stopped: the earlier turn's variable is there, and no call runs twice."""
    saved = tmp_path / "checkpoints"

    def in_new_process(*args: str) -> dict:
        done = subprocess.run([sys.executable, str(WORKER), mode, redis_url, str(saved), *args],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    out = step(mode, redis_url, saved, "start", ["n = 41", GATHERED.replace("print(", "print(n, ")])
    assert out["interrupts"] and out["ran"] == {"find_late_orders": 1}
    runs = [out["ran"]]
    while out["interrupts"]:
        out = in_new_process("resume")
        runs.append(out["ran"])
    assert "41 ['sent to ann'" in out["messages"][-1] and "not to bob" in out["messages"][-1]
    total: dict[str, int] = {}
    for ran in runs:
        for name, count in ran.items():
            total[name] = total.get(name, 0) + count
    assert total == {"find_late_orders": 1, "send_email": 1}
    assert len(runs) == (2 if mode == "batched" else 3)


# -- review configured the way a user would: nothing handed to code mode -------------------

THREE_EMAILS = ("for to in ['ann', 'bob', 'cy']:\n"
                "    try:\n"
                "        print(send_email(to=to, body='hi'))\n"
                "    except ToolError as e:\n"
                "        print('refused:', e)")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("code_first", [True, False])
def test_the_agents_own_review_is_found_without_hitl(mode, code_first):
    """`HumanInTheLoopMiddleware` listed beside code mode, not handed to it: the code's calls
    of a reviewed tool never run unreviewed. Found where the calls pass through it (listed
    after code mode), they pause for its review; listed before, in `per_call` mode it cannot
    ask, and the call is refused with the fix."""
    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True}, interrupt_mode=mode)
    code = CodeModeMiddleware(TOOLS)
    middleware = [code, hitl] if code_first else [hitl, code]
    graph = create_agent(CodeModel(), middleware=middleware, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    try:
        result = graph.invoke({"messages": [("user", THREE_EMAILS)]}, config, version="v2")
        assert RAN["send_email"] == 0 and SENT == []
        if not code_first and mode == "per_call":
            assert not result.interrupts
            message = tool_messages(result.value)[-1]
            assert message.count("refused:") == 3 and "after CodeModeMiddleware" in message
            return
        assert result.interrupts  # the review the user configured, as for a direct call
        while result.interrupts:
            result = graph.invoke(answer(list(result.interrupts)), config, version="v2")
    finally:
        code.close()
    assert [to for to, _ in SENT] == ["ann"]  # approved; bob rejected; cy answered for him
    assert RAN["send_email"] == 1


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_code_tool_in_tools_refuses_what_the_agents_review_covers(is_async):
    """The code tool given as a plain tool: its calls cannot pass through the agent's
    middleware, so a call of a tool the agent reviews is refused, naming the fix."""
    code = as_langchain_tool(TOOLS)
    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})
    graph = create_agent(CodeModel(), tools=[code], middleware=[hitl],
                         checkpointer=InMemorySaver())
    turn = ({"messages": [("user", THREE_EMAILS + "\nprint(ping(n=2))")]},
            {"configurable": {"thread_id": "t"}})
    try:
        state = await (graph.ainvoke(*turn) if is_async else asyncio.to_thread(graph.invoke,
                                                                                *turn))
    finally:
        code.close()
    message = tool_messages(state)[-1]
    assert message.count("refused:") == 3 and "CodeModeMiddleware" in message
    assert message.splitlines()[-1] == "2"  # what the review does not cover runs
    assert RAN["send_email"] == 0 and SENT == []


@pytest.mark.parametrize("code_first", [True, False])
async def test_the_agents_own_review_is_found_under_an_async_agent(code_first):
    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True})
    code = CodeModeMiddleware(TOOLS)
    graph = create_agent(CodeModel(), middleware=[code, hitl] if code_first else [hitl, code],
                         checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    try:
        result = await graph.ainvoke({"messages": [("user", THREE_EMAILS)]}, config,
                                     version="v2")
        assert result.interrupts and RAN["send_email"] == 0
        while result.interrupts:
            result = await graph.ainvoke(answer(list(result.interrupts)), config, version="v2")
    finally:
        code.close()
    assert [to for to, _ in SENT] == ["ann"] and RAN["send_email"] == 1
