"""A store's back office as 45 agent tools, over deterministic made-up data.

Most are plain Python functions. The shipping and finance ones are given the way many
existing agents hold their tools: OpenAI function-tool dicts plus one `callback(req_id,
func_name, args)` that dispatches them (the original tooliscode API). Some results are large
(every order of a quarter with its lines, a day of web logs), which is where code mode pays.

    tooliscode examples/store_tools.py:TOOLS --callback examples/store_tools.py:callback
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any, Literal

_R = random.Random(2025)
REGIONS = ("EU", "NA", "APAC", "LATAM")
CATEGORIES = ("books", "garden", "kitchen", "toys", "sports", "audio", "office", "pets",
              "beauty", "tools")
_FIRST = ("Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Grace", "Hugo", "Ines",
          "Jonas", "Keiko", "Lars", "Mina", "Nils", "Olga", "Pablo", "Quinn", "Rosa")
_LAST = ("Keller", "Moreau", "Rossi", "Novak", "Silva", "Berg", "Tanaka", "Okafor", "Haddad",
         "Lindqvist", "Costa", "Weber")

MANAGERS = [{"id": f"m{i}", "name": f"{_R.choice(_FIRST)} {_R.choice(_LAST)}",
             "email": f"manager{i}@store.example", "region": REGIONS[i % 4]} for i in range(8)]
CUSTOMERS = [{"id": f"c{i:03d}", "name": f"{_R.choice(_FIRST)} {_R.choice(_LAST)}",
              "email": f"customer{i}@mail.example", "region": REGIONS[i % 4],
              "tier": _R.choice(("bronze", "silver", "gold")),
              "account_manager": f"m{_R.randrange(8)}",
              "since": f"20{_R.randint(15, 24)}-{_R.randint(1, 12):02d}-01"} for i in range(80)]
PRODUCTS = [{"sku": f"SKU-{i:04d}", "name": f"{_R.choice(CATEGORIES).title()} item {i}",
             "category": CATEGORIES[i % 10], "price": round(_R.uniform(4, 400), 2),
             "stock": _R.randint(0, 500)} for i in range(600)]


def _order(i: int) -> dict[str, Any]:
    day = dt.date(2025, 1, 1) + dt.timedelta(days=_R.randrange(365))
    lines = [{"sku": p["sku"], "name": p["name"], "qty": _R.randint(1, 4), "unit_price": p["price"]}
             for p in _R.sample(PRODUCTS, _R.randint(1, 5))]
    return {"id": f"o{i:05d}", "customer_id": _R.choice(CUSTOMERS)["id"], "date": day.isoformat(),
            "status": _R.choice(("paid", "paid", "paid", "shipped", "refunded", "open")),
            "currency": "USD", "lines": lines,
            "total": round(sum(line["qty"] * line["unit_price"] for line in lines), 2),
            "shipping_address": {"street": f"{_R.randint(1, 200)} Main St", "city": "Springfield",
                                 "country": "XX"}, "notes": ""}


ORDERS = [_order(i) for i in range(12_000)]
TICKETS = [{"id": f"t{i:04d}", "customer_id": _R.choice(CUSTOMERS)["id"],
            "status": _R.choice(("open", "pending", "closed", "closed")),
            "priority": _R.choice(("low", "normal", "high")),
            "subject": _R.choice(("Late delivery", "Refund request", "Wrong item", "Invoice copy",
                                  "Damaged box", "Password reset")),
            "messages": [f"Message {j}: " + "Lorem ipsum dolor sit amet. " * 6 for j in range(3)]}
           for i in range(900)]
OUTBOX: list[dict[str, str]] = []


def _one(rows: list[dict[str, Any]], key: str, value: str, what: str) -> dict[str, Any]:
    for row in rows:
        if row[key] == value:
            return row
    raise KeyError(f"no {what} {value!r}")


# -- customers ---------------------------------------------------------------------------------

def list_customers(region: Literal["EU", "NA", "APAC", "LATAM"] | None = None,
                   tier: Literal["bronze", "silver", "gold"] | None = None) -> list[dict]:
    """All customer records, optionally of one region and/or tier."""
    return [c for c in CUSTOMERS if region in (None, c["region"]) and tier in (None, c["tier"])]


def get_customer(customer_id: str) -> dict:
    """One customer record by id (like "c007")."""
    return _one(CUSTOMERS, "id", customer_id, "customer")


def search_customers(query: str) -> list[dict]:
    """Customers whose name or email contains the query (case-insensitive)."""
    q = query.lower()
    return [c for c in CUSTOMERS if q in c["name"].lower() or q in c["email"]]


def update_customer_tier(customer_id: str, tier: Literal["bronze", "silver", "gold"]) -> dict:
    """Move a customer to another loyalty tier."""
    customer = get_customer(customer_id)
    customer["tier"] = tier
    return customer


def list_account_managers() -> list[dict]:
    """Every account manager."""
    return MANAGERS


def get_account_manager(manager_id: str) -> dict:
    """One account manager by id (like "m3")."""
    return _one(MANAGERS, "id", manager_id, "account manager")


# -- orders --------------------------------------------------------------------------------------

def list_orders(status: Literal["paid", "shipped", "refunded", "open"] | None = None,
                since: str | None = None, until: str | None = None) -> list[dict]:
    """Orders with their lines, optionally filtered by status and by date (ISO dates,
    inclusive). Large: a quarter holds thousands of orders."""
    return [o for o in ORDERS if status in (None, o["status"])
            and (since is None or o["date"] >= since) and (until is None or o["date"] <= until)]


def get_order(order_id: str) -> dict:
    """One order with its lines."""
    return _one(ORDERS, "id", order_id, "order")


def refund_order(order_id: str, reason: str) -> dict:
    """Refund a paid order in full."""
    order = get_order(order_id)
    order["status"], order["notes"] = "refunded", reason
    return order


def cancel_order(order_id: str) -> dict:
    """Cancel an open order."""
    order = get_order(order_id)
    if order["status"] != "open":
        raise ValueError(f"order {order_id} is {order['status']}, only open orders can be "
                         "cancelled")
    order["status"] = "cancelled"
    return order


def orders_of_customer(customer_id: str) -> list[dict]:
    """Every order of one customer, newest first."""
    return sorted((o for o in ORDERS if o["customer_id"] == customer_id),
                  key=lambda o: o["date"], reverse=True)


# -- products ------------------------------------------------------------------------------------

def list_products(category: str | None = None) -> list[dict]:
    """The catalogue, optionally one category."""
    return [p for p in PRODUCTS if category in (None, p["category"])]


def get_product(sku: str) -> dict:
    """One product by SKU (like "SKU-0042")."""
    return _one(PRODUCTS, "sku", sku, "product")


def search_products(query: str, limit: int = 20) -> list[dict]:
    """Products whose name contains the query."""
    return [p for p in PRODUCTS if query.lower() in p["name"].lower()][:limit]


def list_categories() -> list[str]:
    """The product categories."""
    return list(CATEGORIES)


def get_inventory(sku: str) -> dict:
    """Stock of one product per warehouse."""
    stock = get_product(sku)["stock"]
    return {"sku": sku, "warehouses": {"north": stock // 2, "south": stock - stock // 2}}


def update_price(sku: str, price: float) -> dict:
    """Set a product's price."""
    product = get_product(sku)
    product["price"] = price
    return product


def low_stock(threshold: int = 10) -> list[dict]:
    """Products with fewer than `threshold` units in stock."""
    return [p for p in PRODUCTS if p["stock"] < threshold]


# -- support -------------------------------------------------------------------------------------

def list_tickets(status: Literal["open", "pending", "closed"] | None = None,
                 customer_id: str | None = None) -> list[dict]:
    """Support tickets with their full message threads, optionally filtered."""
    return [t for t in TICKETS if status in (None, t["status"])
            and customer_id in (None, t["customer_id"])]


def get_ticket(ticket_id: str) -> dict:
    """One support ticket."""
    return _one(TICKETS, "id", ticket_id, "ticket")


def add_ticket_note(ticket_id: str, note: str) -> dict:
    """Append an internal note to a ticket."""
    ticket = get_ticket(ticket_id)
    ticket["messages"].append(f"[note] {note}")
    return ticket


def close_ticket(ticket_id: str) -> dict:
    """Mark a ticket closed."""
    ticket = get_ticket(ticket_id)
    ticket["status"] = "closed"
    return ticket


def ticket_stats() -> dict:
    """Ticket counts by status and priority."""
    stats: dict[str, int] = {}
    for t in TICKETS:
        for key in (t["status"], f"priority:{t['priority']}"):
            stats[key] = stats.get(key, 0) + 1
    return stats


# -- analytics -----------------------------------------------------------------------------------

def daily_revenue(since: str, until: str) -> list[dict]:
    """Paid revenue per day between two ISO dates (inclusive)."""
    days: dict[str, float] = {}
    for o in list_orders("paid", since, until):
        days[o["date"]] = round(days.get(o["date"], 0) + o["total"], 2)
    return [{"date": d, "revenue": v} for d, v in sorted(days.items())]


def web_logs(date: str) -> str:
    """The raw web server access log of one day (about 2 MB of text)."""
    rng = random.Random(date)
    return "\n".join(f"{date}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
                     f"{rng.choice(('GET', 'POST'))} "
                     f"/{rng.choice(CATEGORIES)}/{rng.randint(1, 600)}"
                     f" {rng.choice((200, 200, 200, 404, 500))} {rng.randint(80, 9000)}ms"
                     for _ in range(40_000))


def top_pages(date: str, limit: int = 10) -> list[dict]:
    """The most requested pages of one day."""
    counts: dict[str, int] = {}
    for line in web_logs(date).splitlines():
        path = line.split()[2]
        counts[path] = counts.get(path, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    return [{"path": p, "hits": n} for p, n in ranked][:limit]


def conversion_funnel(month: str) -> dict:
    """Visits, carts and orders of a month ("2025-07")."""
    orders = sum(1 for o in ORDERS if o["date"].startswith(month))
    return {"month": month, "visits": orders * 31, "carts": orders * 4, "orders": orders}


# -- marketing and messages ----------------------------------------------------------------------

def list_campaigns() -> list[dict]:
    """Marketing campaigns."""
    return [{"id": f"cmp{i}", "name": f"{c.title()} week", "category": c}
            for i, c in enumerate(CATEGORIES)]


def campaign_stats(campaign_id: str) -> dict:
    """Reach and clicks of a campaign."""
    n = int(campaign_id.removeprefix("cmp") or 0)
    return {"id": campaign_id, "reach": 10_000 + 731 * n, "clicks": 300 + 17 * n}


def create_coupon(code: str, percent_off: int, customer_id: str | None = None) -> dict:
    """Create a discount coupon, optionally for one customer."""
    return {"code": code.upper(), "percent_off": percent_off, "customer_id": customer_id}


def send_email(to: str, subject: str, body: str) -> dict:
    """Queue an email."""
    OUTBOX.append({"to": to, "subject": subject, "body": body})
    return {"queued": True, "position": len(OUTBOX)}


def list_email_templates() -> list[str]:
    """Names of the email templates."""
    return ["welcome", "refund", "coupon", "delay"]


def get_email_template(name: str) -> str:
    """The text of one email template, with {placeholders}."""
    return f"Dear {{name}},\n\nThis is the {name} template.\n\nKind regards,\n{{manager}}"


def list_employees() -> list[dict]:
    """Staff directory (account managers included)."""
    return MANAGERS + [{"id": "e1", "name": "Sam Ortiz", "role": "warehouse lead"}]


FUNCTIONS = [list_customers, get_customer, search_customers, update_customer_tier,
             list_account_managers, get_account_manager, list_orders, get_order, refund_order,
             cancel_order, orders_of_customer, list_products, get_product, search_products,
             list_categories, get_inventory, update_price, low_stock, list_tickets, get_ticket,
             add_ticket_note, close_ticket, ticket_stats, daily_revenue, web_logs, top_pages,
             conversion_funnel, list_campaigns, campaign_stats, create_coupon, send_email,
             list_email_templates, get_email_template, list_employees]


# -- shipping and finance: OpenAI function-tool dicts run by a callback -------------------------

def _fn(name: str, description: str, **properties: Any) -> dict[str, Any]:
    required = [k for k, v in properties.items() if not v.pop("optional", False)]
    return {"type": "function", "name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}


_S = {"type": "string"}
DICT_TOOLS = [
    _fn("list_shipments", "Shipments, optionally with one status.",
        status={**_S, "enum": ["label", "in_transit", "delivered"], "optional": True}),
    _fn("get_shipment", "One shipment by id.", shipment_id=dict(_S)),
    _fn("track_package", "Carrier tracking events of a package.", tracking_number=dict(_S)),
    _fn("list_warehouses", "The warehouses and their addresses."),
    _fn("get_exchange_rate", "USD value of one unit of a currency.",
        currency={**_S, "description": "ISO code, like EUR"}),
    _fn("get_tax_rate", "Sales tax rate of a region.", region={**_S, "enum": list(REGIONS)}),
    _fn("list_invoices", "Invoices, optionally of one customer.",
        customer_id={**_S, "optional": True}),
    _fn("get_invoice", "One invoice by id.", invoice_id=dict(_S)),
    _fn("issue_credit_note", "Credit an amount to a customer.", customer_id=dict(_S),
        amount={"type": "number"}),
    _fn("payment_methods", "Payment methods on file for a customer.", customer_id=dict(_S)),
    _fn("fraud_score", "Fraud risk (0-1) of an order.", order_id=dict(_S)),
]
_RATES = {"EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "USD": 1.0}


def callback(req_id: str, func_name: str, args: dict[str, Any]) -> Any:
    """Runs the dict tools, as an existing agent's dispatcher would."""
    match func_name:
        case "list_shipments":
            rows = [{"id": f"s{o['id'][1:]}", "order_id": o["id"],
                     "status": ("label", "in_transit", "delivered")[i % 3]}
                    for i, o in enumerate(ORDERS[:300])]
            return [r for r in rows if args.get("status") in (None, r["status"])]
        case "get_shipment" | "track_package":
            return {"id": args.get("shipment_id") or args.get("tracking_number"),
                    "events": ["label created", "picked up", "in transit"]}
        case "list_warehouses":
            return [{"name": "north", "city": "Hamburg"}, {"name": "south", "city": "Lyon"}]
        case "get_exchange_rate":
            return {"currency": args["currency"], "usd": _RATES.get(args["currency"].upper())}
        case "get_tax_rate":
            rate = {"EU": 0.2, "NA": 0.07}.get(args["region"], 0.1)
            return {"region": args["region"], "rate": rate}
        case "list_invoices" | "get_invoice":
            rows = [{"id": f"inv{o['id'][1:]}", "customer_id": o["customer_id"],
                     "amount": o["total"]} for o in ORDERS[:500]]
            return [r for r in rows if args.get("customer_id") in (None, r["customer_id"])]
        case "issue_credit_note":
            return {"customer_id": args["customer_id"], "amount": args["amount"], "ok": True}
        case "payment_methods":
            return [{"type": "card", "last4": "4242"}]
        case "fraud_score":
            return {"order_id": args["order_id"], "score": 0.03}
    raise ValueError(f"unknown tool {func_name}")


TOOLS: list[Any] = [*FUNCTIONS, *DICT_TOOLS]
"""All 45 tools: 34 functions and 11 dicts (run by `callback`)."""
