"""The OpenAI Agents SDK with code mode: an agent's function tools behind one `run_python` tool.

    python examples/openai_agents_example.py

Offline, the SDK's own scripted model plays the assistant; with OPENAI_API_KEY set, a real
model does. Either way the tools run for real, and the trace (kept in memory here) shows each call
the code made as a function span inside the code tool's span.
"""

from __future__ import annotations

import asyncio
import json
import os

from agents import Agent, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from agents.tracing import TracingProcessor, set_trace_processors
from tooliscode.integrations.openai_agents import CodeModeToolset

ORDERS = [{"id": i, "customer": f"c{i % 9}", "total": round((i * 37) % 500 / 3, 2),
           "status": ("open", "paid", "refunded")[i % 3]} for i in range(3_000)]


@function_tool
def list_orders(status: str) -> list[dict]:
    """Every order with the given status ("open", "paid" or "refunded")."""
    return [o for o in ORDERS if o["status"] == status]


@function_tool
async def get_customer(customer_id: str) -> dict:
    """One customer's record: id, name and tier."""
    await asyncio.sleep(0.2)  # a slow service: the code asks for several at once
    return {"id": customer_id, "name": f"Customer {customer_id[1:]}",
            "tier": "gold" if customer_id in ("c4", "c8") else "silver"}


QUESTION = "Which three customers paid the most, and what are their tiers?"

MODEL_CODE = """\
import asyncio
from collections import Counter
paid = Counter()
for order in await list_orders(status="paid"):
    paid[order["customer"]] += order["total"]
top = paid.most_common(3)
people = await asyncio.gather(*[get_customer(customer_id=c) for c, _ in top])
for person, (_, total) in zip(people, top):
    print(f"{person['name']} ({person['tier']}): {total:,.2f}")
"""


def scripted_model() -> ScriptedModel:
    """Writes the code above, then answers with what it printed."""

    def answer(call):
        printed = [i["output"] for i in call.input if i.get("type") == "function_call_output"]
        return [assistant_message(f"The top payers are:\n{printed[-1]}")]

    return ScriptedModel([[function_call("run_python", {"code": MODEL_CODE}, call_id="call_1")],
                          ModelStep.respond(answer)])


class InnerCalls(TracingProcessor):
    """Keeps the function spans (a local trace view, so nothing is exported offline)."""

    def __init__(self):
        self.names, self.lines = {}, []

    def on_span_start(self, span):
        self.names[span.span_id] = getattr(span.span_data, "name", span.span_data.type)

    def on_span_end(self, span):
        if span.span_data.type == "function":
            parent = self.names.get(span.parent_id, "?")
            self.lines.append(f"function span {span.span_data.name!r} inside {parent!r}")

    def on_trace_start(self, trace): pass
    def on_trace_end(self, trace): pass
    def shutdown(self): pass
    def force_flush(self): pass


async def main() -> None:
    real = bool(os.environ.get("OPENAI_API_KEY"))
    spans = InnerCalls()
    set_trace_processors([spans])
    # --8<-- [start:change]
    # The two-line change: wrap the tools, then use the toolset's tool and instructions.
    code = CodeModeToolset([list_orders, get_customer])
    agent = Agent(name="Analyst", instructions=code.instructions("Answer in one short paragraph."),
                  tools=[code.tool], **({} if real else {"model": scripted_model()}))
    # --8<-- [end:change]
    async with code:
        result = await Runner.run(agent, QUESTION)
    for item in result.new_items:
        if item.type == "tool_call_item":
            print(f"--- the model's code ---\n{json.loads(item.raw_item.arguments)['code']}")
        elif item.type == "tool_call_output_item":
            print(f"--- what it read back ---\n{item.output}")
    print("--- the trace ---", *spans.lines, sep="\n")
    print(f"--- final answer ---\n{result.final_output}")


if __name__ == "__main__":
    asyncio.run(main())
