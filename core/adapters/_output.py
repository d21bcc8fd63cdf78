"""What the code prints while its cell runs, on the front end's own stream.

Each call of the code tool that someone watches gets an `on_output` (see `Session.run`) made
here: every chunk becomes an `OutputChunk` (the code tool call it belongs to, the stream, the
text) and goes, in order, to the framework's sink (`Hooks.output`: a LangGraph stream writer,
a PydanticAI event, an MCP progress notification, ...) and to `Options.on_output`, the
application's own channel. A call nobody watches streams nothing, and so costs nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..engine import OnOutput

__all__ = ["OUTPUT_EVENT", "OutputChunk", "OutputSink", "forward"]

OUTPUT_EVENT = "tooliscode.output"
"""The name front ends give the event that carries a chunk, where their stream names events."""


@dataclass(frozen=True)
class OutputChunk:
    """A piece of what the code of code tool call `call_id` printed, as it printed it."""

    call_id: str
    stream: str
    """"stdout" or "stderr"."""
    text: str

    def payload(self) -> dict[str, str]:
        """The chunk as plain data, for streams that carry JSON."""
        return {"type": OUTPUT_EVENT, "call_id": self.call_id, "stream": self.stream,
                "text": self.text}


OutputSink = Callable[[OutputChunk], Any]
"""Takes each chunk; what it returns is awaited (in order) when it is awaitable and the cell
runs under an event loop."""


def forward(call_id: str, *sinks: OutputSink | None) -> OnOutput | None:
    """The `on_output` of one code tool call: each chunk to every sink given, in order; None
    when no sink is given (nothing streams)."""
    given = tuple(s for s in sinks if s is not None)
    if not given:
        return None

    def on_output(stream: str, text: str) -> Awaitable[None] | None:
        chunk = OutputChunk(call_id, stream, text)
        pending = [r for r in (sink(chunk) for sink in given) if inspect.isawaitable(r)]
        return _all(pending) if pending else None

    return on_output


async def _all(pending: list[Awaitable[Any]]) -> None:
    for awaitable in pending:
        await awaitable
