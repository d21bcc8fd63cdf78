"""One conversation's interpreter as the framework adapters use it (framework-free).

A framework hands its tool code something per call (LangChain a callback manager, PydanticAI a
`RunContext`) that the inner tools need. The core calls tool functions on other threads and
loops, where context variables do not follow, so the sandbox keeps that object in `context`
for the length of one cell, under a lock that makes "set the context, run the cell" atomic.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooliscode import CellResult, Limits, Session, SessionClosed, Tool, ToolRegistry
from tooliscode.codetool import render
from tooliscode.describe import adescribe_names, describe_names

__all__ = ["Sandbox", "ToolFactory"]

log = logging.getLogger("tooliscode")

ToolFactory = Callable[["Sandbox"], Iterable[Tool]]
"""Builds the session's tools, bound to the sandbox whose `context` they read."""

_REPLACED = ("The tools changed, so a new Python interpreter was started: earlier variables, "
             "functions and imports are gone.")


@dataclass
class Sandbox:
    """A lazily started `Session`, the context its running cell's tool calls read, and a lock."""

    limits: Limits | None = None
    workdir: Path | None = None
    describe: bool = True
    """Describe the names a silent cell defined, as `ToolIsCode` does."""
    context: Any = None
    """What the running cell's tool calls need; `None` between cells."""
    session: Session | None = None
    _tools_key: Hashable = None
    _closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while a cell runs (with `context` set)."""
    _starting: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while the session is made or replaced."""

    def run(self, code: str, context: Any, tools_key: Hashable,
            tools: ToolFactory) -> tuple[CellResult, str]:
        """Run one cell with `context` set; returns the result and what the model reads.

        `tools_key` identifies the tool set: when it differs from the live session's, the
        session is replaced (the notice says so) since a guest's tools are fixed at start.
        """
        with self._lock:
            notice = self._prepare(tools_key, tools)
            self.context = context
            try:
                session = self._session()
                result = session.run(code)
                reprs = describe_names(session, result) if self.describe else None
            finally:
                self.context = None
        return result, _text(result, reprs, notice)

    async def arun(self, code: str, context: Any, tools_key: Hashable,
                   tools: ToolFactory) -> tuple[CellResult, str]:
        """`run` for async callers: async tools run on the running loop."""
        await _acquire(self._lock)
        try:
            notice = (None if self._ready(tools_key)
                      else await asyncio.to_thread(self._prepare, tools_key, tools))
            self.context = context
            try:
                session = self._session()
                result = await session.arun(code)
                reprs = await adescribe_names(session, result) if self.describe else None
            finally:
                self.context = None
        finally:
            self._lock.release()
        return result, _text(result, reprs, notice)

    def warm(self, tools_key: Hashable, tools: ToolFactory) -> None:
        """Start the session on another thread if there is none yet, so that it is ready
        by the time the model's first code arrives."""
        if self.session is None and not self._closed and not self._starting.locked():
            threading.Thread(target=self._warm, args=(tools_key, tools),
                             name="tooliscode-warm", daemon=True).start()

    def close(self) -> None:
        with self._starting:
            self._closed = True
            session, self.session = self.session, None
        if session is not None:
            session.close()

    def _session(self) -> Session:
        if self.session is None:
            raise SessionClosed("this conversation's sandbox is closed")
        return self.session

    def _ready(self, tools_key: Hashable) -> bool:
        return self.session is not None and tools_key == self._tools_key

    def _warm(self, tools_key: Hashable, tools: ToolFactory) -> None:
        with self._starting:
            if self.session is None and not self._closed:
                try:
                    self._start(tools_key, tools)
                except Exception:  # noqa: BLE001 - the cell that needs it will start it and say why
                    log.exception("tooliscode: starting a sandbox ahead of time failed")

    def _prepare(self, tools_key: Hashable, tools: ToolFactory) -> str | None:
        with self._starting:
            if self._closed:
                raise SessionClosed("this conversation's sandbox is closed")
            if self._ready(tools_key):
                return None
            replaced, self.session = self.session, None
            if replaced is not None:
                replaced.close()
            self._start(tools_key, tools)
            return _REPLACED if replaced is not None else None

    def _start(self, tools_key: Hashable, tools: ToolFactory) -> None:
        self.session = Session(ToolRegistry(tools(self)), limits=self.limits, workdir=self.workdir)
        self._tools_key = tools_key


def _text(result: CellResult, reprs: dict[str, str] | None, notice: str | None) -> str:
    text = render(result, reprs)
    return f"[note] {notice}\n{text}" if notice else text


async def _acquire(lock: threading.Lock) -> None:
    """Take a thread lock without blocking the loop; if cancelled, release it once taken."""
    if lock.acquire(blocking=False):
        return
    waiter = asyncio.ensure_future(asyncio.to_thread(lock.acquire))
    try:
        await asyncio.shield(waiter)
    except asyncio.CancelledError:
        waiter.add_done_callback(lambda _: lock.release())
        raise
