"""Running the tool calls one cell makes: blocking calls, started (concurrent) calls, limits."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import inspect
import itertools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from ..errors import ToolError
from ..guest import clip, message_chars, to_json_value
from ..runtime import GUEST_DIR
from ..tools import Tool, ToolRegistry, describe_validation_error
from ._daemon_threads import DaemonThreads
from ._folder import OUTPUT, write_new_file
from ._handoff import LoopHandoff
from ._limits import Limits
from ._pause import (
    CallInfo,
    CallPaused,
    CallRecord,
    Decision,
    Parking,
    StopCell,
    in_call,
)
from ._result import ToolCallRecord
from ._steering import ANSWERED, Started, Steering, paused

__all__ = ["CellCalls", "background_loop", "tool_executor"]

_PLAIN = frozenset({dict, list, str, int, float, bool, type(None)})
"""What tools return most; never awaitable, so `inspect.isawaitable` need not be asked."""
_executor: DaemonThreads | None = None
_loop: asyncio.AbstractEventLoop | None = None
_lock = threading.Lock()


def tool_executor() -> DaemonThreads:
    """Threads for sync tools that run concurrently or under a timeout (daemons: a call given
    up on may never return)."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = DaemonThreads(32, "tooliscode-tool")
        return _executor


def background_loop() -> asyncio.AbstractEventLoop:
    """The private event loop async tools run on when the session is driven synchronously."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="tooliscode-loop", daemon=True).start()
        return _loop


def _message(exc: BaseException) -> str:
    if isinstance(exc, ToolError):
        return str(exc)
    if isinstance(exc, ValidationError):
        return f"invalid arguments: {describe_validation_error(exc)}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class CellCalls(Steering):
    """The host side of one cell's tool calls."""

    registry: ToolRegistry
    limits: Limits
    loop: asyncio.AbstractEventLoop | None
    """The loop async tools run on: the caller's under `arun`, else `background_loop()`."""
    deadline: float | None
    _made: list[tuple[str, dict[str, Any], float, bool, str | None]] = field(
        default_factory=list)
    """The calls made, as `ToolCallRecord` fields: a tuple costs less to make per call than
    the frozen record, which is built once, when the cell's result is."""
    _count: int = 0
    _ids: Any = field(default_factory=lambda: itertools.count(1))
    _started: dict[int, Started] = field(default_factory=dict)
    _blocking: cf.Future | None = None
    _calling: str | None = None
    """The tool of the call running on the guest's thread, if one is."""
    _loop_calls: LoopHandoff | None = None
    cancelled: bool = False
    on_call: Callable[[], None] | None = None
    """Run before the cell's first tool call (tools may change the session folder)."""
    workdir: Path | None = None
    """The session folder: a tool's message too long to hand to the code whole is saved in
    its `OUTPUT` folder."""
    outer_id: str | None = None
    """The code tool's call this cell runs for: the cell's calls are `<outer_id>:<n>`, tools
    learn theirs from `current_call()`, and each call's outcome is logged (`log`)."""
    replay: dict[str, CallRecord] = field(default_factory=dict)
    """Calls an earlier run of this cell made: answered from here, not run again."""
    expected: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """Calls an earlier run waited on (tool, arguments): the run must ask for the same ones."""
    decisions: dict[str, Decision] = field(default_factory=dict)
    """Decisions known before the calls are made (continuing a cell elsewhere)."""
    parking: Parking = field(default_factory=lambda: Parking(None))
    on_park: Callable[[], None] | None = None
    """On the guest's thread, when it parks at paused calls."""
    on_unpark: Callable[[float], None] | None = None
    """On the guest's thread, when it goes on, with the seconds it was parked."""
    log: dict[str, CallRecord] = field(default_factory=dict)

    @property
    def records(self) -> list[ToolCallRecord]:
        """The cell's tool calls so far, in the order they ended."""
        return [ToolCallRecord(*made) for made in self._made]

    def unfinished(self) -> list[str]:
        """The tools of calls still running (when the cell is stopped: their effects may
        happen yet)."""
        names = [s.tool.name for s in list(self._started.values()) if not s.future.done()]
        calling = self._calling
        return names + [calling] if calling is not None else names

    # -- entry point (guest thread) -----------------------------------------------------

    def handle(self, op: str, msg: dict[str, Any]) -> dict[str, Any]:
        if op == "call":
            return self._call(msg)
        if self._loop_calls is not None:
            self._loop_calls.leave()
        if op == "start":
            return self._start(msg)
        if op == "wait":
            return self._wait(msg)
        if op == "cancel":
            for cid in msg.get("ids") or ():
                started = self._started.pop(cid, None) if isinstance(cid, int) else None
                if started is not None:
                    started.future.cancel()
            return {"ok": True}
        return {"ok": False, "error": f"unknown request {op!r}", "kind": "protocol"}

    def _admit(self, msg: dict[str, Any]) -> tuple[Tool, dict[str, Any]] | dict[str, Any]:
        name, arguments = msg.get("name"), msg.get("args", {})
        tool = self.registry.get(name) if isinstance(name, str) else None
        if tool is None:
            shown = name[:100] if isinstance(name, str) else name
            return {"ok": False, "error": f"there is no tool {shown!r}", "kind": "unknown",
                    "tool": shown}
        if not isinstance(arguments, dict):
            return {"ok": False, "error": f"{name}: arguments must be an object", "tool": name}
        if self.cancelled:
            return {"ok": False, "error": "the cell was cancelled", "kind": "cancelled",
                    "tool": name}
        if self._count == 0 and self.on_call is not None:
            self.on_call()
        if self.limits.tool_calls is not None and self._count >= self.limits.tool_calls:
            return {"ok": False, "kind": "limit", "tool": name,
                    "error": f"this cell reached its limit of {self.limits.tool_calls} tool "
                             "calls; do fewer calls per cell or batch the work"}
        self._count += 1
        return tool, arguments

    def _until(self, tool: Tool, now: float) -> float | None:
        """When a call of `tool` that starts `now` must have ended (on the monotonic clock):
        at the end of the tool's own timeout or the cell's, whichever comes first."""
        own = tool.timeout_s if tool.timeout_s is not None else self.limits.tool_timeout_s
        if own is None:
            return self.deadline
        return now + own if self.deadline is None else min(now + own, self.deadline)

    def _timeout(self, tool: Tool) -> float | None:
        now = time.monotonic()
        until = self._until(tool, now)
        return None if until is None else max(0.0, until - now)

    def _submit(self, tool: Tool, arguments: dict[str, Any], timeout: float | None) -> cf.Future:
        if tool.is_async:
            return asyncio.run_coroutine_threadsafe(_bounded(tool.ainvoke(arguments), timeout),
                                                    self.loop or background_loop())
        return tool_executor().submit(_invoke_sync, tool, arguments, self.loop)

    def _record(self, tool: Tool, arguments: dict[str, Any], started: float,
                error: str | None) -> None:
        self._made.append((tool.name, arguments, time.monotonic() - started, error is None,
                           error))

    def _outcome(self, tool: Tool, arguments: dict[str, Any], started: float,
                 fn: Any) -> dict[str, Any]:
        try:
            value = to_json_value(fn())
        except BaseException as exc:  # noqa: BLE001 - every tool failure goes to the guest
            return self._failed(tool, arguments, started, exc)
        self._record(tool, arguments, started, None)
        return {"ok": True, "value": value}

    def _failed(self, tool: Tool, arguments: dict[str, Any], started: float,
                exc: BaseException) -> dict[str, Any]:
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError, cf.TimeoutError)):
            kind = "timeout"
            error = f"{tool.qualified_name}: timed out after {time.monotonic() - started:.1f} s"
        elif isinstance(exc, StopCell):
            self.cancelled = True  # nothing more runs in this cell
            kind, error = "stop", str(exc)
        else:
            kind, error = "error", self._fit(_message(exc))
        self._record(tool, arguments, started, error)
        return {"ok": False, "error": error, "kind": kind, "tool": tool.name}

    def _fit(self, error: str) -> str:
        """A tool's message no longer than the share of the output limit a message keeps in a
        traceback: past that, its head and tail and where the whole of it was saved. Cut
        here, so that megabytes never cross to the guest."""
        if self.limits.output_chars is None:
            return error
        limit = message_chars(self.limits.output_chars)
        if len(error) <= limit:
            return error
        shown = clip(error, limit)
        if self.workdir is None:
            return shown
        path = f"{OUTPUT}/tool-error-{uuid.uuid4().hex[:12]}.txt"
        kept = error[:self.limits.spill_bytes]
        try:
            write_new_file(self.workdir, path, kept.encode("utf-8", "surrogateescape"))
        except (OSError, ValueError):
            return shown
        whole = "the whole message" if len(kept) == len(error) else "its first part"
        return (f"{shown}\n[the message was {len(error):,} characters; {whole} is in "
                f"{GUEST_DIR}/{path}]")

    def _call(self, msg: dict[str, Any]) -> dict[str, Any]:
        admitted = self._admit(msg)
        if type(admitted) is dict:
            return admitted
        tool, arguments = cast("tuple[Tool, dict[str, Any]]", admitted)
        n = self._count
        if self.outer_id is None:  # the common case: no ids, no log
            reply = self._invoke(tool, arguments)
            if type(reply) is dict:
                return reply
        else:
            reply = self._steer(n, tool, arguments) or self._invoke(
                in_call(tool, CallInfo(self.id_of(n))), arguments)
        while not isinstance(reply, dict):  # paused: wait for the decision, then follow it
            decisions = self._park([self._pending(n, tool, arguments, reply)])
            reply = self._decided(n, tool, arguments, decisions[self.id_of(n)])
        return self._logged(n, tool, arguments, reply)

    def _invoke(self, tool: Tool, arguments: dict[str, Any]) -> dict[str, Any] | CallPaused:
        """Run one call for the guest; `CallPaused` when the tool paused it."""
        started = time.monotonic()
        is_async, handoff = tool.is_async, self._loop_calls
        if handoff is not None and not is_async:
            handoff.leave()  # a sync tool runs here with no running loop, as always
        self._calling = tool.name
        try:
            if is_async:
                value = (handoff or self._handoff()).call(tool.invoke, arguments,
                                                          self._until(tool, started))
            elif tool.timeout_s is not None or self.limits.tool_timeout_s is not None:
                timeout = self._timeout(tool)
                future = self._blocking = tool_executor().submit(_invoke_sync, tool, arguments,
                                                                 self.loop)
                try:
                    value = future.result(timeout)
                finally:
                    self._blocking = None
            else:
                # A sync tool with no timeout of its own runs right here, on the guest's
                # thread: the common case, kept free of closures and futures.
                value = tool.invoke(arguments)
                if type(value) not in _PLAIN and inspect.isawaitable(value):
                    # a sync-looking callable's coroutine (LangChain's tools under ainvoke):
                    # run as an async tool's is, its first step right here
                    value = (handoff or self._handoff()).call(_same, value,
                                                              self._until(tool, started))
            value = to_json_value(value)
        except BaseException as exc:  # noqa: BLE001 - every tool failure goes to the guest
            self._calling = None
            if isinstance(exc, CallPaused):
                return exc
            return self._failed(tool, arguments, started, exc)
        self._calling = None
        self._made.append((tool.name, arguments, time.monotonic() - started, True, None))
        return {"ok": True, "value": value}

    def _handoff(self) -> LoopHandoff:
        handoff = self._loop_calls
        if handoff is None:
            handoff = self._loop_calls = LoopHandoff(self.loop or background_loop())
        return handoff

    def _start(self, msg: dict[str, Any]) -> dict[str, Any]:
        admitted = self._admit(msg)
        if isinstance(admitted, dict):
            return admitted
        tool, arguments = admitted
        n, now, cid = self._count, time.monotonic(), next(self._ids)
        answer = self._steer(n, tool, arguments) if self.outer_id is not None else None
        if answer is not None:
            if answer.get("kind") == "stop":
                return answer
            self._started[cid] = Started(tool, arguments, ANSWERED, now, None, n, answer)
        else:
            if self.outer_id is not None:
                tool = in_call(tool, CallInfo(self.id_of(n)))
            timeout = self._timeout(tool)
            self._started[cid] = Started(tool, arguments, self._submit(tool, arguments, timeout),
                                          now, None if timeout is None else now + timeout, n)
        return {"ok": True, "id": cid}

    def _wait(self, msg: dict[str, Any]) -> dict[str, Any]:
        ids = [i for i in (msg.get("ids") or ()) if isinstance(i, int)]
        unknown = [{"id": i, "ok": False, "error": "unknown call id"} for i in ids
                   if i not in self._started]
        waiting = {i: self._started[i] for i in ids if i in self._started}
        if unknown or not waiting:
            return {"done": unknown}
        timeout = msg.get("timeout")
        while True:
            limit = float(timeout) if isinstance(timeout, (int, float)) else None
            expiries = [s.expires for s in waiting.values() if s.expires is not None]
            if expiries:
                until = max(0.0, min(expiries) - time.monotonic())
                limit = until if limit is None else min(limit, until)
            cf.wait([s.future for s in waiting.values() if not paused(s)], timeout=limit,
                    return_when=cf.FIRST_COMPLETED)
            done = self._collect(waiting)
            if done or not waiting or not all(paused(s) for s in waiting.values()):
                return {"done": done}
            self._decide_started()  # every call waited on waits for a decision: pause

    def _collect(self, waiting: dict[int, Started]) -> list[dict[str, Any]]:
        """The answers of the calls in `waiting` that ended (taken out of it); calls that
        paused stay, waiting for their decisions."""
        now, done = time.monotonic(), []
        for cid, s in list(waiting.items()):
            if paused(s):
                continue
            if s.answer is not None:
                reply = s.answer
            else:
                expired = s.expires is not None and now >= s.expires
                if not (s.future.done() or expired):
                    continue
                if not s.future.done():
                    s.future.cancel()
                fn = s.future.result if s.future.done() and not s.future.cancelled() \
                    else _raise_timeout
                if s.future.done() and not s.future.cancelled() and \
                        isinstance(s.future.exception(), CallPaused):
                    continue
                reply = self._outcome(s.tool, s.arguments, s.started, fn)
            del self._started[cid], waiting[cid]
            done.append({"id": cid, **self._logged(s.n, s.tool, s.arguments, reply)})
        return done

    def rebind(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Go on with async tools on `loop` (a paused cell continued by another run; no
        call is in flight while it is paused)."""
        if loop is not self.loop:
            if self._loop_calls is not None:
                self._loop_calls.close()
                self._loop_calls = None
            self.loop = loop

    def leave_loop(self) -> None:
        """The guest's thread is about to run the caller's code (an output callback): it no
        longer runs as the loop's (see `LoopHandoff.leave`)."""
        if self._loop_calls is not None:
            self._loop_calls.leave()

    def close(self) -> None:
        """The cell has ended: its task on the loop (if any) ends too. Its hook into the
        cell goes: the cell holds these calls, so the two would be garbage in a cycle, kept
        for the collector with all they hold (each cell, a framework's run context too)."""
        self.on_call = None
        if self._loop_calls is not None:
            self._loop_calls.close()

    def cancel_all(self) -> None:
        """From any thread: fail the calls still running; used when a cell is cancelled."""
        self.cancelled = True
        blocking = self._blocking
        if blocking is not None:
            blocking.cancel()
        if self._loop_calls is not None:
            self._loop_calls.cancel()
        for started in list(self._started.values()):
            started.future.cancel()
        self.parking.give_up("the cell was cancelled")


def _raise_timeout() -> Any:
    raise TimeoutError


def _invoke_sync(tool: Tool, arguments: dict[str, Any], loop: Any) -> Any:
    value = tool.invoke(arguments)
    return _resolve(value, loop) if inspect.isawaitable(value) else value


def _same(value: Any) -> Any:
    return value


def _resolve(awaitable: Any, loop: Any) -> Any:
    """The value of an awaitable a sync-looking callable returned, run on the tools' loop."""
    return asyncio.run_coroutine_threadsafe(_await(awaitable), loop or background_loop()).result()


async def _bounded(awaitable: Any, timeout: float | None) -> Any:
    """`awaitable` under `timeout`; `asyncio.timeout` where there is one, since `wait_for`
    would add a task to every call."""
    if timeout is None:
        return await awaitable
    if hasattr(asyncio, "timeout"):
        async with asyncio.timeout(timeout):
            return await awaitable
    return await asyncio.wait_for(awaitable, timeout)


async def _await(value: Any) -> Any:
    return await value
