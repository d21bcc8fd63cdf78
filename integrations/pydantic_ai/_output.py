"""What the code prints while it runs, as events of the agent run's stream."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from pydantic_ai import CustomEvent, RunContext
from tooliscode.adapters import OUTPUT_EVENT, OutputChunk, OutputSink

__all__ = ["CodeOutputEvent", "emitter"]


@dataclass(kw_only=True)
class CodeOutputEvent(CustomEvent, name=OUTPUT_EVENT):
    """A chunk of what the code of a `run_python` call printed, as it printed it: in
    `Agent.run_stream_events`, `event_stream_handler`, `Agent.iter`'s streams and the UI
    adapters, with `tool_call_id` the call's."""

    stream: str
    """"stdout" or "stderr"."""
    text: str


def emitter(ctx: RunContext[Any]) -> OutputSink:
    """Each chunk as a `CodeOutputEvent` emitted into `ctx`'s run (awaited in order)."""

    def emit(chunk: OutputChunk) -> Awaitable[Any]:
        return ctx.emit(CodeOutputEvent(stream=chunk.stream, text=chunk.text))

    return emit
