"""PydanticAI's rows of bench_approval.py: a cell paused at gated calls through PydanticAI's own
deferred tools (`DeferredToolRequests`, then `DeferredToolResults`), against the same flow
with `send_email` as a direct `requires_approval` tool, which is PydanticAI's own pause and
resume.

1. N gated calls one after another, each a pause and a resume (N + 1 agent runs on either
   side: the direct side's model calls one email per turn), less the same flow calling an
   ungated twin (`send_note`), the four flows taking turns 1 s apart; per gated call, on both
   runtimes.
2. In a new process: the resume from the message history (JSON) and, for code, the
   conversation's store in Redis, on the data runtime. Each round pauses both flows in this
   process, then starts a process that resumes each once, timed there, after one agent run
   (PydanticAI's own first-run costs fall on neither side) and, for a worker that has served
   before, one snapshot of another session (the data runtime's start image is opened and
   hashed once per process: a first-touch cost, reported apart).
3. A cell making 100 ungated calls then one gated one: calls made across pause and resume.

Run as a script it is that new process:
    python approval_pydantic_ai.py REDIS_URL FOLDER WARM SAVE
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _util import Paired
from pydantic import TypeAdapter
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.toolsets import FunctionToolset
from tooliscode import Limits, Session
from tooliscode.durable import Keeper, RedisStore, Save
from tooliscode.integrations.pydantic_ai import CodeMode

FRAMEWORK = "PydanticAI"
GATED = 5
"""Gated calls per flow in figure 1."""
CALLS: Counter[str] = Counter()
REQUESTS = TypeAdapter(DeferredToolRequests)
LIMITS = Limits(timeout_s=60)

tools: FunctionToolset[None] = FunctionToolset()


@tools.tool_plain
def ping(n: int) -> int:
    """An ungated call."""
    CALLS["ping"] += 1
    return n


@tools.tool_plain(requires_approval=True)
def send_email(to: str, body: str) -> str:
    """Email a customer (a person approves each one)."""
    CALLS["send_email"] += 1
    return f"sent to {to}"


@tools.tool_plain
def send_note(to: str, body: str) -> str:
    """The same as `send_email`, ungated: the baseline a pause is measured against."""
    CALLS["send_note"] += 1
    return f"sent to {to}"


def _returns(messages: list[Any]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart)]


def code_model(code: str) -> FunctionModel:
    """Writes `code` once, then answers with what it printed."""
    def respond(messages: list[Any], info: Any) -> ModelResponse:
        done = _returns(messages)
        if done:
            return ModelResponse(parts=[TextPart(str(done[-1].content))])
        return ModelResponse(parts=[ToolCallPart("run_python", {"code": code})])
    return FunctionModel(respond)


def direct_model(emails: int, tool: str = "send_email") -> FunctionModel:
    """Calls `tool` itself, one email per turn, `emails` times, then answers."""
    def respond(messages: list[Any], info: Any) -> ModelResponse:
        sent = len(_returns(messages))
        if sent >= emails:
            return ModelResponse(parts=[TextPart(f"{sent} sent")])
        return ModelResponse(parts=[ToolCallPart(tool, {"to": f"c{sent}", "body": "late"})])
    return FunctionModel(respond)


def emails_code(emails: int, tool: str = "send_email") -> str:
    return f"print([{tool}(to=f'c{{i}}', body='late') for i in range({emails})])"


def code_agent(code: str, code_mode: CodeMode) -> Agent:
    return Agent(code_model(code), toolsets=[tools], capabilities=[code_mode],
                 output_type=[str, DeferredToolRequests])


def direct_agent(emails: int, tool: str = "send_email") -> Agent:
    return Agent(direct_model(emails, tool), toolsets=[tools],
                 output_type=[str, DeferredToolRequests])


async def resume(agent: Agent, result: Any) -> Any:
    return await agent.run(message_history=result.all_messages(),
                           deferred_tool_results=result.output.build_results(approve_all=True))


async def to_the_end(agent: Agent) -> tuple[Any, int]:
    """Run, approving every pause, until the run answers; the pauses it made."""
    result, pauses = await agent.run("email the late customers"), 0
    while isinstance(result.output, DeferredToolRequests):
        pauses += 1
        result = await resume(agent, result)
    return result, pauses


async def per_call(runtime: str, rounds: int, pause_s: float) -> Paired:
    """Figure 1: seconds per gated call, code then direct, each beside the same flow with an
    ungated twin of the tool (what a pause adds, not what a code turn costs), the four flows
    taking turns."""
    code_mode = CodeMode(limits=LIMITS, runtime=runtime)
    flows = {("ours", True): code_agent(emails_code(GATED), code_mode),
             ("ours", False): code_agent(emails_code(GATED, "send_note"), code_mode),
             ("direct", True): direct_agent(GATED),
             ("direct", False): direct_agent(GATED, "send_note")}
    measured = Paired()
    try:
        await to_the_end(flows["ours", True])  # the first run starts the spare the timed runs take
        for _ in range(rounds):
            took: dict[tuple[str, bool], float] = {}
            for (side, gated), agent in flows.items():
                await asyncio.sleep(pause_s)
                sent, started = CALLS["send_email"], time.perf_counter()
                result, pauses = await to_the_end(agent)
                took[side, gated] = (time.perf_counter() - started) / GATED
                assert pauses == (GATED if gated else 0), result.output
                assert CALLS["send_email"] - sent == (GATED if gated else 0), result.output
            measured.add(took["ours", True], took["direct", True], took["ours", False],
                         took["direct", False])
    finally:
        code_mode.close()
    return measured


async def pause_both(redis_url: str, folder: Path) -> None:
    """Both flows paused at their one email, their state saved in `folder` (and Redis)."""
    code_mode = CodeMode(scope="conversation", store=RedisStore(redis_url), limits=LIMITS,
                         runtime="data")
    try:
        for side, agent in (("ours", code_agent(emails_code(1), code_mode)),
                            ("direct", direct_agent(1))):
            result = await agent.run("email the late customer")
            assert isinstance(result.output, DeferredToolRequests), result.output
            (folder / f"{side}.history.json").write_bytes(
                ModelMessagesTypeAdapter.dump_json(result.all_messages()))
            (folder / f"{side}.requests.json").write_bytes(REQUESTS.dump_json(result.output))
    finally:
        code_mode.close()


async def resume_here(redis_url: str, folder: Path, warm: bool,
                      save: Save = "before_answer") -> dict[str, float]:
    """In the new process: each flow resumed once from its saved state, timed (the
    conversation stored before the answer goes, or, with "after_answer_lossy", after)."""
    await Agent(FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("hi")]))).run("warm")
    if warm:
        with Session([], runtime="data") as other:
            other.snapshot()
    code_mode = CodeMode(scope="conversation", store=Keeper(RedisStore(redis_url), save=save),
                         limits=LIMITS, runtime="data")
    found: dict[str, float] = {}
    try:
        for side, agent in (("direct", direct_agent(1)),
                            ("ours", code_agent(emails_code(1), code_mode))):
            history = ModelMessagesTypeAdapter.validate_json(
                (folder / f"{side}.history.json").read_bytes())
            requests = REQUESTS.validate_json((folder / f"{side}.requests.json").read_bytes())
            started = time.perf_counter()
            result = await agent.run(message_history=history,
                                     deferred_tool_results=requests.build_results(
                                         approve_all=True))
            found[f"{side}_s"] = time.perf_counter() - started
            assert "sent" in result.output, result.output
    finally:
        code_mode.close()
    return found


def new_process(redis_url: str, rounds: int, warm: bool,
                save: Save = "before_answer") -> tuple[float, float]:
    """Figure 2: median seconds of a resume in a new process, code then direct."""
    times: dict[str, list[float]] = {"ours_s": [], "direct_s": []}
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(pause_both(redis_url, Path(folder)))
            done = subprocess.run([sys.executable, __file__, redis_url, folder, str(int(warm)),
                                   save], capture_output=True, text=True, timeout=300,
                                  check=True)
        found = json.loads(done.stdout.strip().splitlines()[-1])
        for key in times:
            times[key].append(found[key])
    return statistics.median(times["ours_s"]), statistics.median(times["direct_s"])


async def calls_across(runtime: str) -> int:
    """Figure 3: the calls a cell of 100 ungated calls and one gated one made in all."""
    code_mode = CodeMode(limits=LIMITS, runtime=runtime)
    code = "total = sum(ping(n=i) for i in range(100))\nprint(total, send_email(to='c', body='b'))"
    CALLS.clear()
    try:
        result, pauses = await to_the_end(code_agent(code, code_mode))
    finally:
        code_mode.close()
    assert pauses == 1 and "4950 sent to c" in result.output, result.output
    return sum(CALLS.values())


if __name__ == "__main__":
    print(json.dumps(asyncio.run(resume_here(sys.argv[1], Path(sys.argv[2]),
                                             sys.argv[3] == "1", sys.argv[4]))))  # type: ignore[arg-type]
