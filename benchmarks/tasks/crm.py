"""A CRM behind 60 tools (twelve record types, five operations each), where one question
needs a quarter of won deals, with their line items and notes, joined to the sales reps."""

from __future__ import annotations

import datetime as dt
import random
from textwrap import dedent
from typing import Any

from tooliscode import Tool
from tooliscode.openai.testing import ScriptedReply, call

from .base import LARGE, Seen, Task, answer, values

PROMPT = ("For Q2 2025 (April 1 to June 30), which sales rep closed the most won-deal value in "
          "each region? Give the rep's name, the total in USD (2 decimals) and the number of "
          "deals.")

REGIONS = ("EMEA", "NA", "APAC", "LATAM")
STAGES = ("prospecting", "qualification", "proposal", "negotiation", "won", "lost")
ENTITIES: dict[str, dict[str, Any]] = {  # record type -> field -> kind (a tuple is an enum)
    "account": {"name": "company", "industry": ("retail", "finance", "health", "energy", "media"),
                "region": REGIONS, "owner_id": "ref:rep", "employees": "int",
                "annual_revenue": "money", "created": "date"},
    "contact": {"account_id": "ref:account", "name": "person", "email": "email",
                "title": ("CEO", "CFO", "VP Sales", "Buyer", "Engineer"), "phone": "phone"},
    "lead": {"company": "company", "source": ("web", "event", "referral", "outbound"),
             "status": ("new", "working", "qualified", "disqualified"), "owner_id": "ref:rep",
             "score": "int"},
    "deal": {"name": "company", "account_id": "ref:account", "owner_id": "ref:rep",
             "stage": STAGES, "amount": "money", "currency": ("USD",), "close_date": "date",
             "probability": "int", "line_items": "lines", "next_step": "text", "notes": "text"},
    "rep": {"name": "person", "email": "email", "region": REGIONS, "team_id": "ref:team",
            "quota": "money"},
    "team": {"name": "company", "region": REGIONS, "manager_id": "ref:rep"},
    "product": {"name": "company", "family": ("core", "addon", "services"),
                "list_price": "money"},
    "quote": {"deal_id": "ref:deal", "total": "money",
              "status": ("draft", "sent", "accepted", "rejected"), "valid_until": "date"},
    "invoice": {"account_id": "ref:account", "amount": "money",
                "status": ("open", "paid", "void"), "due_date": "date"},
    "activity": {"deal_id": "ref:deal", "kind": ("call", "email", "meeting"), "date": "date",
                 "owner_id": "ref:rep", "summary": "text"},
    "campaign": {"name": "company", "channel": ("email", "ads", "events", "partners"),
                 "budget": "money", "start_date": "date"},
    "task": {"owner_id": "ref:rep", "subject": "text", "due_date": "date", "done": "bool"},
}
COUNTS = {"rep": 40, "team": 8, "account": 300, "deal": 15_000, "product": 60}
_WORDS = ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark", "Wayne",
          "Tyrell", "Soylent", "Wonka", "Cyberdyne")
_NAMES = ("Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Grace", "Hugo", "Ines")
_SURNAMES = ("Keller", "Moreau", "Rossi", "Novak", "Silva", "Berg", "Tanaka", "Okafor")
_TEXT = ("Waiting on legal review of the master agreement.",
         "Champion moved to a new role; re-qualify the buying committee next week.",
         "Pricing approved by finance; send the order form for signature.",
         "Security questionnaire returned with two open items on data residency.")


def _plural(entity: str) -> str:
    return entity[:-1] + "ies" if entity.endswith("y") else entity + "s"


_MAKE = {
    "company": lambda rng, i: f"{rng.choice(_WORDS)} {rng.choice(_WORDS)} {i}",
    "person": lambda rng, i: f"{rng.choice(_NAMES)} {rng.choice(_SURNAMES)}",
    "email": lambda rng, i: f"user{i}@crm.example",
    "phone": lambda rng, i: f"+1-555-{rng.randrange(10_000):04d}",
    "int": lambda rng, i: rng.randint(1, 100),
    "money": lambda rng, i: round(rng.uniform(1_000, 90_000), 2),
    "date": lambda rng, i: (dt.date(2025, 1, 1) + dt.timedelta(rng.randrange(365))).isoformat(),
    "text": lambda rng, i: rng.choice(_TEXT),
    "bool": lambda rng, i: rng.random() < 0.5,
    "lines": lambda rng, i: [{"sku": f"pro_{rng.randrange(60):04d}", "qty": rng.randint(1, 20),
                              "unit_price": round(rng.uniform(50, 900), 2)}
                             for _ in range(rng.randint(1, 4))],
}


def _value(rng: random.Random, kind: Any, i: int, counts: dict[str, int]) -> Any:
    if isinstance(kind, tuple):
        return rng.choice(kind)
    if kind.startswith("ref:"):
        target = kind[4:]
        return f"{target[:3]}_{rng.randrange(counts.get(target, 200)):04d}"
    return _MAKE[kind](rng, i)


def _database(scale: float) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(60)
    counts = {e: COUNTS.get(e, 200) for e in ENTITIES}
    counts["deal"] = max(400, int(COUNTS["deal"] * scale))
    return {e: [{"id": f"{e[:3]}_{i:04d}", **{f: _value(rng, k, i, counts)
                                              for f, k in fields.items()}}
                for i in range(counts[e])] for e, fields in ENTITIES.items()}


def _schema(kind: Any) -> dict[str, Any]:
    if isinstance(kind, tuple):
        return {"type": "string", "enum": list(kind)}
    if kind == "lines":
        return {"type": "array", "items": {"type": "object", "properties": {
            "sku": {"type": "string"}, "qty": {"type": "integer"},
            "unit_price": {"type": "number"}}}}
    return {"type": {"int": "integer", "money": "number", "bool": "boolean"}.get(kind, "string"),
            **({"format": "date"} if kind == "date" else {})}


def _tools(db: dict[str, list[dict[str, Any]]]) -> list[Tool]:
    """list / get / create / update / delete for every record type."""
    tools = []
    for entity, fields in ENTITIES.items():
        rows, plural = db[entity], _plural(entity)
        keys = [f for f, k in fields.items() if isinstance(k, tuple) or str(k).startswith("ref:")]
        dates = [f for f, k in fields.items() if k == "date"]
        filters = {f: _schema(fields[f]) for f in keys}
        for f in dates:
            filters |= {f"{f}_from": _schema("date"), f"{f}_to": _schema("date")}
        body = {f: _schema(k) for f, k in fields.items()}
        ident = {f"{entity}_id": {"type": "string"}}

        def listing(rows=rows, keys=keys, dates=dates, **where: Any) -> list[dict[str, Any]]:
            return [r for r in rows if all(r[k] == where[k] for k in keys if k in where)
                    and all(where.get(f"{d}_from", "") <= r[d] <= where.get(f"{d}_to", "~")
                            for d in dates)]

        def get(rows=rows, entity=entity, **ids: Any) -> dict[str, Any]:
            return next(r for r in rows if r["id"] == ids[f"{entity}_id"])

        def write(entity=entity, **change: Any) -> dict[str, Any]:
            return {"ok": True, "entity": entity, **change}

        tools += [
            _tool(f"list_{plural}", f"All {plural} matching the filters (every match, unpaged)"
                  f"; filter by {', '.join(filters)}.", filters, [], listing),
            _tool(f"get_{entity}", f"One {entity} by id.", ident, list(ident), get),
            _tool(f"create_{entity}", f"Create a {entity}; returns it with its new id.",
                  body, list(fields)[:1], write),
            _tool(f"update_{entity}", f"Change some fields of a {entity}.",
                  ident | {"changes": {"type": "object", "properties": body}},
                  [*ident, "changes"], write),
            _tool(f"delete_{entity}", f"Delete a {entity} by id.", ident, list(ident), write),
        ]
    return tools


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str],
          function: Any) -> Tool:
    return Tool(name, description, {"type": "object", "properties": properties,
                                    "required": required}, function)


def best_reps(deals: list[dict[str, Any]], reps: list[dict[str, Any]]) -> dict[str, Any]:
    by_id = {r["id"]: r for r in reps}
    totals: dict[str, list[float]] = {}
    for deal in deals:
        total = totals.setdefault(deal["owner_id"], [0.0, 0])
        total[0] += deal["amount"]
        total[1] += 1
    best: dict[str, tuple[str, float, int]] = {}
    for rep_id, (amount, n) in totals.items():
        region = by_id[rep_id]["region"]
        if region not in best or amount > best[region][1]:
            best[region] = (rep_id, amount, int(n))
    return {region: {"rep": by_id[r]["name"], "amount": round(a, 2), "deals": n}
            for region, (r, a, n) in best.items()}


QUARTER = {"stage": "won", "close_date_from": "2025-04-01", "close_date_to": "2025-06-30"}


def task(scale: float = 1.0) -> Task:
    db = _database(scale)

    def plain(seen: Seen) -> ScriptedReply:
        if not seen:
            return call("list_deals", QUARTER, ("list_reps", {}))
        return answer(best_reps(values(seen, "list_deals")[0], values(seen, "list_reps")[0]))

    cells = [dedent(c).strip() for c in (
        """
        help(list_deals)
        won = list_deals(stage="won", close_date_from="2025-04-01", close_date_to="2025-06-30")
        print(len(won), "won deals; the first:", won[0])
        reps = {r["id"]: r for r in list_reps()}
        print(len(reps), "reps; the first:", next(iter(reps.values())))
        """,
        """
        from collections import defaultdict
        totals = defaultdict(lambda: [0.0, 0])
        for d in won:
            totals[d["owner_id"]][0] += d["amount"]
            totals[d["owner_id"]][1] += 1
        best = {}
        for rep_id, (amount, n) in totals.items():
            region = reps[rep_id]["region"]
            if region not in best or amount > best[region][1]:
                best[region] = (rep_id, amount, n)
        final_answer({region: {"rep": reps[r]["name"], "amount": round(a, 2), "deals": n}
                      for region, (r, a, n) in best.items()})
        """)]
    won = [d for d in db["deal"] if d["stage"] == "won"
           and QUARTER["close_date_from"] <= d["close_date"] <= QUARTER["close_date_to"]]
    return Task(f"CRM, {len(ENTITIES) * 5} tools: best rep per region", PROMPT, _tools(db),
                plain, cells, best_reps(won, db["rep"]), frozenset({LARGE}))
