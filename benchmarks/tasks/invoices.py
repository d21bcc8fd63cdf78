"""A paginated API: every invoice of a billing system, 100 per page. Plain tool calling must
read page n to learn page n+1, one model turn per page, and keeps every page in its
context; code mode walks the pages in a loop."""

from __future__ import annotations

import datetime as dt
import random
from textwrap import dedent
from typing import Any

from tooliscode.openai.testing import ScriptedReply, call

from .base import LARGE, MULTI, Seen, Task, answer, values

PROMPT = ("As of 2025-11-01, how many invoices are overdue (still open, due before that day), "
          "and what is the overdue total in each currency (2 decimals)?")
AS_OF = "2025-11-01"
PAGE = 100


def _invoices(rng: random.Random, n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        issued = dt.date(2025, 1, 1) + dt.timedelta(days=rng.randrange(330))
        lines = [{"description": rng.choice(("Subscription", "Support plan", "Onboarding",
                                             "Extra seats")), "qty": rng.randint(1, 12),
                  "unit_price": round(rng.uniform(20, 800), 2)} for _ in range(rng.randint(1, 3))]
        out.append({"id": f"INV-2025-{i:05d}", "customer_id": f"cus_{rng.randrange(400):04d}",
                    "currency": rng.choice(("EUR", "USD", "GBP")),
                    "amount": round(sum(x["qty"] * x["unit_price"] for x in lines), 2),
                    "status": rng.choices(("open", "paid", "void"), (30, 65, 5))[0],
                    "issued": issued.isoformat(),
                    "due": (issued + dt.timedelta(days=30)).isoformat(), "lines": lines,
                    "po_number": f"PO-{rng.randrange(10**6):06d}"})
    return out


def overdue(invoices: list[dict[str, Any]]) -> dict[str, Any]:
    totals: dict[str, float] = {}
    count = 0
    for inv in invoices:
        if inv["status"] == "open" and inv["due"] < AS_OF:
            totals[inv["currency"]] = totals.get(inv["currency"], 0.0) + inv["amount"]
            count += 1
    return {"count": count, "totals": {c: round(t, 2) for c, t in totals.items()}}


def task(scale: float = 1.0) -> Task:
    invoices = _invoices(random.Random(25), max(3 * PAGE, int(2_500 * scale)))

    def list_invoices(page: int = 1, page_size: int = PAGE) -> dict:
        """One page of all invoices, oldest first: `items`, `page`, `next_page` (null on the
        last page) and `total_items`. At most 100 per page."""
        size = min(page_size, PAGE)
        items = invoices[(page - 1) * size:page * size]
        more = page * size < len(invoices)
        return {"items": items, "page": page, "next_page": page + 1 if more else None,
                "total_items": len(invoices)}

    def get_invoice(invoice_id: str) -> dict:
        """One invoice by id."""
        return next(inv for inv in invoices if inv["id"] == invoice_id)

    def send_reminder(invoice_id: str) -> dict:
        """Email the customer a payment reminder for one invoice."""
        return {"invoice_id": invoice_id, "sent": True}

    def plain(seen: Seen) -> ScriptedReply:
        last = seen[-1][0].value if seen else {"next_page": 1}
        if last["next_page"]:
            return call("list_invoices", {"page": last["next_page"]})
        return answer(overdue([i for p in values(seen, "list_invoices") for i in p["items"]]))

    cells = [dedent(c).strip() for c in (
        """
        first = list_invoices(page=1)
        print({k: v for k, v in first.items() if k != "items"})
        print(len(first["items"]), "items; the first:", first["items"][0])
        """,
        """
        invoices, page = list(first["items"]), first
        while page["next_page"]:
            page = list_invoices(page=page["next_page"])
            invoices += page["items"]
        totals, count = {}, 0
        for inv in invoices:
            if inv["status"] == "open" and inv["due"] < "2025-11-01":
                totals[inv["currency"]] = totals.get(inv["currency"], 0.0) + inv["amount"]
                count += 1
        final_answer({"count": count, "totals": {c: round(t, 2) for c, t in totals.items()}})
        """)]
    pages = -(-len(invoices) // PAGE)
    return Task(f"paginated API: overdue invoices ({pages} pages)", PROMPT,
                [list_invoices, get_invoice, send_reminder], plain, cells, overdue(invoices),
                frozenset({LARGE, MULTI}))
