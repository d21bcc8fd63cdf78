"""What the code prints while it runs, as MCP progress of the `tools/call` request."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from ..adapters import OutputChunk, OutputSink

__all__ = ["progress_sink"]


def progress_sink(ctx: Any) -> OutputSink | None:
    """Each chunk as `notifications/progress` for the request `ctx` is (its `message` the
    chunk's text, `progress` the characters printed so far), when the client asked for
    progress with a `progressToken`; None otherwise, and then nothing streams.

    Progress rather than log messages: the logging capability is deprecated as of the
    2026-07-28 protocol, and progress is tied to the one request whose code printed."""
    meta = getattr(ctx, "meta", None) or {}
    if meta.get("progress_token") is None:
        return None
    session = ctx.session
    printed = 0

    def report(chunk: OutputChunk) -> Awaitable[None]:
        nonlocal printed
        printed += len(chunk.text)
        return session.report_progress(printed, None, chunk.text)

    return report
