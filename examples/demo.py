"""Offline demo: a scripted model uses code mode over a small tool collection.

Run with `make demo`. (A fuller demo over dozens of tools replaces this one.)
"""

from __future__ import annotations

from tooliscode import Session
from tooliscode.codetool import instructions, render

ORDERS = [{"id": i, "customer": f"c{i % 7}", "total": round((i * 37) % 500 / 3, 2),
           "status": ("open", "paid", "refunded")[i % 3]} for i in range(2_000)]


def list_orders(status: str | None = None) -> list[dict]:
    """All orders, optionally only those with one status."""
    return [o for o in ORDERS if status is None or o["status"] == status]


def get_customer(customer_id: str) -> dict:
    """One customer's record."""
    return {"id": customer_id, "name": f"Customer {customer_id[1:]}", "tier": "gold"}


SCRIPT = [
    "paid = list_orders(status='paid')\nlen(paid)",
    "from collections import Counter\n"
    "by_customer = Counter()\nfor o in paid:\n    by_customer[o['customer']] += o['total']\n"
    "top_id, top_total = by_customer.most_common(1)[0]\n"
    "print(get_customer(customer_id=top_id)['name'], round(top_total, 2))",
]


def main() -> None:
    with Session([list_orders, get_customer]) as session:
        print("=== instructions the model reads ===")
        print(instructions(session.registry))
        for turn, code in enumerate(SCRIPT, 1):
            print(f"\n=== turn {turn}: the model's code ===\n{code}")
            print(f"--- what the model reads back ---\n{render(session.run(code))}")


if __name__ == "__main__":
    main()
