"""Code mode against its peer, and what each framework adapter adds per tool call.

1. `print(1)` through a PydanticAI agent run: our `CodeModeToolset` against pydantic-ai-harness's
   `CodeMode` on Monty, both measured in this run by the same code (peers/agent_runs.py). The
   harness pins its own PydanticAI, so it gets its own virtual environment, made on first use
   under .bench-envs/ (git-ignored) with `python -m venv` and
   `pip install "pydantic-ai-harness[code-mode]"`; peers/monty_driver.py runs there.
2. One inner tool call from sandboxed code through each adapter, against the same function
   registered straight in a `Session` (the sandbox round trip alone). The framework's own way
   of calling a tool (LangChain `invoke`, PydanticAI's `ToolManager.handle_call`) is timed on
   its own, outside any sandbox; what is left is the adapter's own overhead.

Run: python benchmarks/bench_peers.py [--runs 20] [--pause 0.3] [--calls 200] [--no-peer]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).parent / "peers"))

from _util import machine, table  # noqa: E402
from agent_runs import get_order, measure  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402
from pydantic_ai import Agent, RunContext  # noqa: E402
from pydantic_ai.messages import ToolCallPart  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402
from pydantic_ai.tool_manager import ToolManager  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402
from pydantic_ai.usage import RunUsage  # noqa: E402
from tooliscode import Session  # noqa: E402
from tooliscode.integrations.langchain import as_langchain_tool  # noqa: E402
from tooliscode.integrations.pydantic_ai import CodeModeToolset  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HARNESS_ENV = ROOT / ".bench-envs" / "pydantic-ai-harness"
HARNESS_SPEC = "pydantic-ai-harness[code-mode]"
GUEST_LOOP = ("import time\nt = time.perf_counter()\nfor i in range({n}):\n"
              "    get_order(order_id=i)\nprint((time.perf_counter() - t) / {n})")


async def aget_order(order_id: int) -> dict:
    """One small order (async)."""
    return {"id": order_id, "status": "paid"}


# -- the peer, in its own environment ---------------------------------------------------------

def harness_python() -> tuple[Path | None, str]:
    """The harness environment's interpreter (made if missing), or None and why not."""
    python = HARNESS_ENV / "bin" / "python"
    if not python.exists():
        print(f"making {HARNESS_ENV.relative_to(ROOT)}: python -m venv; pip install "
              f"{HARNESS_SPEC} ...", flush=True)
        made = subprocess.run([sys.executable, "-m", "venv", str(HARNESS_ENV)],
                              capture_output=True, text=True)
        if made.returncode:
            return None, f"python -m venv failed: {made.stderr.strip()[-500:]}"
        pip = subprocess.run([str(python), "-m", "pip", "install", "-q", HARNESS_SPEC],
                             capture_output=True, text=True)
        if pip.returncode:
            return None, f"pip install {HARNESS_SPEC} failed: {pip.stderr.strip()[-800:]}"
    probe = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                            "print(m.version('pydantic-ai-harness'), m.version('pydantic-ai-slim'),"
                            " m.version('pydantic-monty'))"], capture_output=True, text=True)
    if probe.returncode:
        return None, f"the harness environment is broken: {probe.stderr.strip()[-500:]}"
    harness, slim, monty = probe.stdout.split()
    return python, f"pydantic-ai-harness {harness}, pydantic-ai-slim {slim}, pydantic-monty {monty}"


def run_peer(python: Path, config: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run([str(python), str(Path(__file__).parent / "peers" / "monty_driver.py"),
                          json.dumps(config)], capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise RuntimeError(f"the Monty driver failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- per-call figures -------------------------------------------------------------------------

def median_of(samples: list[float]) -> float:
    return statistics.median(samples)


def guest_per_call(text: str) -> float:
    """The per-call seconds a GUEST_LOOP cell printed."""
    return float(text.strip().splitlines()[-1])


async def repeat(fn: Callable[[], Awaitable[float]], times: int) -> float:
    await fn()
    return median_of([await fn() for _ in range(times)])


async def direct_session(n: int, times: int) -> dict[str, float]:
    """The sandbox round trip alone: the function registered straight in a Session."""
    with Session([get_order]) as s:
        sync = await repeat(lambda: asyncio.to_thread(
            lambda: guest_per_call(s.run(GUEST_LOOP.format(n=n)).stdout)), times)
    with Session([aget_order]) as s:
        code = GUEST_LOOP.format(n=n).replace("get_order(", "aget_order(")

        async def once() -> float:
            return guest_per_call((await s.arun(code)).stdout)
        asynchronous = await repeat(once, times)
    return {"sync": sync, "async": asynchronous}


async def pydantic_ai_adapter(n: int, times: int) -> dict[str, float]:
    from agent_runs import OneCall

    found = {}
    for kind, fn in (("sync", get_order), ("async", aget_order)):
        code = GUEST_LOOP.format(n=n).replace("get_order(", f"{fn.__name__}(")
        script = OneCall("run_python", code)
        agent = Agent(script.model, toolsets=[CodeModeToolset(FunctionToolset([fn]))])

        async def once() -> float:
            await agent.run("go")
            return guest_per_call(str(script.seen))
        found[kind] = await repeat(once, times)
    return found


async def pydantic_ai_dispatch(n: int, times: int) -> dict[str, float]:
    """PydanticAI's own cost to validate and call a tool (`ToolManager.handle_call`)."""
    found = {}
    for kind, fn in (("sync", get_order), ("async", aget_order)):
        toolset = FunctionToolset([fn])
        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        manager = ToolManager(toolset=toolset, ctx=ctx, tools=await toolset.get_tools(ctx))

        async def once() -> float:
            start = time.perf_counter()
            for i in range(n):
                await manager.handle_call(ToolCallPart(fn.__name__, {"order_id": i}),
                                          wrap_validation_errors=False)
            return (time.perf_counter() - start) / n
        found[kind] = await repeat(once, times)
    return found


async def langchain_adapter(n: int, times: int) -> dict[str, float]:
    sync_tool = as_langchain_tool([get_order])
    async_tool = as_langchain_tool([StructuredTool.from_function(coroutine=aget_order)])
    code = GUEST_LOOP.format(n=n)
    try:
        sync = await repeat(lambda: asyncio.to_thread(
            lambda: guest_per_call(sync_tool.invoke({"code": code}))), times)

        async def once() -> float:
            return guest_per_call(await async_tool.ainvoke(
                {"code": code.replace("get_order(", "aget_order(")}))
        asynchronous = await repeat(once, times)
    finally:
        sync_tool.close()
        async_tool.close()
    return {"sync": sync, "async": asynchronous}


async def langchain_dispatch(n: int, times: int) -> dict[str, float]:
    """LangChain's own cost to call a tool (`invoke` / `ainvoke`)."""
    sync_tool = StructuredTool.from_function(get_order)
    async_tool = StructuredTool.from_function(coroutine=aget_order)

    def sync_once() -> float:
        start = time.perf_counter()
        for i in range(n):
            sync_tool.invoke({"order_id": i})
        return (time.perf_counter() - start) / n

    async def async_once() -> float:
        start = time.perf_counter()
        for i in range(n):
            await async_tool.ainvoke({"order_id": i})
        return (time.perf_counter() - start) / n
    return {"sync": await repeat(lambda: asyncio.to_thread(sync_once), times),
            "async": await repeat(async_once, times)}


# -- report -----------------------------------------------------------------------------------

def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="agent runs per figure")
    parser.add_argument("--pause", type=float, default=0.3,
                        help="seconds between agent runs (a model's latency in real use)")
    parser.add_argument("--calls", type=int, default=200, help="tool calls per timed loop")
    parser.add_argument("--no-peer", action="store_true", help="skip pydantic-ai-harness")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    rows: list[tuple[str, str, str, str]] = []

    def ours_agent(model: Any) -> Agent:
        return Agent(model, toolsets=[CodeModeToolset(FunctionToolset([get_order]))])

    ours = await measure(ours_agent, "run_python", args.runs, args.pause, args.calls)
    assert ours["print1_output"] == "1", ours["print1_output"]
    peer = None
    if not args.no_peer:
        python, about = harness_python()
        print(f"peer: {about}")
        if python is not None:
            peer = run_peer(python, {"runs": args.runs, "pause_s": args.pause,
                                     "calls": args.calls})
    if peer is not None:
        ratio = peer["print1_s"] / ours["print1_s"]
        rows.append(("PydanticAI run, print(1): ours / Monty CodeMode",
                     f"{ms(ours['print1_s'])} / {ms(peer['print1_s'])} = {ratio:.1f}x faster",
                     ">= 4x", "ok" if ratio >= 4 else "short"))
        call_ratio = peer["per_call_s"] / max(ours["per_call_s"], 1e-9)
        rows.append(("PydanticAI run, per tool call: ours / Monty",
                     f"{ms(ours['per_call_s'])} / {ms(peer['per_call_s'])} = "
                     f"{call_ratio:.1f}x", "-", "info"))
    else:
        rows.append(("PydanticAI run, print(1): ours", ms(ours["print1_s"]), "<= 8.75 ms",
                     "ok" if ours["print1_s"] <= 0.00875 else "over"))

    n, times = args.calls, 5
    direct = await direct_session(n, times)
    for framework, adapter_fn, dispatch_fn in (
            ("PydanticAI", pydantic_ai_adapter, pydantic_ai_dispatch),
            ("LangChain", langchain_adapter, langchain_dispatch)):
        adapter, dispatch = await adapter_fn(n, times), await dispatch_fn(n, times)
        for kind in ("sync", "async"):
            own = adapter[kind] - direct[kind] - dispatch[kind]
            rows.append((f"{framework} {kind} tool: per call through the adapter",
                         f"{ms(adapter[kind])} (sandbox alone {ms(direct[kind])}, "
                         f"{framework} dispatch {ms(dispatch[kind])})", "-", "info"))
            rows.append((f"{framework} {kind} tool: adapter's own overhead", ms(own),
                         "<= 0.15 ms", "ok" if own <= 0.00015 else "over"))
    print(table(rows))


if __name__ == "__main__":
    asyncio.run(main())
