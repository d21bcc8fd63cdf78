"""Microsoft Agent Framework and smolagents: what each adapter adds per tool call, and
smolagents' `CodeAgent` on our executor against its own `LocalPythonExecutor`.

1. One inner tool call from sandboxed code through each adapter, split as bench_peers.py
   splits the other adapters' calls: the sandbox round trip alone (the function registered
   straight in a `Session`, without the host-side argument check a plain function's `Tool`
   has, since the adapters leave that to the framework), the framework's own way of calling
   the tool, timed outside any
   sandbox (Agent Framework: a `FunctionInvocationContext` and `FunctionTool.invoke`;
   smolagents: calling the `Tool`, as its executor does), and the adapter's own share,
   measured against the sandbox calling that dispatch straight, with no adapter between.
2. A `CodeAgent` run whose code is `print(1)` (then `final_answer`), scripted, on our
   `WasmExecutor` and on `LocalPythonExecutor`, the two agents taking turns run by run.
3. The 10,000-dict filter of bench_core.py and a compute loop, in both executors, beside
   native CPython.
4. Limits: a runaway loop, a single long call and a memory bomb. Ours stops each; smolagents'
   executor runs in a child process with an address-space limit of its own and a wall-time
   kill (peers/smolagents_limits.py), and the table says what it did.

Run: python benchmarks/bench_frameworks.py [--calls 200] [--rounds 9] [--runs 20]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "peers"))

from _util import Row, machine, median_s, table  # noqa: E402
from agent_framework import AgentSession, FunctionInvocationContext, FunctionTool  # noqa: E402
from agent_framework import tool as af_tool  # noqa: E402
from bench_core import FILTER_CODE, ORDERS, native_filter  # noqa: E402
from bench_peers import (  # noqa: E402
    Probe,
    adapter_rows,
    guest_loop,
    guest_per_call,
    ms,
    session_probe,
)
from smolagents import ChatMessage, CodeAgent, LocalPythonExecutor, MessageRole, Model  # noqa: E402
from smolagents import tool as smol_tool  # noqa: E402
from tooliscode import Limits, Session, Tool, as_tool  # noqa: E402
from tooliscode.integrations.agent_framework import ExecuteCodeTool  # noqa: E402
from tooliscode.integrations.smolagents import WasmExecutor  # noqa: E402

HERE = Path(__file__).resolve().parent
COMPUTE = ("total = 0\nfor i in range(200_000):\n    total += i * i % 7\nprint(total)")
RUNAWAY = "while True:\n    pass"
LONG_CALL = "sum(range(10**13))"
BOMB = "blocks = []\nwhile True:\n    blocks.append('x' * 2**20)"
KILL_S, THEIR_MEMORY, OUR_MEMORY = 60, 3 * 2**30, 256 * 2**20
LIMIT_CASES = (("a runaway loop (`while True: pass`)", RUNAWAY, 2),
               ("one long call (`sum(range(10**13))`)", LONG_CALL, 2),
               ("a memory bomb (1 MiB strings until memory runs out)", BOMB, 30))
"""What each executor is given: the code, and the timeout both executors get (30 s for the
bomb, smolagents' default, so that memory runs out first)."""


def get_order(order_id: int) -> dict:
    """One small order."""
    return {"id": order_id, "status": "paid"}


async def aget_order(order_id: int) -> dict:
    """One small order (async)."""
    return {"id": order_id, "status": "paid"}


@smol_tool
def smol_get_order(order_id: int) -> dict:
    """One small order.

    Args:
        order_id: The order's number.
    """
    return {"id": order_id, "status": "paid"}


@smol_tool
def list_orders() -> list:
    """All orders (10,000 dicts)."""
    return ORDERS


# -- 1. per call --------------------------------------------------------------------------------

def af_probe(tool: ExecuteCodeTool, code: str) -> Probe:
    """The code tool as the agent's function loop calls it, with a context of the run."""
    session = AgentSession()

    async def probe() -> float:
        ctx = FunctionInvocationContext(function=tool, arguments={"code": code},
                                        session=session)
        contents = await tool.invoke(arguments={"code": code}, context=ctx)
        return guest_per_call(contents[0].text)
    return probe


def af_dispatch_probe(fn: FunctionTool, n: int) -> Probe:
    """The framework's own cost to call a tool as the adapter asks it to, no sandbox: a
    `FunctionInvocationContext` and `FunctionTool.invoke` (arguments validated; a sync tool
    runs on a worker thread, as in the agent's own loop)."""
    session = AgentSession()

    async def probe() -> float:
        start = time.perf_counter()
        for i in range(n):
            args = {"order_id": i}
            ctx = FunctionInvocationContext(function=fn, arguments=args, session=session)
            await fn.invoke(arguments=args, context=ctx, skip_parsing=True, tool_call_id="c")
        return (time.perf_counter() - start) / n
    return probe


def af_direct(fn: FunctionTool) -> Tool:
    """The sandbox calling the framework's dispatch straight, as the adapter does but
    without it: the baseline the adapter's own share is measured against."""
    session = AgentSession()

    async def direct(**args: Any) -> Any:
        ctx = FunctionInvocationContext(function=fn, arguments=args, session=session)
        return await fn.invoke(arguments=args, context=ctx, skip_parsing=True, tool_call_id="c")

    return Tool(name=fn.name, parameters=fn.parameters(), function=direct)


def smol_probe(executor: WasmExecutor, code: str) -> Probe:
    async def probe() -> float:
        return guest_per_call(executor(code).logs)
    return probe


def smol_dispatch_probe(n: int) -> Probe:
    """smolagents' own cost to call a tool: the `Tool` called with keyword arguments, as its
    executors call it."""
    async def probe() -> float:
        start = time.perf_counter()
        for i in range(n):
            smol_get_order(order_id=i)
        return (time.perf_counter() - start) / n
    return probe


async def per_call(n: int, rounds: int) -> dict[tuple[str, str], float]:
    """Best-of-`rounds` seconds per call, the probes taking turns round by round."""
    probes: dict[tuple[str, str], Probe] = {}
    closing: list[Callable[[], Any]] = []
    for kind, fn in (("sync", get_order), ("async", aget_order)):
        code = guest_loop(fn, n)
        # Declared as the adapters declare tools: the framework validates the arguments (its
        # dispatch), so the sandbox does not (a plain function's Tool would, with pydantic).
        session = Session([dataclasses.replace(as_tool(fn), validate=None)])
        closing.append(session.close)
        probes["sandbox", kind] = session_probe(session, code, kind)
        framework_tool = af_tool(fn)
        execute = ExecuteCodeTool(tools=[framework_tool])
        closing.append(execute.close)
        probes["Agent Framework", kind] = af_probe(execute, code)
        probes["Agent Framework dispatch", kind] = af_dispatch_probe(framework_tool, n)
        direct = Session([af_direct(framework_tool)])
        closing.append(direct.close)
        probes["Agent Framework direct", kind] = session_probe(direct, code, "async")
    direct = Session([Tool(name="get_order", parameters=as_tool(get_order).parameters,
                           function=lambda **args: smol_get_order(**args))])
    closing.append(direct.close)
    executor = WasmExecutor()
    executor.send_tools({"get_order": smol_get_order})
    closing.append(executor.cleanup)
    probes["smolagents", "sync"] = smol_probe(executor, guest_loop(get_order, n))
    probes["smolagents dispatch", "sync"] = smol_dispatch_probe(n)
    probes["smolagents direct", "sync"] = session_probe(direct, guest_loop(get_order, n), "sync")
    samples: dict[tuple[str, str], list[float]] = {key: [] for key in probes}
    try:
        for round_ in range(rounds + 1):
            for key, probe in probes.items():
                seconds = await probe()
                if round_:  # the first round warms up
                    samples[key].append(seconds)
    finally:
        for close in closing:
            close()
    return {key: min(values) for key, values in samples.items()}


def per_call_rows(best: dict[tuple[str, str], float]) -> list[Row]:
    # The Agent Framework calls every tool from its event loop: inner calls take the sandbox's
    # async route. smolagents runs its executor synchronously: the sync route.
    return [*adapter_rows(best, "Agent Framework", "sync", "async"),
            *adapter_rows(best, "Agent Framework", "async", "async"),
            *adapter_rows(best, "smolagents", "sync", "sync")]


# -- 2. a CodeAgent run ----------------------------------------------------------------------------

class Scripted(Model):
    """Each run: `print(1)`, then `final_answer(1)`."""

    def __init__(self) -> None:
        super().__init__(model_id="scripted")
        self.step = 0

    def generate(self, messages: list[Any], stop_sequences: Any = None,
                 **kwargs: Any) -> ChatMessage:
        code = ("print(1)", "final_answer(1)")[self.step % 2]
        self.step += 1
        return ChatMessage(role=MessageRole.ASSISTANT,
                           content=f"Thought: go.\n<code>\n{code}\n</code>")


def agent_runs(runs: int) -> dict[str, float]:
    """Median (and best) seconds of a `CodeAgent.run` on each executor, the two taking
    turns."""
    ours = WasmExecutor()
    agents = {"ours": CodeAgent(tools=[smol_get_order], model=Scripted(), executor=ours,
                                verbosity_level=-1),
              "local": CodeAgent(tools=[smol_get_order], model=Scripted(), verbosity_level=-1)}
    samples: dict[str, list[float]] = {name: [] for name in agents}
    try:
        for round_ in range(runs + 3):
            if round_ == 3:  # three runs each to warm up; then the warm pool, which refills
                time.sleep(1.5)  # in the background, is full and no longer competes
            for name, agent in agents.items():
                start = time.perf_counter()
                assert agent.run("go") == 1
                if round_ >= 3:
                    samples[name].append(time.perf_counter() - start)
        printed = agents["ours"].memory.steps[1].observations
        assert printed.startswith("Execution logs:\n1\n"), printed
    finally:
        ours.cleanup()
    return {**{name: sorted(values)[len(values) // 2] for name, values in samples.items()},
            **{f"{name} best": min(values) for name, values in samples.items()}}


# -- 3. filter and compute -------------------------------------------------------------------------

def workloads(repeat: int = 3) -> list[Row]:
    ours, local = WasmExecutor(limits=Limits(timeout_s=120)), LocalPythonExecutor([])
    for executor in (ours, local):
        executor.send_variables({})
        executor.send_tools({"list_orders": list_orders})
    native_compute = lambda: exec(COMPUTE, {"print": lambda *a: None})  # noqa: E731
    rows = []
    try:
        for label, code, native in (("filter a 10,000-dict tool result", FILTER_CODE,
                                     native_filter),
                                    ("compute loop (200,000 iterations)", COMPUTE,
                                     native_compute)):
            times = {name: median_s(run, repeat, warmup=1) for name, run in (
                ("ours", lambda c=code: ours(c)), ("local", lambda c=code: local(c)),
                ("native", native))}
            assert ours(code).logs.split()[0] == local(code).logs.split()[0]  # the same answer
            rows.append(Row(f"smolagents executors, {label}: ours / LocalPythonExecutor / "
                            "native CPython",
                            f"{ms(times['ours'])} / {ms(times['local'])} / {ms(times['native'])}"
                            f" (theirs {times['local'] / times['ours']:.1f}x ours)", "-",
                            "info"))
    finally:
        ours.cleanup()
    return rows


# -- 4. limits -------------------------------------------------------------------------------------

def ours_under(code: str, limits: Limits) -> str:
    """How our executor ended `code`, after how long, and whether the next step still runs."""
    executor = WasmExecutor(limits=limits)
    executor.send_tools({})
    try:
        executor("kept = 1")
        start = time.perf_counter()
        try:
            executor(code)
            ended = "finished"
        except Exception as exc:  # noqa: BLE001 - the step's error is the finding
            text = str(exc)
            ended = next((e for e in ("TimeoutError", "MemoryError") if e in text), text[:80])
        took = time.perf_counter() - start
        kept = executor("'kept' in globals()").output
        return (f"stopped: {ended} after {took:.2f} s; the next step runs "
                f"({'variables kept' if kept == 'True' else 'new interpreter, said so'})")
    finally:
        executor.cleanup()


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (THEIR_MEMORY, THEIR_MEMORY))


def theirs_under(code: str, timeout_s: int) -> str:
    """How smolagents' executor ended `code`, in a child process that has its own limits."""
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, str(HERE / "peers" / "smolagents_limits.py"),
                               code, str(timeout_s)], capture_output=True, text=True,
                              timeout=KILL_S, preexec_fn=_limit_memory)
    except subprocess.TimeoutExpired:
        return (f"still running after {KILL_S} s (its {timeout_s} s timeout did not return): "
                "the benchmark killed it")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines or "ended" not in lines[-1]:
        return (f"the process died after {time.perf_counter() - start:.1f} s (exit "
                f"{done.returncode}): {done.stderr.strip()[-200:]}")
    found = lines[-1]
    return (f"{found['ended']} after {found['seconds']:.2f} s (peak RSS "
            f"{found['peak_rss'] / 2**30:.2f} GiB): {' '.join(found['message'].split())[:120]}")


def limit_rows() -> list[Row]:
    rows = []
    for label, code, timeout_s in LIMIT_CASES:
        outcome = ours_under(code, Limits(timeout_s=timeout_s, memory_bytes=OUR_MEMORY))
        rows.append(Row(f"smolagents executors, {label}: ours ({timeout_s} s, "
                        f"{OUR_MEMORY >> 20} MiB)", outcome, "stopped",
                        "ok" if outcome.startswith("stopped") else "over"))
        rows.append(Row(f"... LocalPythonExecutor (timeout_seconds={timeout_s}; the child "
                        f"process limited to {THEIR_MEMORY >> 30} GiB by this benchmark)",
                        theirs_under(code, timeout_s), "-", "info"))
    return rows


def rows(calls: int = 200, rounds: int = 9, runs: int = 20) -> list[Row]:
    found = per_call_rows(asyncio.run(per_call(calls, rounds)))
    times = agent_runs(runs)
    found.append(Row("smolagents CodeAgent run (print(1), then final_answer), turn about: "
                     "ours / LocalPythonExecutor",
                     f"median {ms(times['ours'])} / {ms(times['local'])} = "
                     f"{times['ours'] / times['local']:.2f}x; best {ms(times['ours best'])} / "
                     f"{ms(times['local best'])}", "-", "info"))
    found += workloads()
    found += limit_rows()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="tool calls per timed loop")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of the per-call probes")
    parser.add_argument("--runs", type=int, default=20, help="CodeAgent runs per executor")
    args = parser.parse_args()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f} at the start\n")
    print(table(rows(args.calls, args.rounds, args.runs)))
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
