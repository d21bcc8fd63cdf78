"""Durable sessions: snapshot and restore times and sizes on both runtimes, and what a move
between two worker processes over a real Redis costs per cell.

The default runtime snapshots by pickling the variables; the data runtime copies the
interpreter itself (its memory as a delta against its start image). Times are medians of
wall time, with the process's CPU time beside them (the machine may be shared: see the load).

Run: python benchmarks/bench_durable.py   (needs redis-server on PATH)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import zlib
from pathlib import Path

from _util import Row, table, with_redis
from tooliscode import Limits, Session

ROWS = "data = [{{'id': i, 'name': f'item {{i}}', 'tags': ['a', 'b']}} for i in range({n})]"
TEN_MB = ROWS.format(n=50_000)
"""About 10 MB of objects (`_held` prints it), in about 11 MB of fresh pages: the start image's
free holes are filled when it is built (`runtime/data/_image_ballast.py`), else the guest's
allocator spread these objects over 8,000 of the image's pages and the snapshot carried 44 MB."""
BIG = ROWS.format(n=100_000)
"""The earlier "10 MB" row: about 20 MB of objects."""
HELD = ("import sys\nprint(len(data), round(sum(sys.getsizeof(d) + sys.getsizeof(d['id']) + "
        "sys.getsizeof(d['name']) + sys.getsizeof(d['tags']) for d in data) / 1e6, 1))")
PANDAS = ("import numpy as np, pandas as pd\n"
          "df = pd.DataFrame({'id': np.arange(100_000), 'x': np.random.rand(100_000),\n"
          "                   'name': [f'row {i}' for i in range(100_000)]})")
WORKER = Path(__file__).resolve().parent.parent / "tests" / "durable" / "worker.py"
LIMITS = Limits(timeout_s=120, memory_bytes=512 * 2**20)


def _load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def _timed(fn, repeat: int) -> tuple[float, float, object]:
    """Median wall and CPU seconds of `fn`, and its last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return statistics.median(walls), statistics.median(cpus), out


def _ms(wall: float, cpu: float) -> str:
    return f"{wall * 1e3:.1f} ms (cpu {cpu * 1e3:.1f})"


def _held(s: Session) -> str:
    """What the session's `data` holds: its dicts and their values, by `sys.getsizeof` (the
    keys and the tags' strings are shared); on the data runtime also the pages its guest has
    written since the start image (what an exact snapshot carries)."""
    count, size = s.run(HELD).stdout.split()
    held = f"{int(count):,} dicts, {size} MB of objects"
    if s.runtime.exact:
        from tooliscode.runtime._wasmtime import page_map as pagemap

        def written(guest) -> int:
            address, length = guest.memory_span()
            return (pagemap.written(address, length) or b"").count(1) * pagemap.PAGE

        held += f", {s._state.worker.between_turns(written) / 1e6:.0f} MB of pages written"
    return held


def _snapshot_rows(label: str, code: str, repeat: int, runtime: str, target_ms: float | None,
                   target_bytes: int | None = None) -> list[Row]:
    with Session([], limits=LIMITS, runtime=runtime) as s:
        result = s.run(code)
        assert result.ok, result.error
        if code.startswith("data ="):
            label += f" ({_held(s)})"
        s.snapshot()  # the first one also hashes the start image, once per process
        snap, snap_cpu, blob = _timed(s.snapshot, repeat)

    def restore() -> None:
        time.sleep(0.3)  # sessions arrive apart, so the default runtime's pool has refilled
        wall, cpu = time.perf_counter(), time.process_time()
        Session.restore(blob, [], limits=LIMITS, runtime=runtime).close()
        return time.perf_counter() - wall, time.process_time() - cpu

    samples = [restore() for _ in range(repeat)]
    back = statistics.median(w for w, _ in samples)
    back_cpu = statistics.median(c for _, c in samples)
    measured = (f"{_ms(snap, snap_cpu)} / {_ms(back, back_cpu)}, {len(blob) / 1e6:.2f} MB, "
                f"{_load()}")
    if target_ms is None:
        return [Row(f"snapshot / restore, {label} ({runtime} runtime)", measured, "reported",
                    "info")]
    ok = snap <= target_ms / 1e3 and back <= target_ms / 1e3 and \
        (target_bytes is None or len(blob) <= target_bytes)
    target = f"each <= {target_ms:.0f} ms" + (f"; <= {target_bytes / 1e6:.0f} MB"
                                               if target_bytes else "")
    return [Row(f"snapshot / restore, {label} ({runtime} runtime)", measured, target,
                "ok" if ok else "over")]


def _compressor_row() -> Row:
    """Why zlib level 1 for the changed spans of pages over the image, and for new pages only
    when they are few: zlib is the fastest compressor the standard library has (lzma and bz2
    are slower still); measured on a data-runtime session holding the 47 MB of data, with
    every written page compared with the image."""
    from tooliscode.runtime.data import _exact as exact
    from tooliscode.runtime.data import _memory_delta as pages

    with Session([], limits=LIMITS, runtime="data") as s:
        s.run(BIG)
        worker = s._state.worker
        opened = exact._opened(worker.instance.image.path)

        def streams(guest) -> tuple[bytes, bytes]:  # the views into memory are good until then
            delta = pages.take(*guest.memory_span(), opened.base, opened.empty, 1 << 40)
            return b"".join(delta.spans), b"".join(delta.new)

        spans, new = worker.between_turns(streams)
    found = []
    for name, data in (("changed spans", spans), ("new", new)):
        for level in (1, 6):
            wall, _cpu, packed = _timed(lambda d=data, lv=level: zlib.compress(d, lv), 3)
            found.append(f"{name} {len(data) / 1e6:.0f} MB, zlib {level}: "
                         f"{len(data) / wall / 1e6:.0f} MB/s, x{len(data) / len(packed):.1f}")
    return Row("compressing a snapshot's pages", "; ".join(found) + f"; {_load()}",
               "fastest stdlib", "info")


def _check_row() -> Row:
    """Why an unkeyed snapshot's check is a CRC-32: the fastest whole-snapshot check the
    standard library has (a keyed one stays an HMAC-SHA256), on 47 MB."""
    import hashlib

    data = os.urandom(47_000_000)
    found = []
    for name, check in (("sha256", lambda: hashlib.sha256(data).digest()),
                        ("blake2b", lambda: hashlib.blake2b(data).digest()),
                        ("crc32", lambda: zlib.crc32(data))):
        _wall, cpu, _ = _timed(check, 3)
        found.append(f"{name} {len(data) / cpu / 1e9:.2f} GB/s")
    return Row("checking a snapshot's bytes", ", ".join(found) + f" (cpu); {_load()}",
               "fastest stdlib", "info")


class _Worker:
    def __init__(self, url: str, runtime: str, save: str = "before_answer"):
        self.proc = subprocess.Popen([sys.executable, str(WORKER), "redis", url, "error", "15",
                                      "30", runtime, save], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.proc.stdout.readline()

    def call(self, key: str, code: str) -> dict:
        self.proc.stdin.write(json.dumps({"key": key, "code": code}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        assert reply.get("ok"), reply
        return reply

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def _cells(workers: list[_Worker], key: str, cells: int, pick=None) -> list[float]:
    """Seconds per cell `n += 1` of conversation `key`, each sent to `pick(i)`'s worker."""
    samples = []
    for i in range(cells):
        worker = workers[pick(i) if pick is not None else i % len(workers)]
        start = time.perf_counter()
        worker.call(key, "n = globals().get('n', 0) + 1")
        samples.append(time.perf_counter() - start)
    return samples


def _move_rows(runtime: str, cells: int = 20) -> list[Row]:
    """A conversation staying on one worker, answering after its save (the default) and
    before it (lossy), and one alternating between two workers."""
    figure = f"per cell, alternating two workers over Redis vs staying ({runtime} runtime)"

    def measure(url: str) -> list[Row]:
        a, b = _Worker(url, runtime), _Worker(url, runtime)
        lossy = _Worker(url, runtime, "after_answer_lossy")
        try:
            for w, key in ((a, "stay"), (a, "move"), (b, "warm"), (lossy, "lossy")):
                w.call(key, "n = 0")  # each worker's first restore and image hash happen before
            stay = statistics.median(_cells([a], "stay", cells))
            move = statistics.median(_cells([a, b], "move", cells))
            early = statistics.median(_cells([lossy], "lossy", cells))
        finally:
            for w in (a, b, lossy):
                w.close()
        extra, durable = move - stay, stay - early
        return [Row(figure, f"{move * 1e3:.1f} ms vs {stay * 1e3:.1f} ms "
                            f"(+{extra * 1e3:.1f} ms), {_load()}", "<= 20 ms more",
                    "ok" if extra <= 0.02 else "over"),
                Row(f"per cell on one worker over Redis: answered after its save (durable) vs "
                    f"before it (after_answer_lossy) ({runtime} runtime)",
                    f"{stay * 1e3:.1f} ms vs {early * 1e3:.1f} ms ({durable * 1e3:+.1f} ms), "
                    f"{_load()}", "reported", "info")]

    return with_redis(figure, measure)


def _fleet_rows(runtime: str, conversations: int = 8, cells: int = 10) -> list[Row]:
    """Three workers, every cell of every conversation sent to one at random."""
    figure = f"a cell under 3 workers over Redis, random routing, p50 / p99 ({runtime} runtime)"

    def measure(url: str) -> list[Row]:
        import random

        rng = random.Random(1)
        fleet = [_Worker(url, runtime) for _ in range(3)]
        try:
            for w in fleet:
                w.call(f"warm-{id(w)}", "n = 0")
            samples = [t for c in range(conversations)
                       for t in _cells(fleet, f"fleet-{c}", cells, lambda _: rng.randrange(3))]
        finally:
            for w in fleet:
                w.close()
        samples.sort()
        p50, p99 = samples[len(samples) // 2], samples[min(len(samples) - 1,
                                                           int(len(samples) * 0.99))]
        return [Row(figure, f"{p50 * 1e3:.1f} / {p99 * 1e3:.1f} ms over {len(samples)} cells, "
                            f"{_load()}", "reported", "info")]

    return with_redis(figure, measure)


def rows() -> list[Row]:
    # The data runtime first: the default runtime's warm pool boots guests in the background
    # once it is used, which would share the CPU with the data runtime's figures.
    return [*_snapshot_rows("idle session", "x = 1", 10, "data", 10, 1_000_000),
            *_snapshot_rows("10 MB of Python data", TEN_MB, 5, "data", 50),
            *_snapshot_rows("100k dicts of Python data", BIG, 5, "data", None),
            *_snapshot_rows("pandas + 100k-row DataFrame", PANDAS, 5, "data", None),
            _compressor_row(),
            _check_row(),
            *_snapshot_rows("idle session", "x = 1", 10, "default", None),
            *_snapshot_rows("10 MB of Python data", TEN_MB, 5, "default", None),
            *_move_rows("data"),
            *_fleet_rows("data"),
            *_move_rows("default"),
            *_fleet_rows("default")]


if __name__ == "__main__":
    print(table(rows()))
