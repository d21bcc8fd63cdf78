"""Small helpers shared by the benchmark scripts."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Row(NamedTuple):
    """One line of a benchmark table."""

    figure: str
    measured: str
    target: str
    verdict: str


@dataclass
class Paired:
    """Seconds measured in rounds, the flows taking turns within each: through code (`ours`)
    and the framework's own way (`theirs`), each beside its baseline when one is given (the
    same flow without what is measured, in the same round).

    On a shared machine each flow's times move together by tens of percent from one moment
    to the next, so `extra` takes the median of each round's own difference: a slow moment
    then weighs on both sides of it alike, where a difference of medians taken apart moves
    with the moments each median happened to fall in. `net` gives the sides' medians, and
    `best` the best of each series, what the flows cost undisturbed."""

    ours: list[float] = field(default_factory=list)
    theirs: list[float] = field(default_factory=list)
    ours_base: list[float] = field(default_factory=list)
    theirs_base: list[float] = field(default_factory=list)

    def add(self, ours: float, theirs: float, ours_base: float = 0.0,
            theirs_base: float = 0.0) -> None:
        """One round's four times."""
        for series, value in ((self.ours, ours), (self.theirs, theirs),
                              (self.ours_base, ours_base), (self.theirs_base, theirs_base)):
            series.append(value)

    def net(self, pick: Callable[[list[float]], float] = statistics.median
            ) -> tuple[float, float]:
        """(ours, theirs), each picked from its series less its baseline's."""
        return (pick(self.ours) - pick(self.ours_base),
                pick(self.theirs) - pick(self.theirs_base))

    @property
    def extra(self) -> float:
        """What code adds beyond the framework's own: the median over rounds of
        (ours - its baseline) - (theirs - its baseline)."""
        return statistics.median(
            (ours - ours_base) - (theirs - theirs_base) for ours, theirs, ours_base, theirs_base
            in zip(self.ours, self.theirs, self.ours_base, self.theirs_base, strict=True))

    @property
    def best(self) -> str:
        ours, theirs = self.net(min)
        return (f"best of each: {ours * 1e3:.1f} vs {theirs * 1e3:.1f} ms, "
                f"{(ours - theirs) * 1e3:+.1f} ms")


def median_s(fn: Callable[[], object], repeat: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def settle(limit_s: float = 15.0, poll_s: float = 0.05) -> None:
    """Wait until this process is idle: a new session's pool boots a spare interpreter in
    the background (up to a few seconds of CPU), which would share the cores and the GIL
    with what is timed next."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        cpu = time.process_time()
        time.sleep(poll_s)
        if time.process_time() - cpu < poll_s / 10:
            return


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


def load() -> str:
    """The 1-minute load average, shown beside wall-clock figures (above 2 they are noisy)."""
    return f"load {os.getloadavg()[0]:.1f}"


def with_redis(figure: str, body: Callable[[str], list[Any]]) -> list[Any]:
    """`body(url)` with a private Redis server on loopback, stopped after; one row saying so
    when there is no redis-server."""
    binary = shutil.which("redis-server")
    if binary is None:
        return [Row(figure, "no redis-server", "-", "-")]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder = tempfile.mkdtemp()
    server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", folder], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    _until_serving(url)
    try:
        return body(url)
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(folder, ignore_errors=True)


def _until_serving(url: str, timeout_s: float = 20.0) -> None:
    """Wait until the Redis at `url` answers a PING (it takes a moment to start)."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=0.2)
    give_up = time.monotonic() + timeout_s
    while not _pings(client, redis.RedisError) and time.monotonic() < give_up:
        time.sleep(0.05)
    client.close()


def _pings(client: Any, errors: type[Exception]) -> bool:
    try:
        return bool(client.ping())
    except errors:
        return False
