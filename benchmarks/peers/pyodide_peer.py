"""Pyodide-based sandboxes beside the data runtime: start time to a first result and the pandas
groupby of bench_data.py.

Everything comes from the package registries: Deno from PyPI (`pip install deno`, in its own
environment under .bench-envs/ with `mcp-run-python` and `langchain-sandbox`), pyodide from
npm (the version mcp-run-python pins), cached by Deno before the timed run, which then runs
`--cached-only`. Pyodide's npm package holds the interpreter and its standard library only; its
other packages (numpy, pandas) and the sandboxes' own Deno code come from elsewhere: where this
machine cannot reach that, the row says which URL was needed.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from _util import Row
from envs import peer_python, run_peer_script

SPEC = "deno==2.9.8 mcp-run-python==0.0.22 langchain-sandbox==0.0.6"
_SCRIPT = Path(__file__).parent / "pyodide_start.ts"


def _deno(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DENO_DIR": str(python.parents[1] / "deno-dir"), "NO_COLOR": "1"}
    return subprocess.run([str(python.parent / "deno"), *args], capture_output=True, text=True,
                          timeout=600, env=env)


def measure_pyodide(python: Path, groupby: str, samples: int = 5) -> dict[str, Any]:
    """Pyodide in Deno: its first result from a cold process, new interpreters in a warm one,
    and the groupby (or the URLs its packages would be fetched from)."""
    cached = _deno(python, "cache", str(_SCRIPT))  # from the npm registry, once
    if cached.returncode:
        raise RuntimeError(f"deno cache failed: {cached.stderr[-800:]}")
    started = time.time()
    run = _deno(python, "run", "--cached-only", "-A", str(_SCRIPT),
                json.dumps({"samples": samples, "groupby": groupby}))
    if run.returncode:
        raise RuntimeError(f"pyodide in deno failed: {run.stderr[-1500:]}")
    found = json.loads(run.stdout.strip().splitlines()[-1])
    found["process_to_first_ms"] = found["first_epoch_ms"] - started * 1e3
    return found


def ours(groupby: str, samples: int = 20) -> tuple[float, float]:
    """Our side, in this process: (new `data` Session to `print(1)`, median ms; groupby s)."""
    from tooliscode import Session
    from tooliscode.runtime import runtime_named

    def first_result() -> float:
        start = time.perf_counter()
        with Session([], runtime="data") as s:
            assert s.run("print(1)").stdout.strip() == "1"
            return time.perf_counter() - start

    first_result()  # loads the module; starts making the memory image if there is none
    runtime_named("data").images.wait(300)  # type: ignore[attr-defined]
    times = [first_result() for _ in range(samples)]
    with Session([], runtime="data") as s:
        result = s.run(groupby)
        assert result.ok, result.error
    return statistics.median(times) * 1e3, float(result.stdout.strip())


def rows(groupby: str) -> list[Row]:
    """The pyodide rows, beside ours (the data runtime) measured in the same run."""
    python, about = peer_python("pyodide", SPEC)
    if python is None:
        return [Row("pyodide sandboxes (own venv)", f"not installed: {about}", "-", "info")]
    deno = _deno(python, "--version").stdout.split("\n")[0]
    out = [Row("pyodide environment (own venv)", f"{SPEC}; {deno}", "-", "info")]
    try:
        found = measure_pyodide(python, groupby)
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
        return [*out, Row("pyodide in Deno", f"failed: {str(exc)[-300:]}", "-", "info")]
    try:
        ours_start_ms, ours_groupby_s = ours(groupby)
    except ImportError as exc:  # the data runtime is an extra
        return [*out, Row("pyodide beside the data runtime", f"data not installed: {exc}", "-",
                          "info")]
    start = statistics.median(found["start_ms"])
    out.append(Row(f"new interpreter to first result: pyodide {found['version']} (npm) in a "
                   "running Deno vs ours (data, new Session)",
                   f"{start:.0f} ms vs {ours_start_ms:.1f} ms ({start / ours_start_ms:.0f}x); "
                   f"pyodide from Deno's start {found['process_to_first_ms']:.0f} ms", "-",
                   "info"))
    if found["groupby_s"] is not None:
        pyo = found["groupby_s"]
        out.append(Row(f"pandas groupby-sum 100k rows: pyodide (pandas {found['pandas']}) vs "
                       "ours (data)", f"{pyo * 1e3:.2f} vs {ours_groupby_s * 1e3:.2f} ms", "-",
                       "info"))
    else:
        wheels = sorted(url.rpartition("/")[2] for url in found["fetched"])
        needed = (f"{found['fetched'][0].rpartition('/')[0]}/ ({', '.join(wheels)})" if wheels
                  else "; ".join(found["errors"]))
        # checked by hand: PyPI has pandas wheels for pyodide 0.27 (pyemscripten_2024_0), but
        # numpy has no pyodide wheel on PyPI, and pyodide's npm package carries none
        out.append(Row("pandas groupby-sum 100k rows: pyodide", "not run: pyodide loads numpy "
                       f"and pandas from {needed}, unreachable here (numpy's pyodide wheel is on "
                       "neither PyPI nor npm)", "-", "info"))
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "DENO_DIR": str(python.parents[1] / "deno-dir")}
    try:
        peers = json.loads(run_peer_script(python, "pyodide_sandboxes.py", json.dumps(
            {"groupby": groupby, "timeout_s": 180}), env=env))
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
        peers = {"mcp-run-python, langchain-sandbox": {"error": str(exc)[-300:]}}
    for name, got in peers.items():
        if "error" in got:
            text = f"does not start offline: {got['error']}"
        else:
            text = f"{got['s'] * 1e3:.0f} ms to print(1)"
            grouped = got["groupby"]
            text += (f"; groupby {float(grouped['output'].splitlines()[-1]) * 1e3:.2f} ms"
                     if "error" not in grouped else f"; groupby failed: {grouped['error']}")
        out.append(Row(f"{name}: start to first result", text, "-", "info"))
    return out
