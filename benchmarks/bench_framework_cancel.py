"""A framework's cancel reaches the cell: how long from cancelling a PydanticAI run whose
code loops to the result of the next run's code tool call in the same conversation, against
the same next run when nothing was cancelled (the framework's own cost), in the same round.

The cancelled run's guest is given up at once; the next run's cell waits for a new guest with
the state from before the stopped cell (the notice says so), which is what the difference
measures. Both runtimes.

Run: python benchmarks/bench_framework_cancel.py
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

from _util import Row, load, table
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from tooliscode import Limits
from tooliscode.integrations.pydantic_ai import CodeMode
from tooliscode.runtime import runtime_named

LOOP = "x = 42\nwhile True:\n    pass"
READ = "x"
CONVERSATION = "bench"


def _model(code: str) -> FunctionModel:
    """Calls the code tool with `code` once, then answers with its result."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("run_python", {"code": code})])
        return ModelResponse(parts=[TextPart(str(messages[-1].parts[-1].content))])

    return FunctionModel(reply)


async def _run(mode: CodeMode, code: str) -> Any:
    return await Agent(_model(code), capabilities=[mode]).run("go",
                                                              conversation_id=CONVERSATION)


async def _cancelled(mode: CodeMode) -> float:
    """Start a run whose code loops, and cancel it once the cell runs; when it cancelled."""
    task = asyncio.ensure_future(_run(mode, LOOP))
    sandbox = None
    while sandbox is None or sandbox.session is None or not sandbox.session.running:
        await asyncio.sleep(0.001)
        sandbox = mode.code_tool.get(CONVERSATION)
    await asyncio.sleep(0.02)
    cancelled = time.perf_counter()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return cancelled


async def cancel_to_next_ms(runtime: str, samples: int = 20) -> tuple[list[float], list[float]]:
    """Per round: ms from the cancel to the next run's answer, and the same run's ms when
    nothing was cancelled."""
    mode = CodeMode(scope="conversation", runtime=runtime, limits=Limits(timeout_s=120))
    after: list[float] = []
    plain: list[float] = []
    try:
        await _run(mode, "x = 41")
        for _ in range(samples):
            start = time.perf_counter()
            await _run(mode, READ)
            plain.append((time.perf_counter() - start) * 1e3)
            start = await _cancelled(mode)
            result = await _run(mode, READ)
            after.append((time.perf_counter() - start) * 1e3)
            assert "41" in result.output and "cancelled" in result.output, result.output
    finally:
        mode.close()
    return after, plain


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def rows() -> list[Row]:
    out: list[Row] = []
    runtime_named("data").warm_up()
    for runtime in ("default", "data"):
        after, plain = asyncio.run(cancel_to_next_ms(runtime))
        extra = [a - p for a, p in zip(after, plain)]
        out.append(Row(
            f"{runtime}: PydanticAI run cancelled -> next run's code result, p99 beyond the "
            "same run uncancelled",
            f"+{_p99(extra):.1f} ms (median +{statistics.median(extra):.1f} ms; the next run "
            f"{statistics.median(after):.1f} ms, uncancelled {statistics.median(plain):.1f} ms; "
            f"{load()})", "<= 50 ms", "ok" if _p99(extra) <= 50 else "over"))
    return out


if __name__ == "__main__":
    print(table(rows()))
