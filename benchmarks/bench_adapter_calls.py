"""What the Google ADK, LlamaIndex and CrewAI adapters add per tool call, split as
bench_peers.py splits the other adapters' calls.

One inner tool call from sandboxed code through each adapter (the code tool run by the
framework's own runner, the time per call measured inside the guest), against the same function
registered straight in a `Session` (the sandbox round trip alone), and the framework's own way
of running a tool timed on its own, outside any sandbox:
- ADK: a `ToolContext`, the plugins' before/after tool callbacks, `run_async`, and an
  `execute_tool` span with `trace_tool_call` (what its flow does per call).
- LlamaIndex: `acall` with the `ToolCall` and `ToolCallResult` events written to the run's
  stream (what an agent's `call_tool` step does).
- CrewAI: `execute_single_native_tool_call` (hooks, events, failure policy), in CrewAI's own
  environment (.venv-crewai, see the Makefile) by peers/crewai_calls.py.
What is left is the adapter's own overhead, measured against the sandbox calling the same
dispatch straight (for LlamaIndex a sync tool's `acall` runs it on a thread, and the two
together cost more than their sum); the target is at most 0.15 ms.

Run: python benchmarks/bench_adapter_calls.py [--calls 200] [--rounds 9]

No `from __future__ import annotations`: LlamaIndex finds a tool's `Context` parameter by its
annotation object.
"""

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent / "peers"))

from _util import Row, machine, table  # noqa: E402
from agent_runs import get_order  # noqa: E402
from bench_peers import (  # noqa: E402
    Probe,
    adapter_rows,
    aget_order,
    best_of,
    direct_session,
    guest_loop,
    guest_per_call,
    session_probe,
)
from envs import ROOT, run_peer_script  # noqa: E402
from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models import BaseLlm, LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.telemetry import trace_tool_call, tracer  # noqa: E402
from google.adk.tools import FunctionTool, ToolContext  # noqa: E402
from google.genai import types  # noqa: E402
from llama_index.core.agent.workflow import FunctionAgent, ToolCall, ToolCallResult  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock  # noqa: E402
from llama_index.core.llms import MockFunctionCallingLLM  # noqa: E402
from llama_index.core.tools import FunctionTool as LlamaTool  # noqa: E402
from llama_index.core.tools.types import adapt_to_async_tool  # noqa: E402
from llama_index.core.workflow import Context  # noqa: E402
from tooliscode import Session  # noqa: E402
from tooliscode.integrations.google_adk import CodeModeToolset  # noqa: E402
from tooliscode.integrations.llama_index import as_llama_index_tool  # noqa: E402

# -- Google ADK ---------------------------------------------------------------------------------


class _OneCall(BaseLlm):
    """Calls `tool` with `args` once, then answers with the function response it got."""

    model: str = "one-call"
    tool: str = "run_python"
    args: dict[str, Any] = {}
    seen: Any = None

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        part = llm_request.contents[-1].parts[0]
        if part.function_response is not None:
            self.seen = part.function_response.response
            reply = types.Part(text="done")
        else:
            reply = types.Part(function_call=types.FunctionCall(name=self.tool, args=self.args))
        yield LlmResponse(content=types.Content(role="model", parts=[reply]))


async def _adk_run(runner: InMemoryRunner) -> Any:
    session = await runner.session_service.create_session(app_name="bench", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass
    return runner.agent.model.seen


def adk_probe(fn: Any, code: str) -> tuple[Probe, CodeModeToolset]:
    toolset = CodeModeToolset([fn])
    runner = InMemoryRunner(agent=LlmAgent(name="bench", model=_OneCall(args={"code": code}),
                                           tools=[toolset]), app_name="bench")

    async def probe() -> float:
        return guest_per_call((await _adk_run(runner))["result"])
    return probe, toolset


async def _adk_call(tool: FunctionTool, outer: ToolContext, args: dict[str, Any],
                    call_id: str) -> Any:
    """What ADK's flow does per tool call, in the run's invocation: a `ToolContext`, the
    plugins' before/after callbacks, `run_async`, and an `execute_tool` span."""
    invocation = outer.get_invocation_context()
    plugins = invocation.plugin_manager
    ctx = ToolContext(invocation, event_actions=outer.actions, function_call_id=call_id)
    with tracer.start_as_current_span(f"execute_tool {tool.name}"):
        await plugins.run_before_tool_callback(tool=tool, tool_args=args, tool_context=ctx)
        result = await tool.run_async(args=args, tool_context=ctx)
        await plugins.run_after_tool_callback(tool=tool, tool_args=args, tool_context=ctx,
                                              result=result)
        trace_tool_call(tool, args, None, invocation_context=invocation)
    return result


def _adk_timing(measure: Callable[[ToolContext], Awaitable[float]]) -> Probe:
    """A probe: an ADK run whose one tool call (`timing`) records `measure(its context)`."""
    timed: list[float] = []

    async def timing(tool_context: ToolContext) -> str:
        """Measures ADK's per-call work inside this run."""
        timed.append(await measure(tool_context))
        return "done"

    runner = InMemoryRunner(agent=LlmAgent(name="bench", model=_OneCall(tool="timing"),
                                           tools=[timing]), app_name="bench")

    async def probe() -> float:
        await _adk_run(runner)
        return timed[-1]
    return probe


def adk_dispatch_probe(fn: Any, n: int) -> Probe:
    """ADK's own per-call work, in a real run's invocation, no sandbox."""
    tool = FunctionTool(fn)

    async def loop(outer: ToolContext) -> float:
        start = time.perf_counter()
        for i in range(n):
            await _adk_call(tool, outer, {"order_id": i}, f"c:{i}")
        return (time.perf_counter() - start) / n
    return _adk_timing(loop)


def adk_direct_probe(fn: Any, code: str) -> tuple[Probe, Session]:
    """The sandbox calling ADK's per-call work straight (as `adk_dispatch_probe` does it, but
    from sandboxed code), in a real run's invocation: the baseline the adapter's own share is
    measured against."""
    tool, current = FunctionTool(fn), {}

    async def dispatch(**args: Any) -> Any:
        return await _adk_call(tool, current["ctx"], args, "c")

    session = direct_session(fn, dispatch)

    async def sandboxed(outer: ToolContext) -> float:
        current["ctx"] = outer
        return guest_per_call((await session.arun(code)).stdout)
    return _adk_timing(sandboxed), session


# -- LlamaIndex ---------------------------------------------------------------------------------


def _one_call(tool: str, args: dict[str, Any], seen: list[str]) -> MockFunctionCallingLLM:
    def reply(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        if messages[-1].role == "tool":
            seen.append(str(messages[-1].content))
            return ChatMessage(role="assistant", content="done")
        return ChatMessage(role="assistant", blocks=[ToolCallBlock(
            tool_call_id="c1", tool_name=tool, tool_kwargs=args)])
    return MockFunctionCallingLLM(response_generator=reply)


def llama_probe(fn: Any, code: str) -> tuple[Probe, Any]:
    tool = as_llama_index_tool([fn])
    seen: list[str] = []
    agent = FunctionAgent(tools=[tool], llm=_one_call("run_python", {"code": code}, seen))

    async def probe() -> float:
        await agent.run("go")
        return guest_per_call(seen[-1])
    return probe, tool


async def _llama_call(inner: Any, ctx: Context, name: str, args: dict[str, Any],
                      call_id: str) -> Any:
    """What an agent's `call_tool` step does per call: the events and `acall`."""
    ctx.write_event_to_stream(ToolCall(tool_name=name, tool_kwargs=args, tool_id=call_id))
    output = await inner.acall(**args)
    ctx.write_event_to_stream(ToolCallResult(tool_name=name, tool_kwargs=args, tool_id=call_id,
                                             tool_output=output, return_direct=False))
    return output


def _llama_timing(measure: Callable[[Context], Awaitable[float]]) -> Probe:
    """A probe: an agent run whose one tool call (`timing`) records `measure(its context)`."""
    timed: list[float] = []

    async def timing(ctx: Context) -> str:
        timed.append(await measure(ctx))
        return "done"

    agent = FunctionAgent(tools=[LlamaTool.from_defaults(async_fn=timing)],
                          llm=_one_call("timing", {}, []))

    async def probe() -> float:
        await agent.run("go")
        return timed[-1]
    return probe


def llama_dispatch_probe(fn: Any, n: int) -> Probe:
    """An agent's own work per tool call (its `call_tool` step), no sandbox."""
    inner = adapt_to_async_tool(LlamaTool.from_defaults(fn))

    async def loop(ctx: Context) -> float:
        start = time.perf_counter()
        for i in range(n):
            await _llama_call(inner, ctx, "get_order", {"order_id": i}, f"c{i}")
        return (time.perf_counter() - start) / n
    return _llama_timing(loop)


def llama_direct_probe(fn: Any, code: str) -> tuple[Probe, Session]:
    """The sandbox calling LlamaIndex's dispatch straight (the events and `acall`, as the
    adapter does, but without it) inside a real agent run: the baseline the adapter's own
    share is measured against, since a sync tool's `acall` runs it on a thread and the two
    together cost more than their sum."""
    inner, current = adapt_to_async_tool(LlamaTool.from_defaults(fn)), {}

    async def dispatch(**args: Any) -> Any:
        return (await _llama_call(inner, current["ctx"], fn.__name__, args, "c")).raw_output

    session = direct_session(fn, dispatch)

    async def sandboxed(ctx: Context) -> float:
        current["ctx"] = ctx
        return guest_per_call((await session.arun(code)).stdout)
    return _llama_timing(sandboxed), session


# -- measuring ----------------------------------------------------------------------------------


async def per_call(n: int, rounds: int) -> dict[tuple[str, str], float]:
    """Best-of-`rounds` seconds per call for every (path, kind), taking turns."""
    with ExitStack() as stack:
        probes: dict[tuple[str, str], Probe] = {}
        for kind, fn in (("sync", get_order), ("async", aget_order)):
            code = guest_loop(fn, n)
            probes["sandbox", kind] = session_probe(stack.enter_context(Session([fn])), code, kind)
            probes["ADK", kind], toolset = adk_probe(fn, code)
            stack.callback(toolset.code_tool.close)
            probes["ADK dispatch", kind] = adk_dispatch_probe(fn, n)
            probes["ADK direct", kind], straight = adk_direct_probe(fn, code)
            stack.callback(straight.close)
            probes["LlamaIndex", kind], tool = llama_probe(fn, code)
            stack.callback(tool.close)
            probes["LlamaIndex dispatch", kind] = llama_dispatch_probe(fn, n)
            probes["LlamaIndex direct", kind], straight = llama_direct_probe(fn, code)
            stack.callback(straight.close)
        return await best_of(probes, rounds)


def crewai_rows(calls: int, rounds: int) -> list[Row]:
    python = ROOT / ".venv-crewai" / "bin" / "python"
    if not python.exists():
        return [Row("CrewAI: one call from code, through the adapter",
                    "not measured: .venv-crewai is missing (make setup)", "-", "info")]
    best = json.loads(run_peer_script(python, "crewai_calls.py", str(calls), str(rounds)))
    # CrewAI runs tools synchronously, so inner calls take the sandbox's sync route.
    return adapter_rows({("CrewAI", "sync"): best["crewai"], ("sandbox", "sync"): best["sandbox"],
                         ("CrewAI dispatch", "sync"): best["dispatch"],
                         ("CrewAI direct", "sync"): best["direct"]}, "CrewAI", "sync", "sync")


async def arows(calls: int = 200, rounds: int = 9) -> list[Row]:
    best = await per_call(calls, rounds)
    rows: list[Row] = []
    for framework in ("ADK", "LlamaIndex"):
        for kind in ("sync", "async"):
            # Both frameworks call the code tool from their event loop, so its inner calls
            # take the sandbox's async route whatever the tool is.
            rows += adapter_rows(best, framework, kind, "async")
    return rows + crewai_rows(calls, rounds)


def rows() -> list[Row]:
    return asyncio.run(arows())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="tool calls per timed loop")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of the per-call probes")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    print(table(asyncio.run(arows(args.calls, args.rounds))))


if __name__ == "__main__":
    main()
