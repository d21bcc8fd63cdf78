"""1,000 tools, of which the question needs three: the real ones hide among the golden
corpus's schemas under 25 made-up services. Plain tool calling sends all 1,000 schemas with
every request (past what the real APIs accept, 128 tools, but the best it could do); code
mode's catalog only lists names, so the model first finds the tools with `search_tools`."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from textwrap import dedent
from typing import Any

from tooliscode import Tool
from tooliscode.openai.testing import ScriptedReply, call

from .base import MANY, MULTI, Seen, Task, answer, values

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from golden.synthetic import synthetic_tools

PROMPT = ("Who is on call for the payments schedule right now? Give their name, phone number "
          "and timezone, and say whether the payments-api component is operational.")
TOTAL = 1_000


def _people(rng: random.Random) -> dict[str, dict[str, Any]]:
    names = ("Ada Keller", "Bruno Moreau", "Chiara Rossi", "Dmitri Novak", "Elena Silva",
             "Farid Berg", "Grace Tanaka", "Hugo Okafor")
    zones = ("Europe/Berlin", "America/New_York", "Asia/Tokyo", "Europe/Lisbon")
    return {f"emp_{i:03d}": {"id": f"emp_{i:03d}", "name": name, "timezone": rng.choice(zones),
                             "phone": f"+1-555-{rng.randrange(10_000):04d}",
                             "title": "Site Reliability Engineer"}
            for i, name in enumerate(names)}


def _undeclared(req_id: str, name: str, args: dict[str, Any]) -> Any:
    raise LookupError(f"{name} is not part of this benchmark's data")


def task(scale: float = 1.0) -> Task:
    rng = random.Random(1000)
    people = _people(rng)
    schedules = {s: rng.choice(sorted(people)) for s in ("payments", "checkout", "search")}
    status = {"payments-api": "degraded_performance", "checkout-api": "operational"}

    def pagerduty_current_on_call(schedule: str) -> dict:
        """Who is on call right now for one on-call schedule (like "payments"): `schedule`,
        `employee_id` and `until`."""
        return {"schedule": schedule, "employee_id": schedules[schedule],
                "until": "2025-11-04T08:00:00Z"}

    def workday_get_employee(employee_id: str) -> dict:
        """An employee's directory record: `id`, `name`, `title`, `phone` and `timezone`."""
        return people[employee_id]

    def statuspage_component_status(component: str) -> dict:
        """The public status of one service component (like "checkout-api"): `component` and
        `status` ("operational", "degraded_performance", "major_outage")."""
        return {"component": component, "status": status.get(component, "operational")}

    real = [pagerduty_current_on_call, workday_get_employee, statuspage_component_status]
    decoys = synthetic_tools(max(20, int(TOTAL * scale)) - len(real), namespaced=False)
    tools: list[Any] = [*decoys, *map(Tool.from_function, real)]

    def plain(seen: Seen) -> ScriptedReply:
        if not seen:
            return call("pagerduty_current_on_call", {"schedule": "payments"},
                        ("statuspage_component_status", {"component": "payments-api"}))
        if len(seen) == 1:
            shift = values(seen, "pagerduty_current_on_call")[0]
            return call("workday_get_employee", {"employee_id": shift["employee_id"]})
        return answer(on_call(values(seen, "workday_get_employee")[0],
                              values(seen, "statuspage_component_status")[0]))

    cells = [dedent(c).strip() for c in (
        """
        for query in ("who is on call schedule", "employee phone timezone",
                      "status of a service component"):
            print(search_tools(query, limit=5))
        """,
        """
        import asyncio
        shift, component = await asyncio.gather(
            pagerduty_current_on_call(schedule="payments"),
            statuspage_component_status(component="payments-api"))
        person = await workday_get_employee(employee_id=shift["employee_id"])
        final_answer({"name": person["name"], "phone": person["phone"],
                      "timezone": person["timezone"],
                      "payments_api_operational": component["status"] == "operational"})
        """)]
    expected = on_call(people[schedules["payments"]], {"status": status["payments-api"]})
    return Task(f"{len(tools):,} tools: find who is on call", PROMPT, tools, plain, cells,
                expected, frozenset({MANY, MULTI}), callback=_undeclared,
                code_must_read=[t.__name__ for t in real])


def on_call(person: dict[str, Any], component: dict[str, Any]) -> dict[str, Any]:
    return {"name": person["name"], "phone": person["phone"], "timezone": person["timezone"],
            "payments_api_operational": component["status"] == "operational"}
