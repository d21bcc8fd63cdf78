"""A join across two sources: `make demo`'s question over the store's 45 tools (a quarter's
paid orders joined to the EU customers, then three lookups about the top one), with the
demo's own cells and check."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tooliscode.openai.testing import ScriptedReply, call

from .base import LARGE, Seen, Task, answer, values

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import demo
import store_tools as store

QUARTER = {"status": "paid", "since": "2025-07-01", "until": "2025-09-30"}


def _top_spender(orders: list[dict[str, Any]], customers: list[dict[str, Any]]) -> tuple:
    eu = {c["id"]: c for c in customers}
    spent: dict[str, float] = {}
    for order in orders:
        if order["customer_id"] in eu:
            spent[order["customer_id"]] = spent.get(order["customer_id"], 0.0) + order["total"]
    top = max(spent, key=spent.__getitem__)
    return eu[top], spent[top]


def plain(seen: Seen) -> ScriptedReply:
    if not seen:
        return call("list_orders", QUARTER, ("list_customers", {"region": "EU"}))
    top, total = _top_spender(values(seen, "list_orders")[0], values(seen, "list_customers")[0])
    if len(seen) == 1:
        return call("get_account_manager", {"manager_id": top["account_manager"]},
                    ("list_tickets", {"status": "open", "customer_id": top["id"]}),
                    ("get_exchange_rate", {"currency": "EUR"}))
    rate = values(seen, "get_exchange_rate")[0]["usd"]
    return answer({"customer": top["name"], "customer_id": top["id"],
                   "total_usd": round(total, 2), "total_eur": round(total / rate, 2),
                   "account_manager": values(seen, "get_account_manager")[0]["name"],
                   "open_tickets": len(values(seen, "list_tickets")[0])})


def task(scale: float = 1.0) -> Task:
    return Task(f"join: orders x customers ({len(store.TOOLS)} store tools)", demo.PROMPT,
                store.TOOLS, plain, demo.CELLS, demo.expected_answer(), frozenset({LARGE}),
                callback=store.callback)
