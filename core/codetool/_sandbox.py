"""One conversation's interpreter: a lazily started `Session`, its tools, and the running
cell's context.

A front end hands its tools something per call (LangChain a callback config, PydanticAI a
`RunContext`, the Agents SDK a `ToolContext`, `ToolIsCode` the model's call id). The session
calls tool functions on other threads and loops, where context variables do not follow, so
the sandbox keeps that object in `context` for the length of one cell; `lock` makes "set the
context, run the cell" one step.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import json
import logging
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine import Limits, Renewal, Session
from ..errors import SessionClosed
from ..prompt import REPLACED
from ..runtime import Runtime
from ..tools import Tool, ToolRegistry, as_tool
from ._background import submit

__all__ = ["Sandbox", "ToolFactory", "Toolbox", "fingerprint"]

log = logging.getLogger("tooliscode")

ToolFactory = Callable[["Sandbox"], Iterable[Tool]]
"""Makes a session's tools, bound to the sandbox whose `context` they read."""


def fingerprint(tools: Iterable[Tool]) -> str:
    """What tells one tool set from another, as the model and the guest see it."""
    return json.dumps([(t.name, t.namespace, t.python_name, t.description, t.parameters,
                        t.output_schema) for t in tools], sort_keys=True, default=str)


@dataclass(frozen=True)
class Toolbox:
    """The tools a sandbox's session gets.

    `bind(sandbox)` makes them; `key` identifies the set. A guest's tools are fixed when it
    starts, so a sandbox asked to run with another key replaces its session.
    """

    bind: ToolFactory
    key: Hashable = None

    @classmethod
    def of(cls, tools: Iterable[Tool | Callable[..., Any]]) -> Toolbox:
        """Tools (or plain functions) that read no context: the same functions in every
        sandbox. Two such toolboxes are the same set when the declarations and the functions
        are."""
        fixed = [as_tool(t) for t in tools]
        return cls(lambda _sandbox: fixed,
                   (fingerprint(fixed), tuple(id(t.function) for t in fixed)))


@dataclass(eq=False)
class Sandbox:
    """A lazily started `Session`, the context its running cell's tools read, and locks."""

    limits: Limits | None = None
    workdir: Path | None = None
    runtime: Runtime | str | None = None
    context: Any = None
    """What the running cell's tool calls need; `None` between cells."""
    session: Session | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while a cell runs (with `context` set)."""
    _key: Hashable = None
    _closed: bool = False
    _used: bool = False
    """A cell has run in the current session (so replacing it loses something)."""
    _starting: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while the session is made, replaced or closed."""
    renewable: bool = False
    """Its sessions keep what lets `renew` make them as new (a run's sandbox)."""
    _renewal: Renewal | None = None

    @property
    def fresh(self) -> bool:
        """No code has run in the current session (nor is running): handing it to someone
        else gives away nothing."""
        return not self._used and not self.lock.locked() and not self._closed

    def ready(self, toolbox: Toolbox) -> bool:
        """Started, with this tool set."""
        return self.session is not None and toolbox.key == self._key

    def prepare(self, toolbox: Toolbox) -> str | None:
        """Start the session with `toolbox`'s tools, replacing one with other tools; returns
        a notice for the model when that lost the state of earlier cells."""
        with self._starting:
            if self._closed:
                raise SessionClosed("this conversation's sandbox is closed")
            if self.ready(toolbox):
                return None
            replaced, self.session = self.session, None
            if replaced is not None:
                replaced.close()
            self._start(toolbox)
            used, self._used = self._used, False
            return REPLACED if replaced is not None and used else None

    def adopt(self, toolbox: Toolbox, make: Callable[[], Session]) -> None:
        """Replace the session with the one `make` returns (restored from a store), made with
        `toolbox`'s tools. The old one closes first: the new one may use the same folder."""
        with self._starting:
            if self._closed:
                raise SessionClosed("this conversation's sandbox is closed")
            old, self.session, self._renewal = self.session, None, None
            if old is not None:
                old.close(wait=self.workdir is not None)
            self.session = make()
            self._key, self._used = toolbox.key, True

    def live(self) -> Session:
        """The started session; `SessionClosed` if the sandbox was closed."""
        if self.session is None:
            raise SessionClosed("this conversation's sandbox is closed")
        return self.session

    def enter(self, context: Any) -> Session:
        """The session to run the next cell in, with `context` set (hold `lock`)."""
        session = self.live()
        self.context, self._used = context, True
        return session

    def start(self, toolbox: Toolbox) -> None:
        """Start the session now if there is none (a failure is logged: the first cell
        tries again and reports it)."""
        with self._starting:
            if self.session is None and not self._closed:
                self._start_ahead(toolbox)

    def warm(self, toolbox: Toolbox) -> None:
        """`start` on another thread if there is no session yet, so that it is ready by the
        time the model's first code arrives."""
        if self.session is None and not self._closed and not self._starting.locked():
            submit(self.start, toolbox)

    def hold_for_renewal(self, toolbox: Toolbox) -> bool:
        """True, holding `lock`, when this sandbox can be made new again for a run with
        `toolbox`'s tools: `renew` then does it and lets go (a run that takes the sandbox
        meanwhile waits at its first cell)."""
        if not self.lock.acquire(blocking=False):
            return False  # a cell still runs in it
        if self._closed or self._renewal is None or not self.ready(toolbox):
            self.lock.release()
            return False
        return True

    def renew(self, toolbox: Toolbox) -> None:
        """After `hold_for_renewal`, without waiting: nothing of the cells that ran is left
        (see `engine/_renewal.py`). The guest is renewed on its own thread; one that cannot
        be is replaced by a new one, on another thread. Either way `lock` is let go then."""
        renewal = self._renewal
        asked = renewal.renew_soon() if renewal is not None and not self._closed else None
        if asked is None:
            submit(self._renewed_by_now, toolbox, False)
        else:
            asked.add_done_callback(functools.partial(self._renewal_done, toolbox))

    def hurry(self) -> None:
        """A run takes this sandbox: a renewal still waiting to begin begins now."""
        renewal = self._renewal
        if renewal is not None and self.lock.locked():
            renewal.hurry()

    def _renewal_done(self, toolbox: Toolbox, asked: cf.Future) -> None:
        """On the guest's thread, as a rule: the renewal asked for is done. Nothing here
        waits for a lock another thread could hold while it waits for this guest."""
        renewed = not asked.cancelled() and asked.exception() is None and asked.result() is True
        if renewed and self._starting.acquire(blocking=False):
            try:
                if not self._closed:
                    self.context, self._used = None, False
            finally:
                self._starting.release()
            self.lock.release()
        else:
            submit(self._renewed_by_now, toolbox, renewed)

    def _renewed_by_now(self, toolbox: Toolbox, renewed: bool) -> None:
        """`renew`'s end, on another thread: a session that was not renewed replaced."""
        try:
            with self._starting:
                if self._closed:
                    return
                self.context = None
                if not renewed:
                    old, self.session, self._renewal = self.session, None, None
                    if old is not None:
                        old.close()
                    self._start_ahead(toolbox)
                self._used = False
        finally:
            self.lock.release()

    def close(self) -> None:
        with self._starting:
            self._closed, self._renewal = True, None
            session, self.session = self.session, None
        if session is not None:
            session.close()

    def _start_ahead(self, toolbox: Toolbox) -> None:
        """`_start` before any code asks for it: a failure is logged (hold `_starting`), and
        the first cell tries again and reports it."""
        try:
            self._start(toolbox, ahead=True)
        except Exception:  # noqa: BLE001
            log.exception("tooliscode: starting a sandbox ahead of time failed")

    def _start(self, toolbox: Toolbox, ahead: bool = False) -> None:
        """`ahead`: before any code asks for it (a spare, a replacement), so its guest takes
        no slot: a guest in one is started again at its first renewal, where one made
        without is written back in place."""
        self._renewal = None
        self.session = Session(ToolRegistry(toolbox.bind(self)), limits=self.limits,
                               workdir=self.workdir, runtime=self.runtime, _ahead=ahead)
        self._key = toolbox.key
        if self.renewable:
            self._renewal = Renewal.prepare(self.session)
