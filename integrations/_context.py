"""Running an inner tool's coroutine in the context variables of the code tool's call.

The sandbox runs a cell's async tool calls in a context of its own (see the engine's
`handoff.py`), so context variables the framework set for its code tool (the current span,
for one) would not reach the inner tools. Making a task in the right context would carry
them, but awaiting it suspends every call, which costs each one a trip through the event
loop; most tool calls finish without ever suspending. `run_in` steps the coroutine itself,
each step inside the context, as a task would, and a call that does not suspend stays on
the fast path.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["run_in"]

T = TypeVar("T")


@types.coroutine
def run_in(context: contextvars.Context, coro: Coroutine[Any, Any, T]
           ) -> Generator[Any, Any, T]:
    """Await `coro` with each of its steps run in `context` (give each call its own copy:
    a context cannot be entered twice at once)."""
    send, throw = coro.send, coro.throw
    step: Any = send
    value: Any = None
    while True:
        try:
            yielded = context.run(step, value)
        except StopIteration as stop:
            return stop.value
        try:
            value = yield yielded
            step = send
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # noqa: BLE001 - thrown in (cancelled): pass it on
            step, value = throw, exc
