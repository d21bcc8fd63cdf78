"""What smolagents' `LocalPythonExecutor` does with a runaway cell or a memory bomb.

Run by bench_frameworks.py in a child process that has its own address-space limit and is
killed after a wall-time limit, so the benchmark survives whatever the executor does. The
executor is set up as a `CodeAgent` sets it up, with the given `timeout_seconds`. Prints one
JSON line: how the cell ended, after how long, with what message, and the process's peak RSS.

Run: python benchmarks/peers/smolagents_limits.py '<code>' <timeout_seconds>
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

from smolagents import LocalPythonExecutor


def main() -> None:
    code, timeout_s = sys.argv[1], int(sys.argv[2])
    executor = LocalPythonExecutor([], timeout_seconds=timeout_s)
    executor.send_variables({})
    executor.send_tools({})
    print(json.dumps({"started": True}), flush=True)
    start = time.perf_counter()
    try:
        out = executor(code)
        ended, message = "finished", str(out.output)[:200]
    except BaseException as exc:  # noqa: BLE001 - what it raised is the finding
        ended, message = type(exc).__name__, str(exc)[:300]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"ended": ended, "seconds": time.perf_counter() - start,
                      "message": message, "peak_rss": peak}), flush=True)
    os._exit(0)  # a timed-out cell's thread may still run: do not wait for it at exit


if __name__ == "__main__":
    main()
