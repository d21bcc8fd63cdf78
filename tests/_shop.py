"""The orders, tools and model code the framework adapter tests share."""

from __future__ import annotations

import asyncio

ORDERS = [{"id": i, "customer": f"c{i % 4}", "total": (i * 37) % 250,
           "status": ("open", "paid")[i % 2]} for i in range(40)]
BIG = [o for o in ORDERS if o["status"] == "paid" and o["total"] > 100]
CUSTOMERS = len({o["customer"] for o in BIG})
"""How many customers PROGRAM looks up."""
GOLD = sorted({o["customer"] for o in BIG} & {"c1", "c3"})


def list_orders(status: str) -> list[dict]:
    """All orders with one status."""
    return [o for o in ORDERS if o["status"] == status]


async def get_customer(customer_id: str) -> dict:
    """One customer's record."""
    await asyncio.sleep(0.01)
    return {"id": customer_id, "tier": "gold" if customer_id in ("c1", "c3") else "basic"}


def refund(order_id: int) -> str:
    """Refund one order."""
    if order_id < 0:
        raise ValueError(f"order {order_id} does not exist")
    return f"refunded {order_id}"


PROGRAM = """\
import asyncio
orders = await list_orders(status="paid")
big = [o for o in orders if o["total"] > 100]
ids = sorted({o["customer"] for o in big})
customers = await asyncio.gather(*(get_customer(customer_id=c) for c in ids))
gold = [c["id"] for c in customers if c["tier"] == "gold"]
"""
"""The code that gathers calls (each test adds a line that prints what it checks)."""

CAUGHT = ("try:\n    refund(order_id=-1)\nexcept ToolError as e:\n    print('caught:', e)\n"
          "print(refund(order_id=7))")
"""A failing call caught in the code, then one that works."""
