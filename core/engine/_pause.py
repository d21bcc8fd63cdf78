"""Pausing a cell at tool calls that need a decision (an approval, or a result from outside),
and continuing it.

A tool pauses its call by raising `CallPaused`: the framework adapters do when the framework's
own policy says the call needs approval (or the tool itself defers). The cell then waits
inside that call, the guest parked in the host, until every call it waits on is decided:
approved (run now, perhaps with edited arguments), rejected (a `ToolError` in the code) or
answered (the given value is the call's result, the tool never runs). Gathered calls pause
together once nothing else is in flight.

Every call of a cell has an id, `<outer id>:<n>` in the order the code makes its calls, and
every finished call is logged with its outcome. A cell resumed in another process runs again
from the state before it with that log: logged calls are answered from it instead of running
again, each checked to be the same call (tool and arguments); the first that differs stops the
cell before anything runs.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextvars
import inspect
import json
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..errors import ToolIsCodeError

__all__ = ["CallInfo", "CallPaused", "CallRecord", "CellLog", "Decision", "Parking",
           "PendingCall", "StopCell", "current_call"]


class CallPaused(ToolIsCodeError):
    """Raised by a tool: this call waits for a decision from outside the code (`kind`:
    "approval", or "external" for a result another party gives). `metadata` travels with the
    pending call to whoever decides."""

    def __init__(self, kind: str = "approval", metadata: Any = None,
                 message: str = "this call needs a decision before it runs"):
        super().__init__(message)
        self.kind = kind
        self.metadata = metadata


class StopCell(ToolIsCodeError):
    """Raised by a tool: the cell stops at this call, and the code cannot catch it and go on
    (a framework's guardrail that ends the whole run, for example). The message says why."""


@dataclass(frozen=True)
class CallInfo:
    """The tool call a tool is running for (`current_call()`)."""

    id: str
    """`<outer id>:<n>`: the n-th call of the cell run for the code tool's call `outer id`."""
    approved: bool = False
    """A decision approved this call: the tool must not pause it again."""
    metadata: Any = None
    """What the decision carried for this call (an adapter's own data)."""


_current: contextvars.ContextVar[CallInfo | None] = contextvars.ContextVar(
    "tooliscode_call", default=None)


def current_call() -> CallInfo | None:
    """The call the running tool serves, when a cell called it with ids (None elsewhere)."""
    return _current.get()


class _InCall:
    """A tool whose calls see `info` as `current_call()` wherever they run: on the guest's
    thread, on a tool thread, or as a coroutine on an event loop."""

    __slots__ = ("_info", "_tool")

    def __init__(self, tool: Any, info: CallInfo):
        self._tool, self._info = tool, info

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tool, name)

    def invoke(self, arguments: dict[str, Any]) -> Any:
        token = _current.set(self._info)
        try:
            value = self._tool.invoke(arguments)
        finally:
            _current.reset(token)
        return _within(self._info, value) if inspect.isawaitable(value) else value

    async def ainvoke(self, arguments: dict[str, Any]) -> Any:
        return await _within(self._info, self._tool.ainvoke(arguments))


def in_call(tool: Any, info: CallInfo) -> Any:
    """`tool`, its calls made as the call `info` (a tool already made so is rewrapped, not
    nested: a call approved after it paused is made as its approved self)."""
    return _InCall(tool._tool if isinstance(tool, _InCall) else tool, info)


async def _within(info: CallInfo, awaitable: Any) -> Any:
    token = _current.set(info)
    try:
        return await awaitable
    finally:
        _current.reset(token)


@dataclass(frozen=True)
class PendingCall:
    """A call that waits for a decision."""

    id: str
    tool: str
    """The tool's host name (what the framework calls it)."""
    arguments: dict[str, Any]
    kind: str = "approval"
    metadata: Any = None


@dataclass(frozen=True)
class Decision:
    """What was decided for a pending call."""

    action: Literal["approve", "reject", "respond"]
    arguments: dict[str, Any] | None = None
    """approve: run with these arguments instead (an edit)."""
    message: str | None = None
    """reject: the text of the `ToolError` the code gets."""
    value: Any = None
    """respond: the call's result, the tool never running."""
    metadata: Any = None
    """approve: handed to the tool through `current_call()` (an adapter's own data)."""

    @classmethod
    def approve(cls, arguments: dict[str, Any] | None = None, metadata: Any = None) -> Decision:
        return cls("approve", arguments=arguments, metadata=metadata)

    @classmethod
    def reject(cls, message: str = "the call was not approved") -> Decision:
        return cls("reject", message=message)

    @classmethod
    def respond(cls, value: Any) -> Decision:
        return cls("respond", value=value)


@dataclass(frozen=True)
class CallRecord:
    """A finished call: the tool, its arguments and its outcome (a JSON value or an error)."""

    tool: str
    arguments: dict[str, Any]
    ok: bool
    value: Any = None
    error: str | None = None
    kind: str | None = None

    def same_call(self, tool: str, arguments: dict[str, Any]) -> bool:
        return same_call((self.tool, self.arguments), tool, arguments)

    def reply(self) -> dict[str, Any]:
        """What the guest is answered, as the call answered it the first time."""
        if self.ok:
            return {"ok": True, "value": self.value}
        return {"ok": False, "error": self.error or "the tool failed", "kind": self.kind or "error",
                "tool": self.tool}


@dataclass
class CellLog:
    """A paused cell, everything needed to continue it elsewhere: its code, the calls it made
    (by id) and the calls it waits on. JSON, for the session store."""

    code: str
    outer_id: str
    records: dict[str, CallRecord] = field(default_factory=dict)
    pending: list[PendingCall] = field(default_factory=list)
    expires: float | None = None
    """Wall-clock time (`time.time()`) after which the pause may no longer be resumed."""

    def to_json(self) -> str:
        return json.dumps({"code": self.code, "outer_id": self.outer_id,
                           "records": {k: asdict(v) for k, v in self.records.items()},
                           "pending": [asdict(p) for p in self.pending],
                           "expires": self.expires}, default=repr)

    @classmethod
    def from_json(cls, text: str | bytes) -> CellLog:
        data = json.loads(text)
        return cls(data["code"], data["outer_id"],
                   {k: CallRecord(**v) for k, v in data["records"].items()},
                   [PendingCall(**p) for p in data["pending"]], data.get("expires"))


def same_call(expected: tuple[str, dict[str, Any]], tool: str, arguments: dict[str, Any]) -> bool:
    """Whether a call of `tool` with `arguments` is the `expected` (tool, arguments), the
    arguments compared as JSON (the log keeps them so)."""
    return expected[0] == tool and _canonical(expected[1]) == _canonical(arguments)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr, separators=(",", ":"))


class Parking:
    """Where a cell's paused calls wait for their decisions.

    The guest's thread parks here (inside a tool call or a wait for started calls); the
    session learns of the pause through `signal` and hands decisions in from any thread."""

    def __init__(self, expire_s: float | None):
        self.expire_s = expire_s
        self._cond = threading.Condition()
        self._decisions: dict[str, Decision] = {}
        self._gave_up: str | None = None
        self.waiting: dict[str, PendingCall] = {}
        self.signal: cf.Future = cf.Future()
        """Set to the pending calls when the cell pauses; renewed by `next_signal`."""

    def next_signal(self) -> cf.Future:
        """A new future for the next pause (call before handing in decisions)."""
        with self._cond:
            if self.signal.done():
                self.signal = cf.Future()
            return self.signal

    def park(self, pending: list[PendingCall]) -> dict[str, Decision]:
        """On the guest's thread: announce `pending` and wait until each is decided (or the
        pause is given up: each is then rejected). Returns the decisions by id."""
        with self._cond:
            for item in pending:
                self.waiting[item.id] = item
            if not self.signal.done():
                self.signal.set_result(tuple(self.waiting.values()))
            deadline = None if self.expire_s is None else time.monotonic() + self.expire_s
            while self._gave_up is None and any(i not in self._decisions for i in self.waiting):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    self._gave_up = ("the call was not approved: nobody decided within "
                                     f"{self.expire_s:g} s, so the pause expired")
                    break
                self._cond.wait(left)
            none = Decision.reject(self._gave_up or "")
            out = {i: self._decisions.pop(i, none) for i in self.waiting}
            self.waiting.clear()
            return out

    def undecided(self, decisions: Mapping[str, Decision]) -> list[str]:
        """The waiting calls that neither `decisions` nor those handed in before decide."""
        with self._cond:
            return [i for i in self.waiting if i not in self._decisions and i not in decisions]

    def deliver(self, decisions: Mapping[str, Decision]) -> list[str]:
        """From any thread: decisions for waiting calls; returns the ids still undecided."""
        with self._cond:
            self._decisions.update(decisions)
            self._cond.notify_all()
            return [i for i in self.waiting if i not in self._decisions]

    def give_up(self, message: str) -> None:
        """From any thread: reject every call waiting now or later in this cell."""
        with self._cond:
            self._gave_up = message
            self._cond.notify_all()

    @property
    def given_up(self) -> str | None:
        return self._gave_up
