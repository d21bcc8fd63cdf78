"""Small results: two exchange rates and a conversion. Plain tool calling's best case, since
its few tool schemas cost less than code mode's instructions and every result is tiny; the
code-mode model prints the figures and words the answer itself, as models usually do."""

from __future__ import annotations

import json
import random
from textwrap import dedent
from typing import Any

from tooliscode.openai.testing import ScriptedReply, call

from .base import SMALL, Seen, Task, answer, values

PROMPT = "How much is 250 USD in EUR and in JPY at today's rates? Round to 2 decimals."


def task(scale: float = 1.0) -> Task:
    rng = random.Random(8)
    rates = {c: round(rng.uniform(lo, hi), 6) for c, lo, hi in
             (("EUR", 1.02, 1.15), ("JPY", 0.0062, 0.0071), ("GBP", 1.2, 1.35),
              ("CHF", 1.05, 1.18))}

    def get_exchange_rate(currency: str) -> dict:
        """Today's rate of one currency (ISO code such as "EUR"): `currency`, `usd_per_unit`
        (how many USD one unit buys) and `as_of`."""
        return {"currency": currency, "usd_per_unit": rates[currency], "as_of": "2025-11-03"}

    def list_currencies() -> list[str]:
        """The ISO codes of the currencies with a daily rate."""
        return sorted(rates)

    def get_rate_history(currency: str, days: int = 30) -> list[dict]:
        """Daily rates of one currency for the last `days` days, oldest first."""
        return [{"day": f"2025-10-{d + 1:02d}", "usd_per_unit": rates[currency]}
                for d in range(min(days, 30))]

    def plain(seen: Seen) -> ScriptedReply:
        if not seen:
            return call("get_exchange_rate", {"currency": "EUR"},
                        ("get_exchange_rate", {"currency": "JPY"}))
        got = {r["currency"]: r["usd_per_unit"] for r in values(seen, "get_exchange_rate")}
        return answer(_converted(got))

    cell = dedent("""
        import asyncio, json
        eur, jpy = await asyncio.gather(get_exchange_rate(currency="EUR"),
                                        get_exchange_rate(currency="JPY"))
        print(json.dumps({"EUR": round(250 / eur["usd_per_unit"], 2),
                          "JPY": round(250 / jpy["usd_per_unit"], 2)}))
        """).strip()
    return Task("small results: convert 250 USD", PROMPT,
                [get_exchange_rate, list_currencies, get_rate_history], plain, [cell],
                _converted(rates), frozenset({SMALL}), code_reply=json.loads)


def _converted(rates: dict[str, Any]) -> dict[str, float]:
    return {c: round(250 / rates[c], 2) for c in ("EUR", "JPY")}
