"""The OpenAI APIs with code mode: your own loop, with `ToolIsCode` in place of your tools.

    python examples/openai_example.py

Offline, a local OpenAI-compatible server with scripted replies plays the model, reached
through the real `openai` client; with OPENAI_API_KEY set, a real model does (OPENAI_MODEL
picks which). Either way the tools run for real. The same question is then asked through
`run_conversation`, the loop tooliscode ships, in a conversation of its own.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator

import openai
from tooliscode import ToolIsCode
from tooliscode.openai import run_conversation
from tooliscode.openai.testing import ScriptedServer, code, say

ORDERS = [{"id": n, "customer": f"c{n % 7}", "total": round((n * 53) % 400 / 4, 2),
           "status": ("paid", "open", "refunded")[n % 3]} for n in range(1, 2_001)]


def list_orders(status: str) -> list[dict]:
    """Every order with the given status ("paid", "open" or "refunded")."""
    return [o for o in ORDERS if o["status"] == status]


def get_customer(customer_id: str) -> dict:
    """One customer's record: id, name and country."""
    number = int(customer_id[1:])
    return {"id": customer_id, "name": f"Customer {number}", "country": ("FR", "DE")[number % 2]}


QUESTION = "Which customer paid the most in total, and where are they?"
MODEL_CODE = """\
from collections import Counter
paid = Counter()
for order in list_orders(status="paid"):
    paid[order["customer"]] += order["total"]
best, total = paid.most_common(1)[0]
print(get_customer(customer_id=best), round(total, 2))
"""


@contextlib.contextmanager
def model() -> Iterator[tuple[openai.OpenAI, str]]:
    """A client and a model name: the real service, or the scripted one."""
    if os.environ.get("OPENAI_API_KEY"):
        yield openai.OpenAI(), os.environ.get("OPENAI_MODEL", "gpt-5-mini")
        return

    def scripted(request):  # writes the code above, then answers with what it printed
        printed = request.tool_outputs()
        return say(f"The top payer: {printed[-1].strip()}") if printed else code(MODEL_CODE)

    with ScriptedServer(scripted) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="offline", max_retries=0), "any"


# --8<-- [start:loop]
def answer(client: openai.OpenAI, model: str, tic: ToolIsCode, question: str) -> str:
    history: list = [{"role": "user", "content": question}]
    while True:
        response = client.responses.create(model=model, input=history, tools=tic.tools,
                                           instructions=tic.instructions)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        history += response.output
        for item in calls:
            out = tic.tool_call(item)  # {"type": "function_call_output", "call_id", "output"}
            print(f"--- the model's code ---\n{json.loads(item.arguments)['code']}")
            print(f"--- it read ---\n{out['output']}")
            history.append(out)
            if out.has_final:  # the code called final_answer(value): no further model turn
                return str(out.final)
# --8<-- [end:loop]


def main() -> None:
    with model() as (client, name):
        # --8<-- [start:change]
        tic = ToolIsCode([list_orders, get_customer])  # your tools, as one code tool
        # --8<-- [end:change]
        with tic:
            print(f"=== your own loop\n{answer(client, name, tic, QUESTION)}")
            # --8<-- [start:conversation]
            result = run_conversation(client, QUESTION, toolset=tic, model=name, key="chat-2")
            # --8<-- [end:conversation]
            print(f"=== run_conversation, {result.iterations} model calls\n{result.output}")


if __name__ == "__main__":
    main()
