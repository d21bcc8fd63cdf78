"""One conversation's interpreter as the framework adapters use it (framework-free).

A framework hands its tool code something per call (LangChain a callback manager, PydanticAI a
`RunContext`) that the inner tools need. The core calls tool functions on other threads and
loops, where context variables do not follow, so the sandbox keeps that object in `context`
for the length of one cell, under a lock that makes "set the context, run the cell" atomic.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooliscode import CellResult, Limits, Session, SessionClosed, Tool, ToolRegistry
from tooliscode.engine.keyed import KeyedSessions
from tooliscode.prompt.codetool import render

__all__ = ["Sandbox", "Sandboxes", "ToolFactory"]

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
    """Show what the names a silent cell defined hold, as `ToolIsCode` does."""
    context: Any = None
    """What the running cell's tool calls need; `None` between cells."""
    session: Session | None = None
    _tools_key: Hashable = None
    _closed: bool = False
    _used: bool = False
    """A cell has run in the current session (so replacing it loses something)."""
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
            self.context, self._used = context, True
            try:
                session = self._session()
                result = session.run(code)
            finally:
                self.context = None
        return result, self._text(result, notice)

    async def arun(self, code: str, context: Any, tools_key: Hashable,
                   tools: ToolFactory) -> tuple[CellResult, str]:
        """`run` for async callers: async tools run on the running loop."""
        await _acquire(self._lock)
        try:
            notice = (None if self.ready(tools_key)
                      else await asyncio.to_thread(self._prepare, tools_key, tools))
            self.context, self._used = context, True
            try:
                session = self._session()
                result = await session.arun(code)
            finally:
                self.context = None
        finally:
            self._lock.release()
        return result, self._text(result, notice)

    def warm(self, tools_key: Hashable, tools: ToolFactory) -> None:
        """`start` on another thread if there is no session yet, so that it is ready by the
        time the model's first code arrives."""
        if self.session is None and not self._closed and not self._starting.locked():
            _submit(self.start, tools_key, tools)

    def start(self, tools_key: Hashable, tools: ToolFactory) -> None:
        """Start the session now if there is none (a failure is logged: the first cell
        tries again and reports it)."""
        with self._starting:
            if self.session is None and not self._closed:
                try:
                    self._start(tools_key, tools)
                except Exception:  # noqa: BLE001
                    log.exception("tooliscode: starting a sandbox ahead of time failed")

    def close(self) -> None:
        with self._starting:
            self._closed = True
            session, self.session = self.session, None
        if session is not None:
            session.close()

    def _text(self, result: CellResult, notice: str | None) -> str:
        text = render(result, None if self.describe else {})
        return f"[note] {notice}\n{text}" if notice else text

    def _session(self) -> Session:
        if self.session is None:
            raise SessionClosed("this conversation's sandbox is closed")
        return self.session

    @property
    def fresh(self) -> bool:
        """No code has run in the current session (nor is running): handing it to someone
        else gives away nothing."""
        return not self._used and not self._lock.locked() and not self._closed

    def ready(self, tools_key: Hashable) -> bool:
        """Started, with this tool set."""
        return self.session is not None and tools_key == self._tools_key

    def _prepare(self, tools_key: Hashable, tools: ToolFactory) -> str | None:
        with self._starting:
            if self._closed:
                raise SessionClosed("this conversation's sandbox is closed")
            if self.ready(tools_key):
                return None
            replaced, self.session = self.session, None
            if replaced is not None:
                replaced.close()
            self._start(tools_key, tools)
            used, self._used = self._used, False
            return _REPLACED if replaced is not None and used else None

    def _start(self, tools_key: Hashable, tools: ToolFactory) -> None:
        self.session = Session(ToolRegistry(tools(self)), limits=self.limits, workdir=self.workdir)
        self._tools_key = tools_key


@dataclass
class Sandboxes:
    """Where a code tool's runs get their sandbox.

    Per run (`take` / `finish`): a fresh sandbox each run, closed on another thread when the
    run ends; a started spare is then made for the next run, so runs rarely wait for an
    interpreter to start and never share one. Per conversation (`acquire` / `release`): one
    per key, kept across runs; idle ones are closed after `idle_s`. A run's sandbox that no
    code ran in is not closed but becomes the spare.
    """

    limits: Limits | None = None
    describe: bool = True
    idle_s: float | None = 1800.0
    keep_spare: bool = True
    _spare: Sandbox | None = None
    _conversations: KeyedSessions[Sandbox] | None = None
    _closed: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def new(self) -> Sandbox:
        return Sandbox(limits=self.limits, describe=self.describe)

    def take(self) -> Sandbox:
        """A sandbox for one run: the spare if there is one."""
        with self._lock:
            spare, self._spare = self._spare, None
        return spare if spare is not None else self.new()

    def finish(self, sandbox: Sandbox, tools_key: Hashable = None,
               tools: ToolFactory | None = None) -> None:
        """A run ended: close its sandbox and (given its tools) start the next run's spare,
        both on another thread; a sandbox no code ran in becomes the spare itself."""
        _submit(self._finish, sandbox, tools_key, tools)

    def acquire(self, key: Hashable) -> tuple[Sandbox, str | None]:
        """The conversation's sandbox, kept busy until `release(key)`; and a notice if an
        earlier one of this key was closed."""
        with self._lock:
            if self._conversations is None:
                self._conversations = KeyedSessions(lambda _key: self.new(), idle_s=self.idle_s)
        return self._conversations.acquire(key)

    def release(self, key: Hashable) -> None:
        if self._conversations is not None:
            self._conversations.release(key)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.close()
        if self._conversations is not None:
            self._conversations.close()

    def _finish(self, sandbox: Sandbox, tools_key: Hashable, tools: ToolFactory | None) -> None:
        if not self.keep_spare or tools is None or self._closed:
            sandbox.close()
            return
        if sandbox.fresh:  # no code ran in it: as good as new, and already started
            sandbox.start(tools_key, tools)
            if sandbox.fresh and sandbox.ready(tools_key) and self._offer(sandbox):
                return
        sandbox.close()
        if self._spare is not None:
            return
        spare = self.new()
        spare.start(tools_key, tools)
        if not self._offer(spare):
            spare.close()

    def _offer(self, spare: Sandbox) -> bool:
        """Make `spare` the next run's sandbox, unless there is one already (or we closed)."""
        with self._lock:
            if self._spare is None and not self._closed:
                self._spare = spare
                return True
        return False


_executor: cf.ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _background() -> cf.ThreadPoolExecutor:
    """Threads for starting and closing sandboxes off the caller's path (joined at exit,
    before the sessions are torn down)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = cf.ThreadPoolExecutor(4, thread_name_prefix="tooliscode-sandbox")
        return _executor


def _submit(fn: Callable[..., Any], *args: Any) -> None:
    """Run `fn` in the background; inline once the interpreter is shutting down."""
    try:
        _background().submit(fn, *args)
    except RuntimeError:  # cannot schedule new futures after interpreter shutdown
        fn(*args)


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
