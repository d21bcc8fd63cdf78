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
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..engine import Cancel, CellLog, CellResult, Decision, OnOutput, Session
from ._background import acquire

__all__ = ["Blocking", "Hold", "ResumeCell", "RunCell", "Step", "Steps", "adrive", "drive"]

T = TypeVar("T")


class Step(Protocol):
    """One thing to do, done blocking (`run`) or on an event loop (`arun`). The steps below
    are the code tool's own; a front end's work (LangGraph's resume) adds others."""

    def run(self) -> Any: ...

    async def arun(self) -> Any: ...


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
    """Run `code` in `session`: async tools then run on the caller's loop. `call_id`, `log`,
    `decisions`, `on_output` and `cancel` as for `Session.run`."""

    session: Session
    code: str
    call_id: str | None = None
    log: CellLog | None = None
    decisions: Mapping[str, Decision] | None = None
    on_output: OnOutput | None = None
    cancel: Cancel | None = None

    def run(self) -> CellResult:
        if self.call_id is None and self.log is None and self.on_output is None \
                and self.cancel is None:
            return self.session.run(self.code)
        return self.session.run(self.code, call_id=self.call_id, log=self.log,
                                decisions=self.decisions, on_output=self.on_output,
                                cancel=self.cancel)

    async def arun(self) -> CellResult:
        if self.call_id is None and self.log is None and self.on_output is None \
                and self.cancel is None:
            return await self.session.arun(self.code)
        return await self.session.arun(self.code, call_id=self.call_id, log=self.log,
                                       decisions=self.decisions, on_output=self.on_output,
                                       cancel=self.cancel)


@dataclass(frozen=True)
class ResumeCell:
    """Continue the cell paused in `session` with `decisions`."""

    session: Session
    decisions: Mapping[str, Decision]

    def run(self) -> CellResult:
        return self.session.resume(self.decisions)

    async def arun(self) -> CellResult:
        return await self.session.aresume(self.decisions)


Steps = Generator[Step, Any, T]


class _Driver:
    """A generator of steps, and what its last step gave (a value, or an exception)."""

    def __init__(self, steps: Steps[Any]):
        self.steps = steps
        self.value: Any = None
        self.error: BaseException | None = None

    def next(self) -> Step | None:
        """Hand over the last outcome; the next step, or None (and `value` the result) when
        the generator is done."""
        try:
            if self.error is None:
                return self.steps.send(self.value)
            return self.steps.throw(self.error)
        except StopIteration as stop:
            self.value, self.error = stop.value, None
            return None


def drive(steps: Steps[T]) -> T:
    """Carry out `steps` on this thread."""
    driver = _Driver(steps)
    while (step := driver.next()) is not None:
        try:
            driver.value, driver.error = step.run(), None
        except BaseException as exc:  # noqa: BLE001 - the generator decides
            driver.value, driver.error = None, exc
    return driver.value


async def adrive(steps: Steps[T]) -> T:
    """Carry out `steps` on the running event loop."""
    driver = _Driver(steps)
    while (step := driver.next()) is not None:
        try:
            driver.value, driver.error = await step.arun(), None
        except BaseException as exc:  # noqa: BLE001 - the generator decides
            driver.value, driver.error = None, exc
    return driver.value
