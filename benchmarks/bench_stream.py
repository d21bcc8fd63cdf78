"""Output as it is printed (`Session.run(on_output=...)`), on both runtimes: how soon a
printed line reaches the host while the cell goes on computing, and what streaming costs a
cell that prints 10,000 lines, or nothing.

Run: python benchmarks/bench_stream.py   (run_all.py includes it)
"""

from __future__ import annotations

import statistics
import time

from _util import Row, load, machine, settle, table
from tooliscode import Limits, Session

SAMPLES = 40
ROUNDS = 15
# The line's own time.time() is the guest's wall clock, which is the host's (WASI's
# realtime clock): arrival minus it is the print's way to the host, whatever the cell does
# after it. The cell then computes in Python for 60 ms, so the line arrives mid-cell.
_FIRST = """
import time
print(time.time())
end = time.perf_counter() + 0.06
while time.perf_counter() < end:
    pass
"""
# Twenty lines in a burst use up the lines that go one by one; the last one then waits for
# the monitor while the cell computes.
_TAIL = """
import time
for i in range(19):
    print(i)
print(time.time())
end = time.perf_counter() + 0.06
while time.perf_counter() < end:
    pass
"""
_LINES = "for i in range(10_000):\n    print(f'line {i}: some text')"


def _arrival(s: Session, code: str) -> float:
    """Seconds from the print of the cell's time.time() line to its arrival here."""
    seen: dict[str, float] = {}

    def on_output(stream: str, text: str) -> None:
        now = time.time()
        for line in text.splitlines():
            if "." in line:  # the time.time() line
                seen.setdefault(line, now)

    s.run(code, on_output=on_output)
    (printed, arrived), = seen.items()
    return arrived - float(printed)


def _arrivals(s: Session, code: str) -> list[float]:
    return [_arrival(s, code) for _ in range(SAMPLES)]


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def _ratio(s: Session, code: str) -> tuple[float, float, float]:
    """(median per-round ratio with/without a callback, the two medians), taking turns."""
    got: list[str] = []
    plain, streamed, ratios = [], [], []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        s.run(code)
        without = time.perf_counter() - t
        got.clear()
        t = time.perf_counter()
        s.run(code, on_output=lambda _stream, text: got.append(text))
        with_cb = time.perf_counter() - t
        plain.append(without)
        streamed.append(with_cb)
        ratios.append(with_cb / without)
    return statistics.median(ratios), statistics.median(plain), statistics.median(streamed)


def _aratio(s: Session, code: str) -> float:
    """`_ratio` under `arun`, the callback on the event loop."""
    import asyncio

    async def rounds() -> float:
        got: list[str] = []
        ratios = []
        for _ in range(ROUNDS):
            t = time.perf_counter()
            await s.arun(code)
            without = time.perf_counter() - t
            t = time.perf_counter()
            await s.arun(code, on_output=lambda _stream, text: got.append(text))
            ratios.append((time.perf_counter() - t) / without)
        return statistics.median(ratios)

    return asyncio.run(rounds())


def _runtime_rows(runtime: str) -> list[Row]:
    rows = []
    with Session(runtime=runtime, limits=Limits(timeout_s=60)) as s:
        s.run(_LINES)
        s.run(_LINES, on_output=lambda _s, _t: None)  # warm both paths
        settle()
        first = _arrivals(s, _FIRST)
        rows.append(Row(f"{runtime}: first output chunk after `print`, p99 of {SAMPLES}",
                        f"{_p99(first) * 1e3:.2f} ms (median {statistics.median(first) * 1e3:.2f})",
                        "<= 100 ms", "ok" if _p99(first) <= 0.1 else "over"))
        tail = _arrivals(s, _TAIL)
        rows.append(Row(f"{runtime}: last line of a 20-line burst, then computing, p99",
                        f"{_p99(tail) * 1e3:.2f} ms (median {statistics.median(tail) * 1e3:.2f})",
                        "<= 100 ms", "ok" if _p99(tail) <= 0.1 else "over"))
        ratio, without, with_cb = _ratio(s, _LINES)
        rows.append(Row(f"{runtime}: cell printing 10,000 lines, with a callback vs without",
                        f"{with_cb * 1e3:.1f} vs {without * 1e3:.1f} ms = {ratio:.3f}x ({load()})",
                        "<= 1.10x", "ok" if ratio <= 1.10 else "over"))
        rows.append(Row(f"{runtime}: the same under `arun` (callback on the event loop)",
                        f"{_aratio(s, _LINES):.3f}x", "info", "info"))
        ratio, without, with_cb = _ratio(s, "x = 1")
        rows.append(Row(f"{runtime}: cell printing nothing, with a callback vs without",
                        f"{with_cb * 1e3:.3f} vs {without * 1e3:.3f} ms = {ratio:.2f}x",
                        "info", "info"))
    return rows


def rows() -> list[Row]:
    return [*_runtime_rows("default"), *_runtime_rows("data")]


def main() -> None:
    print(f"machine: {machine()}\n")
    print(table(rows()))


if __name__ == "__main__":
    main()
