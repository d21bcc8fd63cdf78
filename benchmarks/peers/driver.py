"""Runs inside pydantic-ai-harness's own virtual environment (bench_peers.py makes it, with
tooliscode installed there too) and measures one side with the same code and the same
PydanticAI version: the harness's `CodeMode` on Monty, or our `CodeModeToolset`. Prints one
JSON object.

    python driver.py '{"side": "monty", "runs": 30, "pause_s": 0.3, "calls": 100}'
"""

from __future__ import annotations

import asyncio
import json
import sys

from agent_runs import get_order, measure
from pydantic_ai import Agent
from pydantic_ai.toolsets import FunctionToolset


def monty_agent(model: object) -> Agent:
    from pydantic_ai_harness import CodeMode

    return Agent(model, toolsets=[FunctionToolset([get_order])],
                 capabilities=[CodeMode(max_tool_calls=100_000)])


def our_agent(model: object) -> Agent:
    from tooliscode.integrations.pydantic_ai import CodeModeToolset

    return Agent(model, toolsets=[CodeModeToolset(FunctionToolset([get_order]))])


async def main() -> None:
    config = json.loads(sys.argv[1])
    if config.get("side", "monty") == "monty":
        # Monty's sandboxed tools are async functions: the code awaits each call.
        found = await measure(monty_agent, "run_code", config["runs"], config["pause_s"],
                              config["calls"], prefix="await ")
    else:
        found = await measure(our_agent, "run_python", config["runs"], config["pause_s"],
                              config["calls"])
    print(json.dumps(found))


if __name__ == "__main__":
    asyncio.run(main())
