"""The Agents SDK's rows of bench_approval.py: a cell paused at a gated call through the SDK's
own approvals (`result.interruptions`, `state.approve`, `Runner.run(agent, state)`), against
the same flow with `send_email` as a direct `needs_approval` tool, which is the SDK's own
pause and resume.

1. One gated call: the run, its pause and its resume, less the same run with the tool
   ungated, through code and directly, the four runs taking turns; on both runtimes. The
   code tool keeps one conversation's interpreter, so no run boots one.
2. In a new process (a worker that has served before): the resume from `state.to_json()`
   through `RunState.from_json`, for code with the conversation stored in Redis (the cell run
   again from the state before it, its first call answered from the record), on the data
   runtime; each round pauses both flows here, each conversation new to the worker.
3. A cell making 100 ungated calls then one gated one: calls made across pause and resume.

Run as a script it is that worker: python approval_openai_agents.py --worker REDIS_URL
"""

from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from _util import Paired
from agents import Agent, Runner, RunState, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from tooliscode import Limits
from tooliscode.durable import RedisStore
from tooliscode.integrations.openai_agents import CodeModeToolset

FRAMEWORK = "Agents SDK"
HERE = Path(__file__).resolve()
RAN: collections.Counter[str] = collections.Counter()
"""Calls made at the tools, by tool."""


def _send(to: str) -> str:
    """Send an email."""
    RAN["send"] += 1
    return f"sent to {to}"


def _ping(n: int) -> int:
    """An ungated call."""
    RAN["ping"] += 1
    return n


GATED = function_tool(_send, name_override="send_email", needs_approval=True)
PLAIN = function_tool(_send, name_override="send_email")
PING = function_tool(_ping, name_override="ping")


def _toolset(gated: bool, runtime: str, **options: Any) -> CodeModeToolset:
    return CodeModeToolset([GATED if gated else PLAIN, PING], runtime=runtime,
                           limits=Limits(timeout_s=60), **options)


def _conversation(ctx: Any) -> str:
    return ctx.context["conversation"]


def _agent(tools: list[Any], direct: bool, code: str = "send_email(to='ann')",
           resumed: bool = False, call_id: str | None = None) -> Agent:
    """A scripted agent: its model calls `send_email` (direct) or runs `code`, then answers
    "done" (only answers, for a run `resumed` from its state)."""
    call_id = call_id or f"call_{uuid.uuid4().hex[:8]}"
    call = function_call("send_email", {"to": "ann"}, call_id=call_id) if direct else \
        function_call("run_python", {"code": code}, call_id=call_id)
    steps = [[call], ModelStep.respond(lambda _: [assistant_message("done")])]
    return Agent(name="clerk", model=ScriptedModel(steps[1:] if resumed else steps),
                 tools=tools)


async def _flow(agent: Agent) -> Any:
    """Run; while it pauses, approve everything and resume. The last result."""
    result = await Runner.run(agent, "go")
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            state.approve(item)
        result = await Runner.run(agent, state)
    return result


async def _seconds(agent: Agent) -> float:
    started = time.perf_counter()
    await _flow(agent)
    return time.perf_counter() - started


async def _per_call(runtime: str, samples: int) -> Paired:
    measured = Paired()
    with _toolset(True, runtime, conversation="gated") as gated, \
            _toolset(False, runtime, conversation="plain") as plain:
        for i in range(samples + 3):
            turn = [await _seconds(_agent(gated.tools, False)),
                    await _seconds(_agent([GATED], True)),
                    await _seconds(_agent(plain.tools, False)),
                    await _seconds(_agent([PLAIN], True))]
            if i >= 3:  # warm-up: the first cells import, the first runs fill caches
                measured.add(*turn)
    return measured


def per_call(runtime: str, samples: int = 15) -> Paired:
    """Figure 1: what the pause and resume of one gated call add to a run, through code and
    directly (each the gated run less the same run ungated, the four runs taking turns)."""
    set_tracing_disabled(True)
    return asyncio.run(_per_call(runtime, samples))


async def _calls_across(runtime: str) -> int:
    with _toolset(True, runtime) as toolset:
        RAN.clear()
        await _flow(_agent(toolset.tools, False,
                           "total = sum(ping(n=i) for i in range(100))\nsend_email(to='z')"))
        return sum(RAN.values())


def calls_across(runtime: str) -> int:
    """Figure 3: the calls a cell of 100 ungated calls and one gated one makes in all."""
    set_tracing_disabled(True)
    return asyncio.run(_calls_across(runtime))


async def _feed(worker: subprocess.Popen, url: str, samples: int) -> Paired:
    measured = Paired()
    with _toolset(True, "data", conversation=_conversation, store=RedisStore(url)) as toolset:
        for i in range(samples + 2):
            took: dict[str, float] = {}
            for kind in ("code", "direct"):
                key = {"conversation": uuid.uuid4().hex}
                direct = kind == "direct"
                agent = _agent([GATED] if direct else toolset.tools, direct, call_id="call_1")
                if not direct:  # the conversation has a state before the paused cell
                    setup = _agent(toolset.tools, False, "x = list(range(1000))", call_id="c0")
                    await Runner.run(setup, "set up", context=key)
                paused = await Runner.run(agent, "go", context=key)
                worker.stdin.write(json.dumps({"kind": kind,
                                               "state": paused.to_state().to_json()}) + "\n")
                worker.stdin.flush()
                took[kind] = json.loads(worker.stdout.readline())["s"]
            if i >= 2:  # the worker's first restores warm it up
                measured.add(took["code"], took["direct"])
    return measured


def new_process(url: str, samples: int = 15) -> Paired:
    """Figure 2: the seconds a worker process takes to resume a run from its JSON, through
    code and directly; every conversation is new to it."""
    set_tracing_disabled(True)
    worker = subprocess.Popen([sys.executable, str(HERE), "--worker", url],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        return asyncio.run(_feed(worker, url, samples))
    finally:
        worker.stdin.close()
        worker.wait(60)


async def _worker(url: str) -> None:
    """The other process: resume each run it is sent, and say how long that took."""
    with _toolset(True, "data", conversation=_conversation, store=RedisStore(url)) as toolset:
        for line in sys.stdin:
            job = json.loads(line)
            direct = job["kind"] == "direct"
            agent = _agent([GATED] if direct else toolset.tools, direct, resumed=True,
                           call_id="call_1")
            started = time.perf_counter()
            state = await RunState.from_json(agent, job["state"])
            for item in state.get_interruptions():
                state.approve(item)
            result = await Runner.run(agent, state)
            took = time.perf_counter() - started
            assert not result.interruptions and result.final_output == "done", result
            print(json.dumps({"s": took}), flush=True)


if __name__ == "__main__":
    set_tracing_disabled(True)
    asyncio.run(_worker(sys.argv[2]))
