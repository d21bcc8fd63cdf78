"""Aggregation and top-N over a large table: a month of sales lines from six stores, of which
the question needs the five best-selling products and their share."""

from __future__ import annotations

import random
from textwrap import dedent
from typing import Any

from tooliscode.openai.testing import ScriptedReply, call

from .base import LARGE, Seen, Task, answer, parallel, values

PROMPT = ("Across all our stores in October 2025, which five SKUs brought the most net revenue "
          "(qty x unit price x (1 - discount))? Give each with its revenue (2 decimals) and its "
          "share of the total net revenue in percent (1 decimal).")
MONTH = "2025-10"


def _stores(rng: random.Random, rows_per_store: int) -> dict[str, list[dict[str, Any]]]:
    prices = {f"SKU-{i:04d}": round(rng.uniform(3, 250), 2) for i in range(150)}
    skus = list(prices)
    weights = [1 / (1 + i) ** 0.7 for i in range(len(skus))]  # a few bestsellers, a long tail
    out = {}
    for s, city in enumerate(("Berlin", "Lyon", "Turin", "Porto", "Ghent", "Graz")):
        out[f"st_{s}"] = [
            {"order_id": f"{city[:3].upper()}-{i:06d}", "date": f"{MONTH}-{rng.randint(1, 31):02d}",
             "store_id": f"st_{s}", "sku": (sku := rng.choices(skus, weights)[0]),
             "qty": rng.randint(1, 6), "unit_price": prices[sku],
             "discount": rng.choice((0.0, 0.0, 0.05, 0.1, 0.2)),
             "channel": rng.choice(("in_store", "click_and_collect")),
             "segment": rng.choice(("member", "guest"))}
            for i in range(rows_per_store)]
    return out


def top_skus(rows: list[dict[str, Any]]) -> dict[str, Any]:
    revenue: dict[str, float] = {}
    for r in rows:
        revenue[r["sku"]] = revenue.get(r["sku"], 0.0) + r["qty"] * r["unit_price"] * (
            1 - r["discount"])
    total = sum(revenue.values())
    best = sorted(revenue.items(), key=lambda kv: -kv[1])[:5]
    return {"top": [[sku, round(v, 2), round(100 * v / total, 1)] for sku, v in best]}


def task(scale: float = 1.0) -> Task:
    sales = _stores(random.Random(6), max(100, int(800 * scale)))
    cities = ("Berlin", "Lyon", "Turin", "Porto", "Ghent", "Graz")

    def list_stores() -> list[dict]:
        """Every store: id, city, opening year."""
        return [{"id": sid, "city": city, "opened": 2010 + i}
                for i, (sid, city) in enumerate(zip(sales, cities))]

    def get_sales(store_id: str, month: str) -> list[dict]:
        """Every sales line of one store in one month (YYYY-MM), one row per order line."""
        return sales[store_id] if month == MONTH else []

    def get_targets(store_id: str, month: str) -> dict:
        """A store's revenue target for one month."""
        return {"store_id": store_id, "month": month, "target": 250_000}

    def get_product(sku: str) -> dict:
        """One product by SKU."""
        return {"sku": sku, "name": f"Product {sku[-4:]}"}

    def plain(seen: Seen) -> ScriptedReply:
        if not seen:
            return call("list_stores", {})
        if len(seen) == 1:
            return parallel([("get_sales", {"store_id": s["id"], "month": MONTH})
                          for s in values(seen, "list_stores")[0]])
        return answer(top_skus([row for rows in values(seen, "get_sales") for row in rows]))

    cells = [dedent(c).strip() for c in (
        """
        stores = list_stores()
        print(stores)
        first = get_sales(store_id=stores[0]["id"], month="2025-10")
        print(len(first), "rows; the first:", first[0])
        """,
        """
        import asyncio
        rest = await asyncio.gather(*(get_sales(store_id=s["id"], month="2025-10")
                                      for s in stores[1:]))
        revenue = {}
        for rows in [first, *rest]:
            for r in rows:
                revenue[r["sku"]] = revenue.get(r["sku"], 0.0) + r["qty"] * r["unit_price"] * (
                    1 - r["discount"])
        total = sum(revenue.values())
        best = sorted(revenue.items(), key=lambda kv: -kv[1])[:5]
        final_answer({"top": [[sku, round(v, 2), round(100 * v / total, 1)] for sku, v in best]})
        """)]
    rows = [row for store_rows in sales.values() for row in store_rows]
    return Task(f"top-N: best SKUs over {len(rows):,} sales lines", PROMPT,
                [list_stores, get_sales, get_targets, get_product], plain, cells,
                top_skus(rows), frozenset({LARGE}))
