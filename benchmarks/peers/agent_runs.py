"""Timing PydanticAI agent runs whose scripted model sends one code call, then answers.

Imported by bench_peers.py (our adapter) and by driver.py inside pydantic-ai-harness's
own environment, so both sides are measured by the same code.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel


def get_order(order_id: int) -> dict:
    """One small order."""
    return {"id": order_id, "status": "paid"}


class OneCall:
    """A FunctionModel script: call `tool` with `code`, then answer; keeps what came back."""

    def __init__(self, tool: str, code: str):
        self.tool, self.code, self.seen = tool, code, None

    def __call__(self, messages: list[Any], info: Any) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            self.seen = last.content
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart(self.tool, {"code": self.code})])

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self)


@dataclass(frozen=True)
class Side:
    """One contender: how to build its agent around a model, its code tool's name, and what
    precedes a tool call in its code (Monty's sandboxed tools are awaited)."""

    make_agent: Callable[[FunctionModel], Any]
    tool: str
    prefix: str = ""
    calls_tools: bool = True
    """False for a baseline whose tool runs no code: it is timed on `print(1)` only."""


async def median_runs(sides: dict[str, Side], code: Callable[[Side], str], runs: int,
                      pause_s: float) -> dict[str, tuple[float, Any]]:
    """Per side: the median wall time of `agent.run` and what its code tool returned.

    The sides take turns, run by run, `pause_s` apart (the gap a real model's latency leaves
    between runs), so a machine that drifts over the minutes drifts under all of them alike.
    """
    scripts = {name: OneCall(side.tool, code(side)) for name, side in sides.items()}
    agents = {name: side.make_agent(scripts[name].model) for name, side in sides.items()}
    for agent in agents.values():
        for _ in range(3):
            await agent.run("go")
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(runs):
        for name, agent in agents.items():
            await asyncio.sleep(pause_s)
            start = time.perf_counter()
            await agent.run("go")
            samples[name].append(time.perf_counter() - start)
    return {name: (statistics.median(samples[name]), scripts[name].seen) for name in sides}


def loop_code(calls: int, prefix: str = "") -> str:
    return f"for i in range({calls}):\n    {prefix}get_order(order_id=i)\n'ok'"


async def measure(sides: dict[str, Side], runs: int, pause_s: float,
                  calls: int) -> dict[str, dict[str, Any]]:
    """Per side: the `print(1)` run time, and the time per tool call: (a run making `calls`
    calls minus a run making none) / `calls`."""
    print1 = await median_runs(sides, lambda side: "print(1)", runs, pause_s)
    found = {name: {"print1_s": s, "print1_output": str(seen)} for name, (s, seen) in
             print1.items()}
    looping = {name: side for name, side in sides.items() if side.calls_tools}
    if calls and looping:
        with_calls = await median_runs(looping, lambda side: loop_code(calls, side.prefix), runs,
                                       pause_s)
        without = await median_runs(looping, lambda side: loop_code(0, side.prefix), runs,
                                    pause_s)
        for name in looping:
            found[name]["per_call_s"] = max(0.0, with_calls[name][0] - without[name][0]) / calls
    return found
