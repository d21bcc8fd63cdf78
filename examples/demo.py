"""End-to-end demo: a model answers a question over a store's 45 tools in code mode.

Run with `make demo`. Offline it uses a scripted model behind a local OpenAI-compatible
server, through the real `openai` client and the same loop a real model would use; with
OPENAI_API_KEY set it asks a real model instead (TOOLISCODE_MODEL, default gpt-5-mini).
It prints what the model is given, each turn's code and what the model read back, the
answer (checked against a direct computation), and the tokens code mode saved against plain
tool calling with the same tool calls.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from textwrap import dedent
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import store_tools as store
from store_question import QUESTION, TOP_CUSTOMER
from tooliscode import ToolIsCode
from tooliscode.openai import LoopResult, run_conversation
from tooliscode.openai.testing import ScriptedRequest, ScriptedServer, code
from tooliscode.prompt import TOKENIZER, ContextCounter

PROMPT = QUESTION

CELLS = [dedent(cell).strip() for cell in (
    # Turn 1: find the tools, look at one result's shape.
    """
    print(search_tools("orders customers region", limit=5))
    help(list_orders)
    q3 = list_orders(status="paid", since="2025-07-01", until="2025-09-30")
    print(len(q3), "paid orders; the first:", q3[0])
    """,
    # Turn 2: the work, in code; three independent calls run concurrently.
    TOP_CUSTOMER + dedent("""
    print(f"{top['name']} ({top_id}): {spent[top_id]:,.2f} USD; manager {manager['name']}; "
          f"{len(open_tickets)} open tickets; 1 EUR = {eur['usd']} USD")
    """),
    # Turn 3: the answer straight from the code: no further model turn.
    """
    final_answer({
        "customer": top["name"], "customer_id": top_id,
        "total_usd": round(spent[top_id], 2),
        "total_eur": round(spent[top_id] / eur["usd"], 2),
        "account_manager": manager["name"], "open_tickets": len(open_tickets),
    })
    """,
)]


def scripted_model(request: ScriptedRequest) -> Any:
    """The offline model: one prepared cell per turn."""
    return code(CELLS[min(request.index, len(CELLS) - 1)])


def expected_answer() -> dict[str, Any]:
    """The same question answered directly on the host, to check the run."""
    eu = {c["id"]: c for c in store.list_customers(region="EU")}
    spent: dict[str, float] = defaultdict(float)
    for order in store.list_orders("paid", "2025-07-01", "2025-09-30"):
        if order["customer_id"] in eu:
            spent[order["customer_id"]] += order["total"]
    top_id = max(spent, key=spent.__getitem__)
    rate = store.callback("check", "get_exchange_rate", {"currency": "EUR"})["usd"]
    return {"customer": eu[top_id]["name"], "customer_id": top_id,
            "total_usd": round(spent[top_id], 2), "total_eur": round(spent[top_id] / rate, 2),
            "account_manager": store.get_account_manager(eu[top_id]["account_manager"])["name"],
            "open_tickets": len(store.list_tickets("open", top_id))}


# -- token accounting ------------------------------------------------------------------------------

COUNT = ContextCounter()


def _plain_history(result: LoopResult, tic: ToolIsCode) -> list[dict[str, Any]]:
    """The history plain tool calling builds for the same tool calls (one model turn per
    cell's calls, which is the fewest it could need), with every raw result in it."""
    registry = tic.session().registry
    history: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for n, out in enumerate(result.outputs):
        calls = out.result.tool_calls if out.result is not None else ()
        for i, record in enumerate(calls):
            history.append({"type": "function_call", "call_id": f"p{n}_{i}", "name": record.name,
                            "arguments": json.dumps(record.arguments)})
        for i, record in enumerate(calls):
            value = registry.get(record.name).invoke(dict(record.arguments))
            history.append({"type": "function_call_output", "call_id": f"p{n}_{i}",
                            "output": value if isinstance(value, str) else json.dumps(value)})
    answer = result.output if isinstance(result.output, str) else json.dumps(result.output)
    history.append({"type": "message", "role": "assistant", "content": answer})
    return history


def token_report(result: LoopResult, tic: ToolIsCode) -> tuple[int, int]:
    plain_tools = [{"type": "function", "name": t.name, "description": t.description,
                    "parameters": t.parameters} for t in tic.registry]
    plain_setup = COUNT.text(plain_tools)
    code_setup = COUNT.text(tic.tools) + COUNT.text(tic.instructions)
    plain_calls = COUNT.per_call(plain_setup, _plain_history(result, tic))
    code_calls = COUNT.per_call(code_setup, result.history)
    rows = [("tool definitions + instructions", plain_setup, code_setup),
            ("model calls", len(plain_calls), len(code_calls)),
            ("context at the last model call", plain_calls[-1], code_calls[-1]),
            ("input tokens over all model calls", sum(plain_calls), sum(code_calls))]
    print(f"\n=== tokens: plain tool calling vs code mode (counted as {TOKENIZER}) ===")
    print(f"{'':36}{'plain tools':>14}{'code mode':>12}")
    for label, plain, ours in rows:
        print(f"{label:36}{plain:>14,}{ours:>12,}")
    saved = sum(plain_calls) - sum(code_calls)
    print(f"tokens saved: {saved:,} of {sum(plain_calls):,} input tokens "
          f"({100 * saved / sum(plain_calls):.1f}%), for the same tool calls.")
    return sum(plain_calls), sum(code_calls)


# -- printing the conversation ---------------------------------------------------------------------

def show_turns(history: list[dict[str, Any]]) -> None:
    turn = 0
    for item in history:
        if item.get("type") == "function_call":
            turn += 1
            code_text = json.loads(item["arguments"]).get("code", item["arguments"])
            print(f"\n=== turn {turn}: the model calls {item['name']} ===\n{code_text}")
        elif item.get("type") == "function_call_output":
            text = str(item["output"])
            print(f"--- what the model reads back ({COUNT.text(text):,} tokens) ---\n{text}")
        elif item.get("role") == "assistant":
            parts = item.get("content")
            text = parts if isinstance(parts, str) else "".join(
                p.get("text", "") for p in parts or ())
            if text:
                print(f"\n=== the model says ===\n{text}")


def main() -> int:
    import openai

    real = bool(os.environ.get("OPENAI_API_KEY"))
    model = os.environ.get("TOOLISCODE_MODEL", "gpt-5-mini") if real else "scripted"
    with ToolIsCode(store.TOOLS, store.callback) as tic, ScriptedServer(scripted_model) as server:
        client = openai.OpenAI() if real else openai.OpenAI(
            base_url=server.base_url, api_key="offline", max_retries=0)
        print(f"(tokens are counted as {TOKENIZER})\n")
        print(f"=== the model is given 1 tool ({COUNT.text(tic.tools):,} tokens) for "
              f"{len(tic.registry)} real ones, and these instructions "
              f"({COUNT.text(tic.instructions):,} tokens) ===")
        print(tic.instructions)
        print(f"\n=== user ({'model ' + model if real else 'scripted model, offline'}) ===")
        print(PROMPT)
        result = run_conversation(client, PROMPT, toolset=tic, model=model, max_iterations=8)
        show_turns(result.history)
        expected = expected_answer()
        print(f"\n=== answer ({'final_answer() from code' if result.has_final else 'text'}, "
              f"{result.iterations} model calls) ===")
        print(json.dumps(result.output, indent=2) if result.has_final else result.output)
        token_report(result, tic)
        if not real:
            ok = result.output == expected
            print(f"\nanswer check against a direct computation: {'correct' if ok else 'WRONG'}")
            return 0 if ok else 1
        print(f"\nexpected (computed directly): {json.dumps(expected)}")
        return 0


if __name__ == "__main__":
    sys.exit(main())
