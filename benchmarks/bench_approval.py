"""Approval inside code mode: a cell paused at a gated inner call and continued through each
framework's own approval mechanism.

For each framework, against the same flow with a direct (non-code) gated tool, which is the
framework's own pause and resume:
1. pause then resume in this process, per gated call, beyond the framework's own, on both
   runtimes (target <= 5 ms);
2. resume in a new process from the framework's serialized state over Redis, on the data
   runtime, beyond the framework's own resume from the same state (target <= 50 ms);
3. a cell making 100 ungated calls and one gated call: the calls made in total across the pause
   and the resume (exactly 101: nothing runs twice).

Each framework's rows come from one function (`FRAMEWORKS`), so one framework can be run
alone: python benchmarks/bench_approval.py --only openai_agents
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import json
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _util import Row, load, machine, table, with_redis

HERE = Path(__file__).resolve()
RAN: collections.Counter[str] = collections.Counter()
"""Calls made at the tools, by tool."""

PER_CALL_TARGET_S = 0.005
NEW_PROCESS_TARGET_S = 0.050
RUNTIMES = ("default", "data")


@dataclass
class Paired:
    """Seconds measured in turns, sample by sample: through code (`ours`) and the framework's
    own way (`theirs`), each less its baseline when one is given (the same flow without the
    pause, measured in the same turn). On a shared machine the medians move with the load;
    the best of each series says what the flows cost undisturbed."""

    ours: list[float] = field(default_factory=list)
    theirs: list[float] = field(default_factory=list)
    ours_base: list[float] = field(default_factory=list)
    theirs_base: list[float] = field(default_factory=list)

    def add(self, ours: float, theirs: float, ours_base: float = 0.0,
            theirs_base: float = 0.0) -> None:
        for series, value in ((self.ours, ours), (self.theirs, theirs),
                              (self.ours_base, ours_base), (self.theirs_base, theirs_base)):
            series.append(value)

    def _net(self, pick: Callable[[list[float]], float]) -> tuple[float, float]:
        return (pick(self.ours) - pick(self.ours_base),
                pick(self.theirs) - pick(self.theirs_base))

    @property
    def extra(self) -> float:
        """The median of the paired differences."""
        return statistics.median(o - ob - (t - tb) for o, t, ob, tb in zip(
            self.ours, self.theirs, self.ours_base, self.theirs_base))

    def text(self) -> str:
        ours, theirs = self._net(statistics.median)
        best_ours, best_theirs = self._net(min)
        return (f"{ours * 1e3:.1f} ms vs {theirs * 1e3:.1f} ms direct "
                f"({self.extra * 1e3:+.1f} ms; best of each: {best_ours * 1e3:.1f} vs "
                f"{best_theirs * 1e3:.1f} ms, {(best_ours - best_theirs) * 1e3:+.1f} ms), "
                f"{load()}")


def per_call_row(framework: str, runtime: str, measured: Paired) -> Row:
    """Figure 1: pause then resume of one gated call, code against direct."""
    return Row(f"{framework}: pause then resume in process, per gated call, beyond the "
               f"framework's own ({runtime} runtime)", measured.text(), "<= 5 ms",
               "ok" if measured.extra <= PER_CALL_TARGET_S else "over")


def new_process_row(framework: str, measured: Paired) -> Row:
    """Figure 2: resume in another process from serialized state, code against direct."""
    return Row(f"{framework}: resume in a new process from serialized state over Redis, "
               "beyond the framework's own (data runtime)", measured.text(), "<= 50 ms",
               "ok" if measured.extra <= NEW_PROCESS_TARGET_S else "over")


def calls_row(framework: str, runtime: str, calls: int) -> Row:
    """Figure 3: the calls a cell of 100 ungated calls and one gated call made in all."""
    return Row(f"{framework}: calls made across pause and resume by a cell of 100 ungated "
               f"calls and one gated ({runtime} runtime)", str(calls), "exactly 101",
               "ok" if calls == 101 else "over")


# -- OpenAI Agents SDK ----------------------------------------------------------------------
#
# A run whose model calls one tool that needs approval: paused, approved, resumed. Through
# the code tool (a cell calling the gated tool) and directly (the model calling it); each
# measured as the same run with the tool ungated subtracted, so what remains is the pause and
# the resume. The code tool keeps one conversation's interpreter, so no run boots one.


@functools.cache
def _oa() -> Any:
    """The Agents SDK pieces, imported on first use (other frameworks need not install it)."""
    from agents import Agent, Runner, RunState, function_tool, set_tracing_disabled
    from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)

    def send(to: str) -> str:
        """Send an email."""
        RAN["send"] += 1
        return f"sent to {to}"

    def ping(n: int) -> int:
        """An ungated call."""
        RAN["ping"] += 1
        return n

    def answer(call: Any) -> list[Any]:
        return [assistant_message("done")]

    class OA:
        pass

    oa = OA()
    oa.Agent, oa.Runner, oa.RunState = Agent, Runner, RunState
    oa.gated = function_tool(send, name_override="send_email", needs_approval=True)
    oa.plain = function_tool(send, name_override="send_email")
    oa.ping = function_tool(ping)

    def model(name: str, arguments: dict, call_id: str, resumed: bool = False) -> Any:
        steps = [[function_call(name, arguments, call_id=call_id)], ModelStep.respond(answer)]
        return ScriptedModel(steps[1:] if resumed else steps)

    oa.model = model
    return oa


def _oa_toolset(gated: bool, runtime: str, **options: Any) -> Any:
    from tooliscode import Limits
    from tooliscode.integrations.openai_agents import CodeModeToolset

    oa = _oa()
    return CodeModeToolset([oa.gated if gated else oa.plain, oa.ping], runtime=runtime,
                           limits=Limits(timeout_s=60), **options)


def _oa_agent(tools: list[Any], direct: bool, code: str = "send_email(to='ann')",
              resumed: bool = False, call_id: str | None = None) -> Any:
    oa = _oa()
    call_id = call_id or f"call_{uuid.uuid4().hex[:8]}"
    model = oa.model("send_email", {"to": "ann"}, call_id, resumed) if direct else \
        oa.model("run_python", {"code": code}, call_id, resumed)
    return oa.Agent(name="clerk", model=model, tools=tools)


async def _oa_flow(agent: Any) -> Any:
    """Run; while it pauses, approve everything and resume. The last result."""
    oa = _oa()
    result = await oa.Runner.run(agent, "go")
    while result.interruptions:
        state = result.to_state()
        for item in result.interruptions:
            state.approve(item)
        result = await oa.Runner.run(agent, state)
    return result


async def _oa_seconds(agent: Any) -> float:
    started = time.perf_counter()
    await _oa_flow(agent)
    return time.perf_counter() - started


async def _oa_in_process(runtime: str, samples: int) -> tuple[Paired, int]:
    """The seconds the pause and resume of one gated call add to a run, through code and
    directly (each the gated run less the same run ungated, the four runs taking turns), and
    the calls a cell of 100 ungated calls and one gated made in all."""
    oa = _oa()
    measured = Paired()
    with _oa_toolset(True, runtime, conversation="gated") as gated, \
            _oa_toolset(False, runtime, conversation="plain") as plain:
        for i in range(samples + 3):
            turn = [await _oa_seconds(_oa_agent(gated.tools, False)),
                    await _oa_seconds(_oa_agent([oa.gated], True)),
                    await _oa_seconds(_oa_agent(plain.tools, False)),
                    await _oa_seconds(_oa_agent([oa.plain], True))]
            if i >= 3:  # warm-up: the first cells import, the first runs fill caches
                measured.add(*turn)
        RAN.clear()
        await _oa_flow(_oa_agent(gated.tools, False, "total = sum(ping(n=i) for i in range(100))"
                                                     "\nsend_email(to='z')"))
        calls = sum(RAN.values())
    return measured, calls


def _oa_new_process(samples: int) -> Paired | None:
    """Median seconds a new process takes to resume a run from its JSON: through code (the
    cell run again from the conversation's state in Redis, its first call answered from the
    record) and directly."""
    def measure(url: str) -> list[Any]:
        worker = subprocess.Popen([sys.executable, str(HERE), "--oa-worker", url],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            return [asyncio.run(_oa_feed(worker, url, samples))]
        finally:
            worker.stdin.close()
            worker.wait(60)

    found = with_redis("new process", measure)
    return found[0] if isinstance(found[0], Paired) else None


def _conversation(ctx: Any) -> str:
    return ctx.context["conversation"]


async def _oa_feed(worker: subprocess.Popen, url: str, samples: int) -> Paired:
    from tooliscode.durable import RedisStore

    oa = _oa()
    measured = Paired()
    with _oa_toolset(True, "data", conversation=_conversation,
                     store=RedisStore(url)) as toolset:
        for i in range(samples + 2):
            took: dict[str, float] = {}
            for kind in ("code", "direct"):
                key = {"conversation": uuid.uuid4().hex}
                direct = kind == "direct"
                agent = _oa_agent([oa.gated] if direct else toolset.tools, direct,
                                  call_id="call_1")
                if not direct:  # the conversation has a state before the paused cell
                    setup = _oa_agent(toolset.tools, False, "x = list(range(1000))", call_id="c0")
                    await oa.Runner.run(setup, "set up", context=key)
                paused = await oa.Runner.run(agent, "go", context=key)
                worker.stdin.write(json.dumps({"kind": kind,
                                               "state": paused.to_state().to_json()}) + "\n")
                worker.stdin.flush()
                took[kind] = json.loads(worker.stdout.readline())["s"]
            if i >= 2:  # the worker's first restores warm it up
                measured.add(took["code"], took["direct"])
    return measured


async def _oa_worker(url: str) -> None:
    """The other process: resume each run it is sent, and say how long that took."""
    from tooliscode.durable import RedisStore

    oa = _oa()
    with _oa_toolset(True, "data", conversation=_conversation,
                     store=RedisStore(url)) as toolset:
        for line in sys.stdin:
            job = json.loads(line)
            direct = job["kind"] == "direct"
            agent = _oa_agent([oa.gated] if direct else toolset.tools, direct, resumed=True,
                              call_id="call_1")
            started = time.perf_counter()
            state = await oa.RunState.from_json(agent, job["state"])
            for item in state.get_interruptions():
                state.approve(item)
            result = await oa.Runner.run(agent, state)
            took = time.perf_counter() - started
            assert not result.interruptions and result.final_output == "done", result
            print(json.dumps({"s": took}), flush=True)


def openai_agents_rows(samples: int = 15) -> list[Row]:
    rows = []
    for runtime in RUNTIMES:
        measured, calls = asyncio.run(_oa_in_process(runtime, samples))
        rows += [per_call_row("Agents SDK", runtime, measured),
                 calls_row("Agents SDK", runtime, calls)]
    found = _oa_new_process(samples)
    if found is not None:
        rows.append(new_process_row("Agents SDK", found))
    return rows


FRAMEWORKS: dict[str, Callable[[], list[Row]]] = {
    "openai_agents": openai_agents_rows,
}
"""Each framework's rows, by the name `--only` takes."""


def rows(only: list[str] | None = None) -> list[Row]:
    return [row for name, fn in FRAMEWORKS.items() if not only or name in only for row in fn()]


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--oa-worker":
        asyncio.run(_oa_worker(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(FRAMEWORKS),
                        help="the frameworks to measure (default: all)")
    args = parser.parse_args()
    print(machine())
    print(table(rows(args.only)))


if __name__ == "__main__":
    main()
