"""A stopped cell costs only itself: what coming back costs, and what keeping the point to come
back to adds to an ordinary cell, on both runtimes, each against the same session with
keeping turned off (`Limits.rollback_bytes=0`) in the same run.

- cancel -> next cell's result, p99, with the cell in a pure-Python loop, a long C call,
  `time.sleep`, a blocking tool call and gathered async calls (a sample during which the
  host's collector went through its whole heap, 30 ms and more whatever the sample did, is
  reported apart);
- data: the commit after an ordinary cell (a few variables; a 100k-row DataFrame), and a
  session holding 100 MB coming back after a stop;
- default: the point after each cell, for sessions holding 10 KB, 1 MB and 50 MB: after a
  cell that changes a few variables and names nothing else (what it changed comes with its
  result), and after one that names the state (`len(rows)`: the whole state is pickled).

Run: python benchmarks/bench_rollback.py
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import threading
import time

from _util import Row, load, table
from tooliscode import Limits, Session, Tool
from tooliscode.codetool import CodeTool, Toolbox
from tooliscode.runtime import runtime_named

_ENTERED = threading.Event()


def blocks() -> str:
    """A sync tool that holds its thread for a while."""
    _ENTERED.set()
    time.sleep(0.5)
    return "done"


async def waits() -> str:
    """An async tool that sleeps."""
    _ENTERED.set()
    await asyncio.sleep(30)
    return "done"


PLACES = {
    "loop": ("while True:\n    pass", False),
    "C call": ("sum(range(10**15))", False),
    "sleep": ("import time\ntime.sleep(60)", False),
    "blocking tool": ("blocks()", True),
    "gathered calls": ("import asyncio\nawait asyncio.gather(waits(), waits(), waits())", True),
}


def _cancel_when_running(session: Session, runner: threading.Thread, after_s: float) -> float:
    """Once `runner`'s cell has run `after_s`, cancel it and wait for `runner`; returns when
    the cancel was made (`time.perf_counter()`)."""
    while not session.running:
        time.sleep(0.001)
    time.sleep(after_s)
    start = time.perf_counter()
    session.cancel()
    runner.join()
    return start


class _FullCollections:
    """When the host's collector went through its oldest generation (`gc.callbacks`): such a
    pass over the whole process's heap took 30 ms and more here, in a sample now and then,
    whatever the sample was doing."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self._started = 0.0

    def __enter__(self) -> _FullCollections:
        gc.callbacks.append(self._seen)
        return self

    def __exit__(self, *_exc: object) -> None:
        gc.callbacks.remove(self._seen)

    def _seen(self, phase: str, info: dict) -> None:
        if info["generation"] == 2:
            if phase == "start":
                self._started = time.perf_counter()
            else:
                self.spans.append((self._started, time.perf_counter()))

    def within(self, start: float, end: float) -> bool:
        return any(a < end and b > start for a, b in self.spans)


def cancel_to_next_ms(runtime: str, samples: int = 20
                      ) -> tuple[dict[str, list[float]], list[float]]:
    """Per place: ms from `cancel()` to the next cell's result, in a session with state; and
    apart, the samples during which the host collected its whole heap (`_FullCollections`)."""
    out: dict[str, list[float]] = {}
    collected: list[float] = []
    with Session([blocks, waits], runtime=runtime, limits=Limits(timeout_s=120)) as s, \
            _FullCollections() as full:
        s.run("rows = [{'id': i, 'name': f'n{i}'} for i in range(1000)]")
        for place, (code, tool) in PLACES.items():
            times = out[place] = []
            for _ in range(samples):
                _ENTERED.clear()
                runner = threading.Thread(target=s.run, args=(code,))
                runner.start()
                if tool:
                    _ENTERED.wait(30)
                start = _cancel_when_running(s, runner, 0.02)
                r = s.run("len(rows)")
                end = time.perf_counter()
                assert r.value == "1000", r.error
                (collected if full.within(start, end) else times).append((end - start) * 1e3)
    return out, collected


def _per_cell_ms(session: Session, code: str, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        session.run(code)
    session.run("0")  # the last cell's commit is done once this one has run
    return (time.perf_counter() - start) * 1e3 / (n + 1)


def added_per_cell_ms(runtime: str, state: str, cell: str, n: int, rounds: int = 5
                      ) -> tuple[float, float]:
    """(ms per cell without keeping, ms added by keeping): the median over rounds of each
    round's own difference, the two sessions taking turns."""
    base, added = [], []
    with Session([], runtime=runtime, limits=Limits(rollback_bytes=0)) as off, \
            Session([], runtime=runtime) as on:
        for s in (off, on):
            r = s.run(state)
            assert r.ok, r.error
            _per_cell_ms(s, cell, 3)
        for _ in range(rounds):
            without = _per_cell_ms(off, cell, n)
            with_ = _per_cell_ms(on, cell, n)
            base.append(without)
            added.append(with_ - without)
    return statistics.median(base), statistics.median(added)


def commit_ms(cell: str, state: str, n: int = 20) -> float:
    """Data: the commit of what one `cell` wrote (median ms), timed on the guest's thread. The
    session keeps no points of its own (`rollback_bytes=0`): each is made here, after its
    cell, the first (which copies every page written since the guest started) left out."""
    with Session([], runtime="data", limits=Limits(rollback_bytes=0)) as s:
        s.run(state)
        worker = s._state.worker
        times = []
        for _ in range(n + 1):
            s.run(cell)

            def timed(instance):
                start = time.perf_counter()
                instance.commit()
                return time.perf_counter() - start

            times.append(worker.between_turns(timed) * 1e3)
        return statistics.median(times[1:])


def renewed_run_cells_ms(runtime: str, runs: int = 30) -> tuple[float, float, float]:
    """Runs of three cells, each in the last run's sandbox renewed (a framework's per-run
    sandbox, as `CodeTool.take`/`finish` give it): the median ms of the first, second and
    third cell. The second waits for the run's first rollback point."""
    tools = Toolbox.of([Tool.from_function(blocks)])
    times: list[list[float]] = [[], [], []]
    with CodeTool(tools, keep_spare=True, runtime=runtime) as code:
        run = code.take()
        for n in range(runs + 3):
            for i, cell in enumerate((f"a = [{n}] * 100", "b = a + [1]", "c = len(b)")):
                start = time.perf_counter()
                assert code.run_code(cell, sandbox=run).ok
                if n >= 3:
                    times[i].append((time.perf_counter() - start) * 1e3)
            code.finish(run, tools)
            deadline = time.monotonic() + 60
            while (spare := code.spare) is None or spare.lock.locked():  # until renewed
                if time.monotonic() > deadline:
                    raise RuntimeError("the run's sandbox was not renewed within 60 s")
                time.sleep(0.001)
            run = code.take()
    first, second, third = (statistics.median(t) for t in times)
    return first, second, third


def _run_into(session: Session, code: str, out: list) -> None:
    out.append(session.run(code))


def back_after_stop_ms(runtime: str, state: str, samples: int = 7) -> float:
    """ms from stopping a sleeping cell to its result, the session back (median)."""
    times = []
    with Session([], runtime=runtime, limits=Limits(timeout_s=120)) as s:
        assert s.run(state).ok
        for _ in range(samples):
            result: list = []
            runner = threading.Thread(target=_run_into, args=(s, "import time\ntime.sleep(60)",
                                                              result))
            runner.start()
            start = _cancel_when_running(s, runner, 0.05)
            times.append((time.perf_counter() - start) * 1e3)
            assert result[0].rolled_back, result[0].error
        assert s.run("big").ok
    return statistics.median(times)


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


_SMALL = "a = 1\nb = [a] * 10"
_FEW = "a += 1\nb = [a] * 10\nc = {'a': a}"
_FRAME = ("import pandas as pd, numpy as np\n"
          "df = pd.DataFrame({'x': np.arange(100_000), 'y': np.arange(100_000) * 0.5, "
          "'k': np.arange(100_000) % 7})")


def _rows_state(count: int) -> str:
    """A session holding `count` rows of tool results (about 50 bytes each, pickled)."""
    return f"rows = [{{'id': i, 'name': f'n{{i}}', 'v': i * 1.5}} for i in range({count})]"


def rows() -> list[Row]:
    out: list[Row] = []
    runtime_named("data").warm_up()
    for runtime in ("default", "data"):
        found, collected = cancel_to_next_ms(runtime)
        every = [t for times in found.values() for t in times]
        worst = max(found, key=lambda p: _p99(found[p]))
        p99 = _p99(every)
        apart = (f"; apart: {len(collected)} during a full collection of the host's heap, "
                 f"longest {max(collected):.1f} ms" if collected else "")
        out.append(Row(f"{runtime}: cancel -> next cell's result, p99 (loop, C call, sleep, "
                       "blocking tool, gathered calls)",
                       f"{p99:.1f} ms (slowest place: {worst}, p99 {_p99(found[worst]):.1f} ms; "
                       f"median {statistics.median(every):.1f} ms; {load()}{apart})", "<= 50 ms",
                       "ok" if p99 <= 50 else "over"))
    base, added = added_per_cell_ms("data", _SMALL, _FEW, 50)
    alone = commit_ms(_FEW, _SMALL, 60)
    out.append(Row("data: rollback point per ordinary cell (a few variables), against none",
                   f"+{added:.3f} ms per cell on {base:.2f} ms (the commit alone {alone:.3f} ms)",
                   "<= 0.3 ms", "ok" if max(added, alone) <= 0.3 else "over"))
    base, added = added_per_cell_ms("data", "import pandas as pd", _FRAME, 5)
    alone = commit_ms(_FRAME, "import pandas as pd", 7)
    out.append(Row("data: rollback point after a cell building a 100k-row DataFrame",
                   f"+{added:.2f} ms per cell on {base:.1f} ms (the commit alone {alone:.2f} ms)",
                   "report", "info"))
    for runtime in ("default", "data"):
        first, second, third = renewed_run_cells_ms(runtime)
        out.append(Row(f"{runtime}: a renewed run's cells: the second (after the run's first "
                       "rollback point) against the first and third",
                       f"{second:.2f} ms (first {first:.2f} ms, third {third:.2f} ms)",
                       "report", "info"))
    back = back_after_stop_ms("data", "import numpy as np\n"
                              "big = np.random.default_rng(1).bytes(100 << 20)")
    small = back_after_stop_ms("data", "big = 1")
    out.append(Row("data: stop -> session back, holding 100 MB (a small session)",
                   f"{back:.1f} ms ({small:.1f} ms)", "<= 20 ms",
                   "ok" if back <= 20 else "over"))
    warm = None
    for label, count in (("10 KB", 200), ("1 MB", 20_000), ("50 MB", 1_000_000)):
        n = 50 if count < 100_000 else 5
        base, added = added_per_cell_ms("default", _rows_state(count), "x = 1", n)
        if warm is None:
            warm = base
        share = added / warm * 100
        verdict = ("ok" if share <= 15 else "over") if label == "10 KB" else "info"
        out.append(Row(f"default: rollback point per ordinary cell (`x = 1`), session holding "
                       f"{label}", f"{added:+.3f} ms per cell ({share:.0f}% of a warm cell, "
                       f"{warm:.3f} ms)", "<= 15% at 10 KB" if label == "10 KB" else "report",
                       verdict))
    for label, count in (("10 KB", 200), ("1 MB", 20_000), ("50 MB", 1_000_000)):
        n = 50 if count < 100_000 else 5
        base, added = added_per_cell_ms("default", _rows_state(count), "n = len(rows)", n)
        out.append(Row(f"default: rollback point per cell naming the state (`n = len(rows)`: "
                       f"pickled whole), session holding {label}",
                       f"{added:+.3f} ms per cell on {base:.3f} ms", "report", "info"))
    return out


if __name__ == "__main__":
    print(table(rows()))
