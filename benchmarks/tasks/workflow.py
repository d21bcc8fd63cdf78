"""A multi-step workflow of small calls: escalating a support ticket takes eight lookups, each
needing an id from the one before. Plain tool calling needs a model turn per lookup; code
mode looks at the first three results, then writes the rest of the chain at once."""

from __future__ import annotations

import random
from collections.abc import Callable
from textwrap import dedent
from typing import Any, NamedTuple

from tooliscode import Tool
from tooliscode.openai.testing import ScriptedReply, call

from .base import MULTI, Seen, Task, answer

PROMPT = ("Ticket T-1042 says a parcel never arrived. Who should it be escalated to? Give the "
          "escalation contact's name and email, and the facility where the parcel was last "
          "scanned, with its city.")

class Step(NamedTuple):
    tool: str
    argument: str
    source: str | None
    """The field of the previous step's result that this step's argument comes from."""
    description: str


CHAIN = [
    Step("get_ticket", "ticket_id", None,
         'One support ticket by id (like "T-1042"): subject, status, order_id.'),
    Step("get_order", "order_id", "order_id", "One order by id: total and shipment_id."),
    Step("get_shipment", "shipment_id", "shipment_id",
         "One shipment by id: carrier and tracking_number."),
    Step("track_parcel", "tracking_number", "tracking_number",
         "The carrier's tracking status: the last scan's facility id and time."),
    Step("get_facility", "facility_id", "last_scan_facility",
         "One logistics facility by id: name, city and manager_id."),
    Step("get_employee", "employee_id", "manager_id", "One employee by id: name, email, team_id."),
    Step("get_team", "team_id", "team_id", "One team by id: name and escalation_policy_id."),
    Step("get_escalation_policy", "policy_id", "escalation_policy_id",
         "One escalation policy by id: who to contact."),
]

def _records(rng: random.Random, n: int) -> dict[str, dict[str, dict[str, Any]]]:
    """Small linked tables: every record points at one in the next table."""
    cities = ("Leipzig", "Lyon", "Turin", "Brno", "Porto", "Ghent", "Aarhus", "Graz")
    first = ("Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Grace", "Hugo")
    last = ("Keller", "Moreau", "Rossi", "Novak", "Silva", "Berg", "Tanaka", "Okafor")
    pick = lambda: rng.randrange(n)
    tickets = {f"T-{1000 + i}": {"id": f"T-{1000 + i}", "subject": "Parcel not delivered",
                                 "status": "open", "order_id": f"O-{pick()}",
                                 "customer_email": f"customer{i}@mail.example"}
               for i in range(n)}
    return {
        "get_ticket": tickets,
        "get_order": {f"O-{i}": {"id": f"O-{i}", "total": round(rng.uniform(20, 400), 2),
                                 "shipment_id": f"S-{pick()}"} for i in range(n)},
        "get_shipment": {f"S-{i}": {"id": f"S-{i}", "carrier": rng.choice(("DHL", "UPS")),
                                    "tracking_number": f"1Z{i:06d}"} for i in range(n)},
        "track_parcel": {f"1Z{i:06d}": {"tracking_number": f"1Z{i:06d}", "status": "in transit",
                                        "last_scan_facility": f"F-{pick()}",
                                        "last_scan_at": f"2025-10-{rng.randint(1, 28):02d}"}
                         for i in range(n)},
        "get_facility": {f"F-{i}": {"id": f"F-{i}", "name": f"Hub {i}",
                                    "city": rng.choice(cities), "manager_id": f"E-{pick()}"}
                         for i in range(n)},
        "get_employee": {f"E-{i}": {"id": f"E-{i}", "name": f"{rng.choice(first)} "
                                    f"{rng.choice(last)}", "email": f"e{i}@logistics.example",
                                    "team_id": f"TM-{pick()}"} for i in range(n)},
        "get_team": {f"TM-{i}": {"id": f"TM-{i}", "name": f"Team {i}",
                                 "escalation_policy_id": f"P-{pick()}"} for i in range(n)},
        "get_escalation_policy": {f"P-{i}": {"id": f"P-{i}", "contact": {
            "name": f"{rng.choice(first)} {rng.choice(last)}", "email": f"esc{i}@ops.example"}}
            for i in range(n)},
    }


def task(scale: float = 1.0) -> Task:
    tables = _records(random.Random(5), max(50, int(200 * scale)))

    def lookup(table: str, key: str) -> dict:
        try:
            return tables[table][key]
        except KeyError:
            raise KeyError(f"{table}: no record {key!r}") from None

    def list_tickets(status: str = "open") -> list[dict]:
        """Tickets with one status."""
        return [t for t in tables["get_ticket"].values() if t["status"] == status]

    def add_ticket_note(ticket_id: str, note: str) -> dict:
        """Append a note to a ticket."""
        return {"ticket_id": ticket_id, "saved": True}

    def plain(seen: Seen) -> ScriptedReply:
        if len(seen) < len(CHAIN):
            step = CHAIN[len(seen)]
            value = seen[-1][0].value[step.source] if seen else "T-1042"
            return call(step.tool, {step.argument: value})
        return answer(_escalation([turn[0].value for turn in seen]))

    cells = [dedent(c).strip() for c in (
        """
        ticket = get_ticket(ticket_id="T-1042")
        order = get_order(order_id=ticket["order_id"])
        shipment = get_shipment(shipment_id=order["shipment_id"])
        print(ticket, order, shipment, sep="\\n")
        """,
        """
        scan = track_parcel(tracking_number=shipment["tracking_number"])
        facility = get_facility(facility_id=scan["last_scan_facility"])
        manager = get_employee(employee_id=facility["manager_id"])
        team = get_team(team_id=manager["team_id"])
        policy = get_escalation_policy(policy_id=team["escalation_policy_id"])
        final_answer({"contact": policy["contact"]["name"], "email": policy["contact"]["email"],
                      "facility": facility["name"], "city": facility["city"]})
        """)]
    tools = [*(_lookup_tool(step, lookup) for step in CHAIN), list_tickets, add_ticket_note]
    return Task("multi-step: escalate a ticket (8 lookups)", PROMPT, tools, plain, cells,
                _escalation(_walk(lookup)), frozenset({MULTI}))


def _lookup_tool(step: Step, lookup: Callable[[str, str], dict]) -> Tool:
    return Tool(step.tool, step.description,
                {"type": "object", "properties": {step.argument: {"type": "string"}},
                 "required": [step.argument]},
                lambda **arguments: lookup(step.tool, arguments[step.argument]))


def _walk(lookup: Callable[[str, str], dict]) -> list[dict[str, Any]]:
    """The chain's records, fetched directly."""
    records, key = [], "T-1042"
    for step in CHAIN:
        key = records[-1][step.source] if step.source else key
        records.append(lookup(step.tool, key))
    return records


def _escalation(chain: list[dict[str, Any]]) -> dict[str, str]:
    facility, policy = chain[4], chain[7]
    return {"contact": policy["contact"]["name"], "email": policy["contact"]["email"],
            "facility": facility["name"], "city": facility["city"]}
