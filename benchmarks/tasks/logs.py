"""A log search that returns megabytes: a day of a service's error lines, where the question
only needs three counts and one host name."""

from __future__ import annotations

import random
import re
from collections import Counter
from textwrap import dedent
from typing import Any

from tooliscode.openai.testing import ScriptedReply, call

from .base import LARGE, Seen, Task, answer, values

PROMPT = ("In checkout-api's logs for 2025-11-03, which three error codes were most frequent "
          "(with their counts), and which upstream host produced the most errors of the most "
          "frequent code?")
DAY = "2025-11-03"
ERRORS = {  # code -> (weight, message)
    "E_UPSTREAM_TIMEOUT": (34, "upstream request timed out after 3000ms"),
    "E_CARD_DECLINED": (26, "card declined by issuer"),
    "E_INVENTORY_LOCK": (19, "could not acquire inventory lock within 500ms"),
    "E_DB_POOL": (13, "database connection pool exhausted (max=50)"),
    "E_TAX_SERVICE": (8, "tax service returned 502 Bad Gateway"),
}
HOSTS = [f"payments-{i}.internal" for i in range(1, 5)] + ["inventory-1.internal",
                                                           "tax-1.internal"]
PATHS = ("/v1/checkout/confirm", "/v1/checkout/cart", "/v1/checkout/payment")
LINE = re.compile(r" upstream=(\S+) code=(\S+)")


def _day(rng: random.Random, n: int) -> list[str]:
    codes = list(ERRORS)
    weights = [w for w, _ in ERRORS.values()]
    lines = []
    for i in range(n):
        second = i * 86_400 // n
        stamp = f"{DAY}T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}." \
                f"{rng.randrange(1000):03d}Z"
        level = rng.choices(("ERROR", "WARN", "INFO"), (40, 15, 45))[0]
        code = rng.choices(codes, weights)[0] if level == "ERROR" else "OK"
        host = rng.choices(HOSTS, (1, 1, 3, 1, 1, 1))[0]
        message = ERRORS[code][1] if code in ERRORS else "request completed"
        lines.append(f"{stamp} {level} checkout-api pod=checkout-{rng.randrange(12)} "
                     f"trace={rng.getrandbits(64):016x} req=req-{rng.getrandbits(32):08x} "
                     f"upstream={host} code={code} latency_ms={rng.randint(3, 3100)} "
                     f"path={rng.choice(PATHS)} msg=\"{message}\"")
    return lines


def error_summary(lines: list[str]) -> dict[str, Any]:
    found = [m.groups() for m in map(LINE.search, lines) if m and " ERROR " in m.string]
    top = Counter(code for _, code in found).most_common(3)
    hosts = Counter(host for host, code in found if code == top[0][0])
    return {"top": top, "host": hosts.most_common(1)[0][0]}


def task(scale: float = 1.0) -> Task:
    day = _day(random.Random(3), max(500, int(24_000 * scale)))

    def search_logs(service: str, date: str, query: str = "", limit: int = 100_000) -> str:
        """Log lines of one service on one day (YYYY-MM-DD) containing `query`, one per line,
        oldest first."""
        lines = day if (service, date) == ("checkout-api", DAY) else []
        return "\n".join([line for line in lines if query in line][:limit])

    def list_services() -> list[str]:
        """The services that ship logs."""
        return ["checkout-api", "cart-api", "payments-api", "search-api"]

    def list_deploys(service: str, date: str) -> list[dict]:
        """Deploys of one service on one day."""
        return [{"service": service, "version": "2025.11.3-1", "at": f"{date}T09:12:00Z"}]

    def plain(seen: Seen) -> ScriptedReply:
        if not seen:
            return call("search_logs", {"service": "checkout-api", "date": DAY,
                                        "query": "ERROR"})
        return answer(error_summary(values(seen, "search_logs")[0].splitlines()))

    cells = [dedent(c).strip() for c in (
        """
        text = search_logs(service="checkout-api", date="2025-11-03", query="ERROR")
        lines = text.splitlines()
        print(len(lines), "lines, e.g.:", *lines[:2], sep="\\n")
        """,
        """
        import re
        from collections import Counter
        pairs = [m.groups() for m in (re.search(r" upstream=(\\S+) code=(\\S+)", line)
                                      for line in lines if " ERROR " in line) if m]
        top = Counter(code for _, code in pairs).most_common(3)
        host = Counter(h for h, code in pairs if code == top[0][0]).most_common(1)[0][0]
        final_answer({"top": top, "host": host})
        """)]
    return Task("log search: top error codes of a day", PROMPT,
                [search_logs, list_services, list_deploys], plain, cells,
                error_summary(day), frozenset({LARGE}))
