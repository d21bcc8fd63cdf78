"""What one tool call from guest code costs, against the bare crossing into the host and back.

Rows, for each runtime (the default and `data`): the empty round trip (a request the host
answers without dispatching it); a small tool call on the sync route (`Session.run`, a sync
tool) and on the async route that PydanticAI and the Agents SDK use (`await Session.arun`, an
async tool); their ratios. Then the calls models write in async code, on both routes and with
both kinds of tool: awaited one after another (`await echo(i)`), each against the plain call
of the same tool on the same route, and gathered ten at once
(`await asyncio.gather(*[echo(i) for _ in range(10)])`), per call. Then the same small call in
smolagents' `LocalPythonExecutor` as a reference, in its own environment. Each figure is the
best of several rounds taken in turn, since noise only ever adds time.

Run: python benchmarks/bench_crossing.py [--calls 500] [--rounds 15] [--runtime data] [--no-peer]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "peers"))

from _util import Row, machine, settle, table  # noqa: E402
from envs import peer_python, run_peer_script  # noqa: E402
from tooliscode import Limits, Session  # noqa: E402

LOOP = ("import asyncio, time\nimport tooliscode_guest.channel as _channel\n"
        "_empty = _channel.round_trip\n"
        "t = time.perf_counter()\nfor i in range({n}):\n    {call}\n"
        "print((time.perf_counter() - t) / {calls})")
GATHERED = 10
"""Calls per gather in the gathered rows."""


def echo(x: int) -> int:
    """Returns its argument."""
    return x


async def aecho(x: int) -> int:
    """Returns its argument (async)."""
    return x


PROBES = {"empty": ("run", "_empty()"), "sync": ("run", "echo(i)"),
          "async": ("arun", "aecho(i)"), "async route, sync tool": ("arun", "echo(i)"),
          "sync route, async tool": ("run", "aecho(i)")}
ROUTES = {"run": "Session.run", "arun": "await Session.arun"}
TOOLS = {"echo": "sync tool", "aecho": "async tool"}
PLAIN = {("run", "echo"): "sync", ("run", "aecho"): "sync route, async tool",
         ("arun", "aecho"): "async", ("arun", "echo"): "async route, sync tool"}
"""The plain call each awaited or gathered call is set against: same route, same tool."""
ASYNC_CODE = {"awaited": "await {tool}(i)",
              "gathered": f"await asyncio.gather(*[{{tool}}(i) for _ in range({GATHERED})])"}
PROBES.update({f"{how} {route} {tool}": (route, call.format(tool=tool))
               for route, tool in PLAIN for how, call in ASYNC_CODE.items()})


async def measure(calls: int, rounds: int, runtime: str) -> dict[str, tuple[float, float]]:
    """Best (wall, CPU) seconds per call of each probe, the probes taken in turn round by
    round. Wall time is timed in the guest; CPU time is this process's, all threads."""
    best = {name: (float("inf"), float("inf")) for name in PROBES}
    with Session([echo, aecho], limits=Limits(tool_calls=None, timeout_s=120),
                 runtime=runtime) as session:
        for round_ in range(rounds + 1):
            if round_ == 1:
                settle()  # nothing else runs on this loop meanwhile
            for name, (route, call) in PROBES.items():
                per = GATHERED if name.startswith("gathered") else 1
                made = calls // per * per
                code = LOOP.format(n=calls // per, calls=made, call=call)
                cpu = time.process_time()
                result = session.run(code) if route == "run" else await session.arun(code)
                cpu = (time.process_time() - cpu) / made
                if not result.ok:
                    raise RuntimeError(f"{name}: {result.error}")
                if round_:  # the first round warms up
                    wall = float(result.stdout.strip())
                    best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return best


def smolagents_call(calls: int, rounds: int) -> tuple[float | None, str]:
    """Seconds per call in smolagents' executor (own venv), or None and why not."""
    python, about = peer_python("smolagents", "smolagents")
    if python is None:
        return None, about
    out = json.loads(run_peer_script(python, "smolagents_call.py", str(calls), str(rounds)))
    return out["per_call_s"], f"smolagents {out['version']}"


def runtime_rows(runtime: str, calls: int, rounds: int) -> list[Row]:
    best = asyncio.run(measure(calls, rounds, runtime))
    (empty, empty_cpu), (sync, sync_cpu) = best["empty"], best["sync"]
    async_, async_cpu = best["async"]
    us = lambda s: f"{s * 1e6:.1f} us"  # noqa: E731
    return [
        Row(f"[{runtime}] empty host round trip (guest -> host -> guest, no payload)",
            f"{us(empty)} (CPU {us(empty_cpu)})", "-", "info"),
        Row(f"[{runtime}] small tool call, sync route (Session.run, sync tool)",
            f"{us(sync)} = {sync / empty:.2f}x empty (CPU {us(sync_cpu)} = "
            f"{sync_cpu / empty_cpu:.2f}x)", *(("<= 15 us", "ok" if sync <= 15e-6 else "over")
                                               if runtime == "default" else
                                               ("<= 3x empty", "ok" if sync <= 3 * empty
                                                else "over"))),
        Row(f"[{runtime}] small tool call, async route (await Session.arun, async tool)",
            f"{us(async_)} = {async_ / sync:.2f}x sync route (CPU {us(async_cpu)} = "
            f"{async_cpu / sync_cpu:.2f}x)", "<= 1.3x sync",
            "ok" if async_ <= 1.3 * sync else "over"),
        Row(f"[{runtime}] small tool call, async route, sync tool",
            "{} (CPU {})".format(*map(us, best["async route, sync tool"])), "-", "info"),
        Row(f"[{runtime}] small tool call, sync route, async tool",
            "{} (CPU {})".format(*map(us, best["sync route, async tool"])), "-", "info"),
        *async_code_rows(runtime, best),
    ]


def async_code_rows(runtime: str, best: dict[str, tuple[float, float]]) -> list[Row]:
    """Awaited and gathered calls, each against the plain call of its tool on its route."""
    out = []
    for (route, tool), plain_name in PLAIN.items():
        plain, plain_cpu = best[plain_name]
        where = f"{ROUTES[route]}, {TOOLS[tool]}"
        awaited, awaited_cpu = best[f"awaited {route} {tool}"]
        out.append(Row(
            f"[{runtime}] `await {tool}(i)` one after another ({where})",
            f"{us_text(awaited)} = {awaited / plain:.2f}x plain `{tool}(i)` (CPU "
            f"{us_text(awaited_cpu)} = {awaited_cpu / plain_cpu:.2f}x)", "<= 1.5x plain",
            "ok" if awaited <= 1.5 * plain else "over"))
        gathered, gathered_cpu = best[f"gathered {route} {tool}"]
        out.append(Row(
            f"[{runtime}] {GATHERED} `{tool}(i)` gathered, per call ({where})",
            f"{us_text(gathered)} = {gathered / plain:.2f}x plain `{tool}(i)` (CPU "
            f"{us_text(gathered_cpu)} = {gathered_cpu / plain_cpu:.2f}x)", "-", "info"))
    return out


def rows(calls: int = 500, rounds: int = 15, peer: bool = True,
         runtimes: tuple[str, ...] = ("default", "data")) -> list[Row]:
    out = [row for runtime in runtimes for row in runtime_rows(runtime, calls, rounds)]
    if peer:
        peer_s, about = smolagents_call(calls, max(3, rounds // 2))
        out.append(Row(f"reference: the same call in {about}'s LocalPythonExecutor "
                       "(CodeAgent's setup, own venv)",
                       us_text(peer_s) if peer_s is not None else f"none: {about}", "-", "info"))
    return out


def us_text(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runtime", action="append", choices=("default", "data"),
                        help="measure only this runtime (repeatable; both by default)")
    parser.add_argument("--no-peer", action="store_true", help="skip smolagents")
    args = parser.parse_args()
    print(f"machine: {machine()}; load average {os.getloadavg()[0]:.2f} at the start\n")
    found = rows(args.calls, args.rounds, not args.no_peer,
                 tuple(args.runtime or ("default", "data")))
    print(table(found))
    print(f"\nload average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
