"""Durable sessions: snapshot and restore times and sizes, and what a move between two worker
processes over a real Redis costs per cell.

Run: python benchmarks/bench_durable.py   (needs redis-server on PATH)
"""

from __future__ import annotations

import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _util import Row, table
from tooliscode import Limits, Session

TEN_MB = "data = [{'id': i, 'name': f'item {i}', 'tags': ['a', 'b']} for i in range(100_000)]"
WORKER = Path(__file__).resolve().parent.parent / "tests" / "durable" / "worker.py"


def _timed(fn, repeat: int) -> tuple[float, object]:
    samples, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), out


def _snapshot_rows(label: str, code: str, repeat: int) -> list[Row]:
    limits = Limits(timeout_s=120, memory_bytes=512 * 2**20)
    with Session([], limits=limits) as s:
        assert s.run(code).ok
        snap_s, blob = _timed(s.snapshot, repeat)

    def restore() -> None:
        time.sleep(0.5)  # sessions arrive apart, so the warm pool has refilled
        start = time.perf_counter()
        Session.restore(blob, [], limits=limits).close()
        return time.perf_counter() - start

    restore_s = statistics.median(restore() for _ in range(repeat))
    return [Row(f"snapshot / restore, {label} (default runtime)",
                f"{snap_s * 1e3:.1f} ms / {restore_s * 1e3:.1f} ms, {len(blob) / 1e6:.2f} MB",
                "reported", "info")]


class _Worker:
    def __init__(self, url: str):
        self.proc = subprocess.Popen([sys.executable, str(WORKER), "redis", url, "error", "15",
                                      "30"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.proc.stdout.readline()

    def call(self, key: str, code: str) -> dict:
        self.proc.stdin.write(json.dumps({"key": key, "code": code}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def _move_rows(cells: int = 20) -> list[Row]:
    binary = shutil.which("redis-server")
    if binary is None:
        return [Row("per cell, alternating two workers over Redis", "no redis-server", "-", "-")]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder = tempfile.mkdtemp()
    server = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no",
                               "--dir", folder], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    url = f"redis://127.0.0.1:{port}/0"
    a, b = _Worker(url), _Worker(url)
    try:
        a.call("stay", "n = 0")
        a.call("move", "n = 0")

        def per_cell(key: str, workers: list[_Worker]) -> float:
            samples = []
            for i in range(cells):
                start = time.perf_counter()
                workers[i % len(workers)].call(key, "n += 1")
                samples.append(time.perf_counter() - start)
            return statistics.median(samples)

        stay, move = per_cell("stay", [a]), per_cell("move", [a, b])
    finally:
        a.close()
        b.close()
        server.terminate()
        shutil.rmtree(folder, ignore_errors=True)
    extra = move - stay
    return [Row("per cell, alternating two workers over Redis vs staying (default runtime)",
                f"{move * 1e3:.1f} ms vs {stay * 1e3:.1f} ms (+{extra * 1e3:.1f} ms)",
                "<= 20 ms more", "ok" if extra <= 0.02 else "over")]


def rows() -> list[Row]:
    return [*_snapshot_rows("idle session", "x = 1", 10),
            *_snapshot_rows("10 MB of Python data", TEN_MB, 5),
            *_move_rows()]


if __name__ == "__main__":
    print(table(rows()))
