"""What a stdio MCP server needs from its process: stop on signals, read stdin on the loop."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

__all__ = ["on_signals", "stdin_lines"]

_LINE_LIMIT = 256 * 1024 * 1024
"""The longest message a stdio client may send (a cell's code travels in one line)."""


def on_signals(stop: Callable[[], object]) -> list[int]:
    """Call `stop()` on SIGTERM and SIGINT (where the loop can listen for them); the returned
    list collects the signals received."""
    import signal

    received: list[int] = []

    def handle(sig: int) -> None:
        received.append(sig)
        stop()

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, handle, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows; not the main thread
            pass
    return received


async def stdin_lines() -> Any:
    """stdin as async lines read on the event loop, or `None` (the SDK's default) when it is
    a file. The SDK reads stdin in a thread that cancelling cannot stop, so a server told to
    stop (SIGTERM) would wait for the client's next line."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    pipe = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    except (ValueError, OSError, NotImplementedError):  # a regular file; Windows
        pipe.close()
        return None

    async def lines() -> AsyncIterator[str]:
        while line := await reader.readline():
            yield line.decode("utf-8", errors="replace")

    return lines()
