"""Small helpers shared by the benchmark scripts."""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import NamedTuple


class Row(NamedTuple):
    """One line of a benchmark table."""

    figure: str
    measured: str
    target: str
    verdict: str


def median_s(fn: Callable[[], object], repeat: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def machine() -> str:
    """The CPU, core count, memory, Python and wasmtime this ran on."""
    model = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = 0.0
    from importlib.metadata import version

    return (f"{model}, {os.cpu_count()} cores, {mem:.0f} GiB, Python "
            f"{platform.python_version()}, wasmtime {version('wasmtime')}")


def table(rows: list[tuple[str, ...]] | list[Row],
          head: tuple[str, ...] = Row._fields) -> str:
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), sep, *map(line, rows)])
