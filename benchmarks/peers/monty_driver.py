"""Runs inside pydantic-ai-harness's own virtual environment (bench_peers.py makes it) and
measures its `CodeMode` on Monty with the same code as ours: prints one JSON object.

    python monty_driver.py '{"runs": 30, "pause_s": 0.3, "calls": 100}'
"""

from __future__ import annotations

import asyncio
import json
import sys

from agent_runs import get_order, measure
from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset
from pydantic_ai_harness import CodeMode


def make_agent(model: object) -> Agent:
    return Agent(model, toolsets=[FunctionToolset([get_order])],
                 capabilities=[CodeMode(max_tool_calls=100_000)])


async def main() -> None:
    config = json.loads(sys.argv[1])
    # Monty's sandboxed tools are async functions: the code awaits each call.
    print(json.dumps(await measure(make_agent, "run_code", config["runs"], config["pause_s"],
                                   config["calls"], prefix="await ")))


if __name__ == "__main__":
    asyncio.run(main())
