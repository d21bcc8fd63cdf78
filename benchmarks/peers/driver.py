"""Runs inside pydantic-ai-harness's own virtual environment (bench_peers.py makes it, with
tooliscode installed there too) and measures the given sides with the same code and the same
PydanticAI version: the harness's `CodeMode` on Monty, our `CodeModeToolset` (on the default
runtime, or on `data` as "ours_data"), a plain tool that runs nothing (PydanticAI's own
share), or several taking turns. Prints one JSON object (per side).

    python driver.py '{"sides": ["monty", "ours"], "runs": 20, "pause_s": 1.0, "calls": 100}'
"""

from __future__ import annotations

import asyncio
import json
import sys

from agent_runs import Side, get_order, measure
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


async def main() -> None:
    config = json.loads(sys.argv[1])
    sides = {name: SIDES[name] for name in config["sides"]}
    print(json.dumps(await measure(sides, config["runs"], config["pause_s"], config["calls"])))


if __name__ == "__main__":
    asyncio.run(main())
