"""Runs inside pydantic-ai-harness's own virtual environment (bench_peers.py makes it, with
tooliscode installed there too) and measures the given sides with the same code and the same
PydanticAI version: the harness's `CodeMode` on Monty, our `CodeModeToolset` (on the default
runtime, or on `data` as "ours_data"), a plain tool that runs nothing (PydanticAI's own
share), or several taking turns. Prints one JSON object (per side).

    python driver.py '{"sides": ["monty", "ours"], "runs": 20, "pause_s": 1.0, "calls": 100}'

With "blocks": n, the sides' `print(1)` runs are timed back to back instead (`back_to_back`).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time

from agent_runs import OneCall, Side, get_order, measure
from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset


def monty_agent(model: object) -> Agent:
    from pydantic_ai_harness import CodeMode

    return Agent(model, toolsets=[FunctionToolset([get_order])],
                 capabilities=[CodeMode(max_tool_calls=100_000)])


def our_agent(model: object) -> Agent:
    from tooliscode.integrations.pydantic_ai import CodeModeToolset

    return Agent(model, toolsets=[CodeModeToolset(FunctionToolset([get_order]))])


def our_data_agent(model: object) -> Agent:
    """Ours on the data runtime, once its start image is ready (made on first use)."""
    from tooliscode import Session
    from tooliscode.integrations.pydantic_ai import CodeModeToolset
    from tooliscode.runtime import runtime_named

    runtime = runtime_named("data")
    with Session([], runtime=runtime):
        pass
    runtime.images.wait(300)
    return Agent(model, toolsets=[CodeModeToolset(FunctionToolset([get_order]), runtime=runtime)])


def run_python(code: str) -> str:
    """Runs nothing: what PydanticAI's own run costs with one plain tool call."""
    return "1"


def plain_agent(model: object) -> Agent:
    return Agent(model, toolsets=[FunctionToolset([run_python])])


SIDES = {
    # Monty's sandboxed tools are async functions: the code awaits each call.
    "monty": Side(monty_agent, "run_code", prefix="await "),
    "ours": Side(our_agent, "run_python"),
    "ours_data": Side(our_data_agent, "run_python"),
    "plain": Side(plain_agent, "run_python", calls_tools=False),
}


WARM_RUNS = 3
"""Runs at the start of each block that are not timed: the side before left this side's next
interpreter time to get ready, which back to back it does not have."""


async def back_to_back(sides: dict[str, Side], runs: int, blocks: int) -> dict[str, dict]:
    """Per side: the median wall time of a `print(1)` run, runs back to back. The sides take
    turns by blocks of `runs` timed runs, so a shared machine whose load drifts over the
    minutes weighs on every side alike (timed one side after the other, the sides of one
    figure could see different loads)."""
    scripts = {name: OneCall(side.tool, "print(1)") for name, side in sides.items()}
    agents = {name: side.make_agent(scripts[name].model) for name, side in sides.items()}
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(blocks):
        for name, agent in agents.items():
            for _ in range(WARM_RUNS):
                await agent.run("go")
            for _ in range(runs):
                start = time.perf_counter()
                await agent.run("go")
                samples[name].append(time.perf_counter() - start)
    return {name: {"print1_s": statistics.median(samples[name]),
                   "print1_output": str(scripts[name].seen)} for name in sides}


async def main() -> None:
    config = json.loads(sys.argv[1])
    sides = {name: SIDES[name] for name in config["sides"]}
    if config.get("blocks"):
        print(json.dumps(await back_to_back(sides, config["runs"], config["blocks"])))
        return
    print(json.dumps(await measure(sides, config["runs"], config["pause_s"], config["calls"])))


if __name__ == "__main__":
    asyncio.run(main())
