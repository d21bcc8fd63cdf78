"""The question the framework examples ask over the store's tools (store_tools.py), the code
their scripted models write, and the answer worked out directly on the host to check them."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import store_tools as store

QUESTION = ("Which EU customer spent the most on paid orders in Q3 2025 (July to September)? "
            "Give the total in USD and in EUR, their account manager, and how many support "
            "tickets they have open.")
FOLLOW_UP = "How many of the Q3 paid orders were theirs?"


def get_exchange_rate(currency: str) -> dict:
    """USD value of one unit of a currency (ISO code, like EUR)."""
    return store.callback("example", "get_exchange_rate", {"currency": currency})


TOOLS = [store.list_customers, store.list_orders, store.get_account_manager, store.list_tickets,
         get_exchange_rate]
"""What the examples' agents are given (the store's functions, and its exchange rate)."""

TOP_CUSTOMER = """\
import asyncio
from collections import defaultdict

# this cell awaits, so every tool call in it is awaited
eu = {c["id"]: c for c in await list_customers(region="EU")}
spent = defaultdict(float)
for order in q3:
    if order["customer_id"] in eu:
        spent[order["customer_id"]] += order["total"]
top_id = max(spent, key=spent.get)
top = eu[top_id]
manager, open_tickets, eur = await asyncio.gather(
    get_account_manager(manager_id=top["account_manager"]),
    list_tickets(status="open", customer_id=top_id),
    get_exchange_rate(currency="EUR"),
)
"""
"""The work the model's code does once `q3` holds the quarter's paid orders (demo.py's second
cell too): the top EU customer, their manager, open tickets and the euro rate."""

FIRST_CODE = ('q3 = await list_orders(status="paid", since="2025-07-01", until="2025-09-30")\n'
              + TOP_CUSTOMER + """\
print(f"{top['name']} ({top_id}): {spent[top_id]:,.2f} USD = {spent[top_id] / eur['usd']:,.2f} "
      f"EUR; manager {manager['name']}; {len(open_tickets)} open tickets")
""")
SECOND_CODE = """\
print(f"{sum(o['customer_id'] == top_id for o in q3)} of {len(q3)} Q3 paid orders")
"""
"""The follow-up's code reads `q3` and `top_id`, which the first answer's code left behind."""


def expected_lines() -> tuple[str, str]:
    """What FIRST_CODE and SECOND_CODE print, computed straight from the store."""
    q3 = store.list_orders("paid", "2025-07-01", "2025-09-30")
    eu = {c["id"]: c for c in store.list_customers(region="EU")}
    spent: dict[str, float] = defaultdict(float)
    for order in q3:
        if order["customer_id"] in eu:
            spent[order["customer_id"]] += order["total"]
    top_id = max(spent, key=spent.__getitem__)
    top: dict[str, Any] = eu[top_id]
    rate = get_exchange_rate("EUR")["usd"]
    manager = store.get_account_manager(top["account_manager"])["name"]
    tickets = len(store.list_tickets("open", top_id))
    first = (f"{top['name']} ({top_id}): {spent[top_id]:,.2f} USD = {spent[top_id] / rate:,.2f} "
             f"EUR; manager {manager}; {tickets} open tickets")
    mine = sum(o["customer_id"] == top_id for o in q3)
    return first, f"{mine} of {len(q3)} Q3 paid orders"
