"""Running code without writing it twice: the work is a generator of steps, and two tiny
drivers carry the steps out, one blocking and one on an event loop.

The generator says *what* to do (take this lock, call this blocking function, run this cell)
and receives the outcome; only the drivers know how to wait. An exception a step raised is
thrown back into the generator, so its `try`/`finally` blocks release what it holds, in
both worlds and on cancellation too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from ..engine.result import CellResult
from ..engine.session import Session
from .background import acquire

__all__ = ["Blocking", "Hold", "RunCell", "Step", "Steps", "adrive", "drive"]

T = TypeVar("T")


@dataclass(frozen=True)
class Hold:
    """Take `lock` (waiting for it)."""

    lock: threading.Lock

    def run(self) -> None:
        self.lock.acquire()

    async def arun(self) -> None:
        await acquire(self.lock)


@dataclass(frozen=True)
class Blocking:
    """Call `fn(*args)`, which blocks (starting an interpreter, say): on a thread when async."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()

    def run(self) -> Any:
        return self.fn(*self.args)

    async def arun(self) -> Any:
        return await asyncio.to_thread(self.fn, *self.args)


@dataclass(frozen=True)
class RunCell:
    """Run `code` in `session`: async tools then run on the caller's loop."""

    session: Session
    code: str

    def run(self) -> CellResult:
        return self.session.run(self.code)

    async def arun(self) -> CellResult:
        return await self.session.arun(self.code)


Step = Hold | Blocking | RunCell
Steps = Generator[Step, Any, T]


def _advance(steps: Steps[T], outcome: Any, error: BaseException | None) -> tuple[bool, Any]:
    """(True, the result) when the generator is done, else (False, its next step)."""
    try:
        return False, steps.send(outcome) if error is None else steps.throw(error)
    except StopIteration as stop:
        return True, stop.value


def drive(steps: Steps[T]) -> T:
    """Carry out `steps` on this thread."""
    outcome, error = None, None
    while True:
        done, step = _advance(steps, outcome, error)
        if done:
            return step
        try:
            outcome, error = step.run(), None
        except BaseException as exc:  # noqa: BLE001 - the generator decides
            outcome, error = None, exc


async def adrive(steps: Steps[T]) -> T:
    """Carry out `steps` on the running event loop."""
    outcome, error = None, None
    while True:
        done, step = _advance(steps, outcome, error)
        if done:
            return step
        try:
            outcome, error = await step.arun(), None
        except BaseException as exc:  # noqa: BLE001 - the generator decides
            outcome, error = None, exc
