"""Timing PydanticAI agent runs whose scripted model sends one code call, then answers.

Imported by bench_peers.py (our adapter) and by driver.py inside pydantic-ai-harness's
own environment, so both sides are measured by the same code.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
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


async def median_run_s(make_agent: Callable[[FunctionModel], Any], tool: str, code: str,
                       runs: int, pause_s: float) -> tuple[float, Any]:
    """Median wall time of `agent.run` over `runs` runs, `pause_s` apart (the gap a real
    model's latency leaves between runs); and what the code tool returned."""
    script = OneCall(tool, code)
    agent = make_agent(script.model)
    for _ in range(3):
        await agent.run("go")
    samples = []
    for _ in range(runs):
        await asyncio.sleep(pause_s)
        start = time.perf_counter()
        await agent.run("go")
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), script.seen


def loop_code(calls: int, prefix: str = "") -> str:
    return f"for i in range({calls}):\n    {prefix}get_order(order_id=i)\n'ok'"


async def measure(make_agent: Callable[[FunctionModel], Any], tool: str, runs: int,
                  pause_s: float, calls: int, prefix: str = "") -> dict[str, Any]:
    """`print(1)` run time, and the time per tool call: (a run making `calls` calls minus a
    run making none) / `calls`."""
    print1, seen = await median_run_s(make_agent, tool, "print(1)", runs, pause_s)
    found = {"print1_s": print1, "print1_output": str(seen)}
    if calls:
        with_calls, _ = await median_run_s(make_agent, tool, loop_code(calls, prefix), runs,
                                           pause_s)
        without, _ = await median_run_s(make_agent, tool, loop_code(0, prefix), runs, pause_s)
        found["per_call_s"] = max(0.0, with_calls - without) / calls
    return found
