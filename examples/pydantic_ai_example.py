"""PydanticAI with code mode: a toolset behind one `run_python` tool.

    python examples/pydantic_ai_example.py

Offline, PydanticAI's `FunctionModel` plays the assistant from a script; with OPENAI_API_KEY
set, a real model does (OPENAI_MODEL picks which). Either way the tools run for real, through
PydanticAI's own tool machinery: arguments are validated, `deps` reach every tool, and a tool
that raises `ModelRetry` makes the code's call raise `ToolError` with its message.
"""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import dataclass

from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.toolsets import FunctionToolset
from tooliscode.integrations.pydantic_ai import CodeModeToolset

_R = random.Random(3)
CATEGORIES = ("audio", "books", "garden", "kitchen", "toys")
PRODUCTS = [{"sku": f"SKU-{i:04d}", "category": _R.choice(CATEGORIES),
             "price": round(_R.uniform(3, 300), 2)} for i in range(2_000)]


@dataclass
class Warehouse:
    """The run's dependencies: which warehouse the tools look at."""

    name: str
    reorder_level: int


inventory: FunctionToolset[Warehouse] = FunctionToolset()


@inventory.tool_plain
def list_products(category: str) -> list[dict]:
    """Every product in one category: sku, category, price."""
    if category not in CATEGORIES:
        raise ModelRetry(f"unknown category {category!r}; categories: {', '.join(CATEGORIES)}")
    return [p for p in PRODUCTS if p["category"] == category]


@inventory.tool
async def stock_level(ctx: RunContext[Warehouse], sku: str) -> dict:
    """Units of one product in stock at the run's warehouse, and whether to reorder."""
    await asyncio.sleep(0.05)  # a slow service: the code asks for many at once
    units = (int(sku[4:]) * 37 + len(ctx.deps.name)) % 60
    return {"sku": sku, "units": units, "warehouse": ctx.deps.name,
            "reorder": units < ctx.deps.reorder_level}


QUESTION = "How many of our pricier kitchen and toy products must be reordered?"
MODEL_CODE = """\
import asyncio
for category in ["kitchen", "toys", "gadgets"]:
    try:
        pricey = [p for p in await list_products(category=category) if p["price"] > 250]
    except ToolError as error:
        print(f"skipped: {error}")
        continue
    levels = await asyncio.gather(*[stock_level(sku=p["sku"]) for p in pricey])
    low = [s["sku"] for s in levels if s["reorder"]]
    print(f"{category}: {len(low)} of {len(pricey)} to reorder at {levels[0]['warehouse']}")
"""


def scripted(messages, info) -> ModelResponse:
    """Writes the code above, then answers with what it printed."""
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"Here is what I found:\n{last.content}")])
    return ModelResponse(parts=[ToolCallPart("run_python", {"code": MODEL_CODE})])


def model() -> object:
    if os.environ.get("OPENAI_API_KEY"):
        return f"openai:{os.environ.get('OPENAI_MODEL', 'gpt-4.1-mini')}"
    return FunctionModel(scripted)


async def main() -> None:
    # --8<-- [start:change]
    agent = Agent(model(), deps_type=Warehouse,
                  toolsets=[CodeModeToolset(inventory)])  # the one-line change
    # --8<-- [end:change]
    result = await agent.run(QUESTION, deps=Warehouse(name="Lyon", reorder_level=15))
    for message in result.all_messages():
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                print(f"--- the model's code ---\n{part.args_as_dict()['code']}")
            elif isinstance(part, ToolReturnPart):
                calls = (part.metadata or {}).get("tool_calls", [])
                failed = sum(not c["ok"] for c in calls)
                print(f"--- what it read back ({part.outcome}; the code made {len(calls)} "
                      f"tool calls, {failed} failed) ---\n{part.content}")
    print(f"=== assistant: {result.output}")
    print(f"usage: {result.usage.requests} model requests, {result.usage.tool_calls} tool calls")


if __name__ == "__main__":
    asyncio.run(main())
