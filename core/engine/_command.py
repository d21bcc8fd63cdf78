"""A command for a guest: what it carries there, and how its outcome comes back.

A session hands each command to its worker (`_worker.py`), whose thread gives it to the guest
and settles its future; the caller waits on that future, or cancels the command before the
guest takes it (`Worker.drop`).
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Command", "ContextT", "NotStarted", "OpsHandler", "Requests", "settle"]

_RAW_OUTPUT_LIMIT = 64 * 1024
"""Most bytes a command keeps of what the guest wrote straight to its descriptors."""


class Requests(Protocol):
    """What a command's context does with the guest's requests while the command runs (a
    cell's tool calls). The engine needs nothing else of it, and imports no tool code."""

    def handle(self, op: str, msg: dict[str, Any]) -> dict[str, Any]: ...


ContextT = TypeVar("ContextT", bound=Requests)
OpsHandler = Callable[[str, dict[str, Any], "Requests | None"], dict[str, Any]]
"""Answers the requests that are not commands; gets the running command's context."""


class NotStarted(Exception):
    """The guest died before it took this command; it may be sent to a new guest."""


def settle(future: cf.Future, result: Any = None, error: BaseException | None = None) -> bool:
    """Give `future` its outcome unless it has one (a cancel from another thread may have
    given it first: `Session.cancel`); False when it had."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except cf.InvalidStateError:
        return False
    return True


@dataclass
class Command(Generic[ContextT]):
    message: dict[str, Any]
    timeout_s: float | None = None
    context: ContextT | None = None
    """What answers the guest's requests while this command runs (the cell's tool calls)."""
    before: Callable[[], None] | None = None
    """Run on the guest's thread just before the guest receives the command."""
    on_change: Callable[[], None] | None = None
    """Run before the command's first change to the session folder (by guest or tool)."""
    deadline: float | None = None
    """Where set, when `timeout_s` runs out (on the monotonic clock), counted from when the
    command was made: the guest is armed up to it, the bound its tool calls have too."""
    future: cf.Future = field(default_factory=cf.Future)
    raw: dict[str, list[bytes]] = field(default_factory=lambda: {"stdout": [], "stderr": []})
    notices: list[str] = field(default_factory=list)
    """What the runtime refused while the command ran (a full folder)."""
    blob: bytes | None = None
    """Bytes the guest handed over while the command ran (a checkpoint's)."""
    on_raw: Callable[[str, bytes], None] | None = None
    """Also given what the guest writes straight to its descriptors (a streamed cell's)."""
    started: bool = False
    """The guest was handed it (set under the worker's lock: see `Worker.drop`)."""
    dropped: bool = False
    """Cancelled before the guest was handed it: it never runs."""
    _raw_size: int = 0

    def seconds_left(self) -> float | None:
        """The time limit to arm the guest with as it is handed this command: what is left of
        `deadline` (none: stopped at once), else `timeout_s`. One deadline for the guest and
        its tool calls: a call cut short at it ends the cell as its time limit, never as the
        tool's own timeout, which the code could catch."""
        if self.deadline is None:
            return self.timeout_s
        return max(0.0, self.deadline - time.monotonic())

    @property
    def ctx(self) -> ContextT:
        """The context, for commands that have one (a cell's: the caller made it with one)."""
        assert self.context is not None
        return self.context

    def add_raw(self, stream: str, data: bytes) -> None:
        if self.on_raw is not None:
            self.on_raw(stream, data)
        if self._raw_size < _RAW_OUTPUT_LIMIT:
            chunk = data[: _RAW_OUTPUT_LIMIT - self._raw_size]
            self.raw.setdefault(stream, []).append(chunk)
            self._raw_size += len(chunk)

    def raw_text(self, stream: str) -> str:
        return b"".join(self.raw.get(stream, ())).decode("utf-8", "replace")
