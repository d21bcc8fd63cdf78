"""Calls made from code that need a person's decision, through PydanticAI's own deferred tools:
the cell pauses at the call, the run ends with `DeferredToolRequests` naming it, and
`DeferredToolResults` continue the cell where it stopped, in this process or in another one
(over Redis). Counters at the tools prove that nothing runs twice and that a denied call
never runs."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _pydantic_ai_approval import (
    EMAILS,
    EMAILS_DONE,
    RAN,
    SENT,
    answer,
    results,
    save,
    tools,
)
from _pydantic_ai_script import Script, tool_returns
from durable.conftest import redis_url  # noqa: F401 - a fixture: a real Redis server
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability, HandleDeferredToolCalls
from pydantic_ai.exceptions import ToolFailed, UserError
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDenied
from tooliscode import Limits, Session
from tooliscode.durable import RedisStore
from tooliscode.integrations.pydantic_ai import CodeMode, CodeModeToolset

TESTS = Path(__file__).parents[1]
LIMITS = Limits(timeout_s=60)


@pytest.fixture(autouse=True)
def _counters():
    RAN.clear()
    SENT.clear()


@pytest.fixture(scope="module")
def run_scope():
    with_runs = CodeMode(limits=LIMITS)
    yield with_runs
    with_runs.close()


@pytest.fixture(scope="module")
def conversation_scope():
    with_conversations = CodeMode(scope="conversation", limits=LIMITS)
    yield with_conversations
    with_conversations.close()


@pytest.fixture(params=["run", "conversation"])
def code_mode(request, run_scope, conversation_scope) -> CodeMode:
    return run_scope if request.param == "run" else conversation_scope


@dataclass
class SeenCalls(AbstractCapability[Any]):
    """The calls that reach the tool hooks, with their arguments."""

    calls: list[tuple[str, dict]] = field(default_factory=list)

    async def before_tool_execute(self, ctx: RunContext[Any], *, call: ToolCallPart,
                                  tool_def: Any, args: Any) -> Any:
        self.calls.append((call.tool_name, dict(args)))
        return args


def agent(code_mode: Any, *steps: str, capabilities: tuple = ()) -> Agent:
    return Agent(Script(*steps).model, toolsets=[tools], output_type=[str, DeferredToolRequests],
                 capabilities=[*capabilities, code_mode])


async def resume(runner: Agent, result: Any, answers: DeferredToolResults) -> Any:
    return await runner.run(message_history=result.all_messages(),
                            deferred_tool_results=answers)


def recipients(requests: Any) -> list[str]:
    assert isinstance(requests, DeferredToolRequests), requests
    return [p.args_as_dict()["to"] for p in requests.approvals]


async def test_calls_one_after_another_pause_one_at_a_time_approved_denied_edited(code_mode):
    seen = SeenCalls()
    runner = agent(code_mode, EMAILS, capabilities=(seen,))
    result = await runner.run("email the late customers")
    ids = []
    for expected in ("ann@example.com", "bob@example.com", "cid@example.com"):
        assert recipients(result.output) == [expected] and result.output.calls == []
        (part,) = result.output.approvals
        assert part.tool_name == "send_email" and result.output.metadata == {}
        ids.append(part.tool_call_id)
        result = await resume(runner, result, results(result.output))
    assert result.output == EMAILS_DONE
    outer = ids[0].rsplit(":", 1)[0]
    assert ids == [f"{outer}:2", f"{outer}:3", f"{outer}:4"]
    assert RAN == {"find_late_orders": 1, "send_email": 2}, "nothing ran twice; Bob's never"
    assert SENT == [("ann@example.com", "order 1 is late", {"by": "alice"}),
                    ("cid@example.com", "edited", {"by": "alice"})]
    inner = [(name, args) for name, args in seen.calls if name != "run_python"]
    assert inner == [("find_late_orders", {}),
                     ("send_email", {"to": "ann@example.com", "body": "order 1 is late"}),
                     ("send_email", {"to": "cid@example.com", "body": "edited"})]
    (returned,) = tool_returns(result.all_messages())  # one code call, one result
    assert returned.tool_call_id == outer and returned.outcome == "success"


async def test_a_tool_that_asks_for_approval_itself(run_scope):
    runner = agent(run_scope, "print(refund(order_id=1, amount=50))\n"
                              "print(refund(order_id=2, amount=500))")
    result = await runner.run("refund")
    (part,) = result.output.approvals
    assert (part.tool_name, part.args_as_dict()) == ("refund", {"order_id": 2, "amount": 500})
    assert result.output.metadata == {part.tool_call_id: {"reason": "500 is over the limit of 100"}}
    assert RAN == {"refund": 1}
    result = await resume(runner, result, result.output.build_results(approve_all=True))
    assert result.output == "answer: refunded 50 on order 1\nrefunded 500 on order 2"
    assert RAN == {"refund": 2}


async def test_an_external_result_is_the_calls_return_value(code_mode):
    runner = agent(code_mode, "print('manager:', ask_manager(question='refund 2?'))\n"
                              "try:\n    ask_manager(question='and 3?')\n"
                              "except ToolError as error:\n    print('failed:', error)")
    result = await runner.run("ask")
    (part,) = result.output.calls
    assert part.tool_name == "ask_manager" and result.output.approvals == []
    assert result.output.kind(part.tool_call_id) == "external"
    assert result.output.metadata == {part.tool_call_id: {"queue": "managers"}}
    result = await resume(runner, result,
                          result.output.build_results(calls={part.tool_call_id: "yes"}))
    (second,) = result.output.calls
    assert second.args_as_dict() == {"question": "and 3?"}
    result = await resume(runner, result, result.output.build_results(
        calls={second.tool_call_id: ToolFailed("the manager is away")}))
    assert result.output == "answer: manager: yes\nfailed: the manager is away"


async def test_gathered_calls_pause_together(code_mode):
    runner = agent(code_mode, "import asyncio\nlate = find_late_orders()\n"
                              "done = await asyncio.gather(*(send_email(to=o['customer'], "
                              "body='late') for o in late), ping(n=7), return_exceptions=True)\n"
                              "print([str(d) for d in done])")
    result = await runner.run("email them all at once")
    assert recipients(result.output) == ["ann@example.com", "bob@example.com",
                                         "cid@example.com"]
    assert RAN == {"find_late_orders": 1, "ping": 1}, "the ungated call ran before the pause"
    ann, bob, cid = result.output.approvals
    # one answered, two left: the run pauses again on those two (Ann's answer is kept)
    result = await resume(runner, result,
                          result.output.build_results(approvals={ann.tool_call_id: True}))
    assert recipients(result.output) == ["bob@example.com", "cid@example.com"]
    assert RAN == {"find_late_orders": 1, "ping": 1}, "nothing runs until all are answered"
    result = await resume(runner, result, result.output.build_results(approvals={
        bob.tool_call_id: ToolDenied("do not email Bob"), cid.tool_call_id: True}))
    assert result.output == ("answer: ['sent to ann@example.com', 'do not email Bob', "
                             "'sent to cid@example.com', '7']")
    assert RAN == {"find_late_orders": 1, "ping": 1, "send_email": 2}


async def test_a_second_code_call_of_the_response_waits_for_the_paused_one(code_mode):
    """Running it would give up the paused cell: it is refused, the model told why."""
    def two_calls(messages: list[Any], info: Any) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[
            ToolCallPart("run_python", {"code": "print(send_email(to='ann@example.com', "
                                                "body='b'))"}, tool_call_id="first"),
            ToolCallPart("run_python", {"code": "print(ping(n=3))"}, tool_call_id="second")])

    runner = Agent(FunctionModel(two_calls), toolsets=[tools], capabilities=[code_mode],
                   output_type=[str, DeferredToolRequests])
    result = await runner.run("go")
    assert [p.tool_call_id for p in result.output.approvals] == ["first:1"]
    result = await resume(runner, result, results(result.output))
    returned = {p.tool_call_id: p for p in tool_returns(result.all_messages())}
    first, second = returned["first"], returned["second"]
    assert first.content == "sent to ann@example.com"
    assert second.outcome == "retried" and "call first is paused" in second.content
    assert RAN == {"send_email": 1}


async def test_a_hundred_calls_and_one_gated_make_101_calls_across_the_pause(run_scope):
    runner = agent(run_scope, "total = sum(ping(n=i) for i in range(100))\n"
                              "print(total, send_email(to='ann@example.com', body='b'))")
    result = await runner.run("count")
    assert RAN == {"ping": 100} and recipients(result.output) == ["ann@example.com"]
    result = await resume(runner, result, result.output.build_results(approve_all=True))
    assert result.output == "answer: 4950 sent to ann@example.com"
    assert sum(RAN.values()) == 101


async def test_resuming_a_paused_run_takes_no_interpreter_of_its_own():
    """A run that continues a paused cell runs in that cell's sandbox, so it takes none of its
    own: taking the spare made the next one start in the middle of every first resume. The
    next run's spare is made once the cell is done."""
    code_mode, taken = CodeMode(limits=LIMITS), []
    try:
        runner = agent(code_mode, EMAILS)
        result = await runner.run("email the late customers")
        code_tool = code_mode.code_tool
        assert code_tool is not None
        take = code_tool.take
        code_tool.take = lambda: taken.append(1) or take()  # type: ignore[method-assign]
        while isinstance(result.output, DeferredToolRequests):
            result = await resume(runner, result, results(result.output))
        assert result.output == EMAILS_DONE and taken == []
        for _ in range(600):
            if code_tool.spare is not None:
                break
            await asyncio.sleep(0.05)
        assert code_tool.spare is not None
    finally:
        code_mode.close()


async def test_a_handler_decides_inner_calls_during_the_run(run_scope):
    def handler(ctx: RunContext[Any], requests: DeferredToolRequests) -> DeferredToolResults:
        return requests.build_results(approvals={p.tool_call_id: answer(p) for p in
                                                 requests.approvals
                                                 if p.tool_name == "send_email"})

    runner = agent(run_scope, EMAILS, capabilities=(HandleDeferredToolCalls(handler=handler),))
    result = await runner.run("email the late customers")
    assert result.output == EMAILS_DONE
    assert RAN == {"find_late_orders": 1, "send_email": 2}


async def test_without_the_capability_the_code_call_itself_waits_for_approval():
    """A bare `CodeModeToolset`: the item names `run_python`, the inner calls are in its
    metadata, and decisions for them go in the metadata of its approval."""
    toolset = CodeModeToolset(tools, limits=LIMITS)
    runner = Agent(Script("print(send_email(to='ann@example.com', body='hi'))").model,
                   toolsets=[toolset], output_type=[str, DeferredToolRequests])
    try:
        result = await runner.run("email Ann")
        (part,) = result.output.approvals
        assert part.tool_name == "run_python"
        (pending,) = result.output.metadata[part.tool_call_id]["tooliscode"]["pending"]
        assert pending["tool"] == "send_email" and pending["arguments"]["to"] == "ann@example.com"
        # approving the code call with no decisions asks again: nothing runs
        again = await resume(runner, result, DeferredToolResults(
            approvals={part.tool_call_id: True}))
        assert again.output.metadata[part.tool_call_id]["tooliscode"]["pending"] == [pending]
        result = await resume(runner, again, DeferredToolResults(
            approvals={part.tool_call_id: True},
            metadata={part.tool_call_id: {"tooliscode": {
                "approvals": {pending["id"]: True},
                "metadata": {pending["id"]: {"by": "carol"}}}}}))
        assert result.output == "answer: sent to ann@example.com"
        assert SENT == [("ann@example.com", "hi", {"by": "carol"})]
    finally:
        toolset.close()


async def test_approving_the_code_call_itself_elsewhere_asks_again(redis_url):  # noqa: F811
    """A bare toolset's `run_python` item approved with nothing decided inside, in another
    worker: the cell is run again from the store only as far as its pause, which it asks
    for again; the calls before it are not made again."""
    def bare(store: RedisStore) -> CodeModeToolset:
        return CodeModeToolset(tools, scope="conversation", store=store, limits=LIMITS)

    def runner(toolset: CodeModeToolset) -> Agent:
        return Agent(Script(EMAILS).model, toolsets=[toolset],
                     output_type=[str, DeferredToolRequests])

    store = RedisStore(redis_url)
    first = bare(store)
    try:
        result = await runner(first).run("email the late customers")
    finally:
        first.close()
    (part,) = result.output.approvals
    later = bare(store)
    try:
        again = await resume(runner(later), result, result.output.build_results(
            approve_all=True))
    finally:
        later.close()
    assert again.output.metadata == result.output.metadata  # Ann's email, asked again
    assert RAN == {"find_late_orders": 1} and SENT == []


@pytest.mark.parametrize("scope", ["run", "conversation"])
async def test_code_that_itself_waits_for_approval_runs_once_approved(scope):
    """`approval_required()` around the code tool: a person approves the code before it
    runs; approved, it runs from its start (no cell of it had paused)."""
    toolset = CodeModeToolset(tools, scope=scope, limits=LIMITS)
    runner = Agent(Script("print(ping(n=5))").model, toolsets=[toolset.approval_required()],
                   output_type=[str, DeferredToolRequests])
    try:
        result = await runner.run("ping")
        (part,) = result.output.approvals
        assert part.tool_name == "run_python" and RAN == {}
        result = await resume(runner, result, result.output.build_results(approve_all=True))
    finally:
        toolset.close()
    assert result.output == "answer: 5" and RAN == {"ping": 1}


def test_callers_are_checked():
    with pytest.raises(UserError, match="callers\\['send_email'\\] must be one of"):
        CodeMode(callers={"send_email": "sideways"})


def paused_sessions(call_id: str) -> list[Session]:
    """The live sessions whose cell is paused in code call `call_id`."""
    return [o for o in gc.get_objects() if isinstance(o, Session) and not o.closed
            and o.paused_for == call_id]


async def test_an_unanswered_pause_expires_and_leaves_no_guest_behind():
    # The pause must outlast the run that makes it and the look for it below, however busy
    # the machine (1.5 s did not, twice in a whole suite).
    code_mode = CodeMode(limits=Limits(timeout_s=60, pause_s=4))
    runner = agent(code_mode, EMAILS)
    try:
        result = await runner.run("email the late customers")
        (part,) = result.output.approvals
        outer = part.tool_call_id.rsplit(":", 1)[0]
        (session,) = paused_sessions(outer)
        for _ in range(300):  # the pause expires: its guest is closed
            if session.closed:
                break
            await asyncio.sleep(0.05)
        assert session.closed and paused_sessions(outer) == []
        late = await resume(runner, result, results(result.output))
        assert "no paused cell" in late.output and RAN == {"find_late_orders": 1}
    finally:
        code_mode.close()


async def resume_in_another_worker(store: RedisStore, result: Any) -> Any:
    """`result`'s pause answered as `results` answers it, by a code tool that has not seen
    the conversation (as in another process): it continues from the store."""
    later = CodeMode(scope="conversation", store=store, limits=LIMITS)
    try:
        return await resume(agent(later), result, results(result.output))
    finally:
        later.close()


async def test_a_stored_pause_holds_no_lease_and_expires(redis_url):  # noqa: F811
    store = RedisStore(redis_url)
    first = CodeMode(scope="conversation", store=store, limits=Limits(timeout_s=60, pause_s=1.0))
    runner = agent(first, EMAILS)
    try:
        result = await runner.run("email the late customers")
        assert recipients(result.output) == ["ann@example.com"]
        for _ in range(100):  # the lease is given back on another thread
            if store.acquire(result.conversation_id, "someone else", 5.0):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("a paused conversation still holds its lease")
        store.release(result.conversation_id, "someone else")
    finally:
        first.close()
    await asyncio.sleep(1.5)
    late = await resume_in_another_worker(store, result)
    assert "waited longer than its limit" in late.output and "nothing ran" in late.output
    assert RAN == {"find_late_orders": 1}


def resume_elsewhere(url: str, folder: Path, resumes: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(TESTS / "_pydantic_ai_approval.py"), url,
                           str(folder), str(resumes)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


async def test_a_run_resumed_in_new_processes_over_redis(redis_url, tmp_path):  # noqa: F811
    """The message history (JSON) and the pending requests go to another process, which
    continues the cell from the conversation's store: the calls made before the pause are
    not made again."""
    code_mode = CodeMode(scope="conversation", store=RedisStore(redis_url), limits=LIMITS)
    try:
        result = await agent(code_mode, EMAILS).run("email the late customers")
    finally:
        code_mode.close()
    assert recipients(result.output) == ["ann@example.com"]
    save(tmp_path, result)
    first = resume_elsewhere(redis_url, tmp_path, 1)  # Ann approved; pauses at Bob
    assert first == {"output": None, "paused": [["bob@example.com"]], "ran": {"send_email": 1},
                     "sent": [["ann@example.com", "order 1 is late", {"by": "alice"}]]}
    second = resume_elsewhere(redis_url, tmp_path, 5)  # Bob denied; Cid edited, in-process
    assert second == {"output": EMAILS_DONE, "paused": [["cid@example.com"]],
                      "ran": {"send_email": 1},
                      "sent": [["cid@example.com", "edited", {"by": "alice"}]]}
    assert RAN == {"find_late_orders": 1}


async def test_a_cell_that_chooses_its_calls_by_the_clock_stops_when_continued_elsewhere(
        redis_url):  # noqa: F811
    code = ("import time\nfirst = ping(n=int(time.time() * 1000) % 1000003)\n"
            "print(send_email(to='ann@example.com', body=str(first)))")
    store = RedisStore(redis_url)
    first = CodeMode(scope="conversation", store=store, limits=LIMITS)
    try:
        result = await agent(first, code).run("ping, then email")
    finally:
        first.close()
    assert recipients(result.output) == ["ann@example.com"] and RAN == {"ping": 1}
    await asyncio.sleep(0.01)
    stopped = await resume_in_another_worker(store, result)
    assert "CellStopped" in stopped.output and "no call was made" in stopped.output
    assert RAN == {"ping": 1}, "no call ran on resume: not ping, not the email"
