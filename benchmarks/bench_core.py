"""Sandbox core figures: cell latency, tool round trip, gather, session start, RSS, filtering.

Run: python benchmarks/bench_core.py   (prints a table of medians, ratios and targets)
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import time

from _util import Row, machine, median_s, rss_bytes, table
from tooliscode import Limits, Session

ORDERS = [{"id": i, "customer": f"c{i % 500}", "total": (i * 37) % 1000 / 10,
           "status": ("open", "paid", "refunded")[i % 3],
           "items": [{"sku": f"s{i % 50}", "qty": i % 4}]}
          for i in range(10_000)]


def get_order(order_id: int) -> dict:
    """One small order."""
    return {"id": order_id, "status": "paid", "total": 12.5}


def list_orders() -> list:
    """All orders (10,000 dicts)."""
    return ORDERS


def sleepy(i: int) -> int:
    time.sleep(0.1)
    return i


FILTER_CODE = textwrap.dedent("""
    orders = list_orders()
    big = [o for o in orders if o["status"] == "paid" and o["total"] > 50]
    by_customer = {}
    for o in big:
        by_customer[o["customer"]] = by_customer.get(o["customer"], 0) + o["total"]
    top = sorted(by_customer.items(), key=lambda kv: -kv[1])[:5]
    print(len(big), top[0])
""")


def native_filter() -> None:
    orders = json.loads(json.dumps(ORDERS))  # the same work a plain tool call does: a JSON hop
    ns = {"list_orders": lambda: orders, "print": lambda *a: None}
    exec(FILTER_CODE, ns)


def rows() -> list[Row]:
    rows = []
    s = Session([get_order, list_orders, sleepy], limits=Limits(timeout_s=60))
    time.sleep(1.5)  # let the warm pool fill so it does not compete with the measurements
    cell = median_s(lambda: s.run("x = 1"), 300)
    rows.append(("warm cell `x = 1`", f"{cell * 1e3:.3f} ms", "<= 0.3 ms",
                 "ok" if cell <= 3e-4 else "over"))

    r = s.run("import time\nN = 900\nt = time.perf_counter()\n"
              "for i in range(N): get_order(order_id=i)\n"
              "per_call = (time.perf_counter() - t) / N\nprint(per_call)")
    per_call = float(r.stdout.strip())
    rows.append(("tool round trip from guest code", f"{per_call * 1e6:.0f} us", "<= 100 us",
                 "ok" if per_call <= 1e-4 else "over"))

    gather = median_s(lambda: s.run(
        "import asyncio\nawait asyncio.gather(*(sleepy(i) for i in range(10)))"), 5, warmup=1)
    rows.append(("gather of 10 tools x 0.1 s", f"{gather * 1e3:.0f} ms", "<= 120 ms",
                 "ok" if gather <= 0.12 else "over"))

    def new_session() -> None:
        with Session([get_order]) as t:
            t.run("1")

    def new_session_timed() -> float:
        time.sleep(0.8)  # pool refill between samples
        start = time.perf_counter()
        t = Session([get_order])
        t.run("1")
        took = time.perf_counter() - start
        t.close()
        return took

    start_s = sorted(new_session_timed() for _ in range(7))[3]
    rows.append(("new session to first result (warm pool)", f"{start_s * 1e3:.1f} ms", "<= 5 ms",
                 "ok" if start_s <= 5e-3 else "over"))

    probe = ("import time; t=time.perf_counter(); from tooliscode import Session; "
             "s=Session([]); r=s.run('1'); print(time.perf_counter()-t)")
    subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True)  # fill cache
    procs = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True)
        procs.append(time.perf_counter() - t0)
    proc_s = sorted(procs)[1]
    rows.append(("new process to first result (module cached)", f"{proc_s:.2f} s", "<= 1.5 s",
                 "ok" if proc_s <= 1.5 else "over"))

    gc.collect()
    before = rss_bytes()
    alive = [Session([get_order]) for _ in range(50)]
    for a in alive:
        a.run("x = 1")
    time.sleep(2)
    per = (rss_bytes() - before) / 50
    for a in alive:
        a.close()
    rows.append(("RSS per idle session (50 alive)", f"{per / 2**20:.1f} MB", "<= 10 MB",
                 "ok" if per <= 10 * 2**20 else "over"))

    native = median_s(native_filter, 5)
    guest = median_s(lambda: s.run(FILTER_CODE), 5)
    ratio = guest / native
    rows.append(("filter 10,000-dict tool result vs native CPython",
                 f"{guest * 1e3:.0f} ms vs {native * 1e3:.0f} ms = {ratio:.1f}x", "<= 5x",
                 "ok" if ratio <= 5 else "over"))
    s.close()
    return [Row(*r) for r in rows]


def main() -> None:
    print(f"machine: {machine()}\n")
    print(table(rows()))


if __name__ == "__main__":
    main()
