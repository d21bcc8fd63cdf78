"""An asyncio event loop for a guest that has no sockets.

The standard loop needs a self-pipe (`socketpair`), which WASI lacks. This loop has no
selector: when it must wait, it either waits in the host for tool calls it started, or
sleeps. Tool calls started from coroutines run concurrently on the host, so
`asyncio.gather(tool_a(), tool_b())` takes as long as the slowest call.

A call awaited where it is made (`await tool()`) while nothing else could run meanwhile is
answered in one blocking crossing instead (see `nothing_else_runs`): a start, a turn of the
loop and a wait for it would give the same value in the same order, for many times the cost.
"""

from __future__ import annotations

import asyncio
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

from . import channel

__all__ = ["HostLoop", "answered", "install", "nothing_else_runs", "start_call"]

_pending: dict[int, asyncio.Future] = {}
"""Futures of host calls started and not yet answered, by call id."""


class _HostSelector:
    """Stands where a selector would: `select(timeout)` returns ready callbacks."""

    def select(self, timeout: float | None) -> list[Callable[[], None]]:
        if _pending:
            reply = channel.request({"op": "wait", "ids": list(_pending), "timeout": timeout})
            return [_resolver(item) for item in reply.get("done", ())]
        if timeout is None:
            raise RuntimeError(
                "deadlock: the code awaits something that nothing will ever complete")
        if timeout > 0:
            time.sleep(timeout)
        return []

    def close(self) -> None:
        pass


def _resolver(item: dict[str, Any]) -> Callable[[], None]:
    def resolve() -> None:
        fut = _pending.pop(item["id"], None)
        if fut is None or fut.done():
            return
        if item.get("ok"):
            fut.set_result(item.get("value"))
        else:
            from .tools import tool_error

            fut.set_exception(tool_error(item))

    return resolve


class HostLoop(asyncio.BaseEventLoop):
    """A selector-less event loop whose waiting happens in the host."""

    def __init__(self) -> None:
        super().__init__()
        self._selector = _HostSelector()
        self.creating = 0
        """`create_task` calls under way: an eager task's first step runs inside one."""

    def _process_events(self, event_list: list[Callable[[], None]]) -> None:
        for resolve in event_list:
            resolve()

    def _write_to_self(self) -> None:  # no other threads can wake this loop
        pass

    def create_task(self, coro: Any, **kwargs: Any) -> asyncio.Task:
        """Also takes a started tool call (a future), which models pass like a coroutine."""
        if isinstance(coro, asyncio.Future):
            coro = _awaited(coro)
        self.creating += 1
        try:
            return super().create_task(coro, **kwargs)
        finally:
            self.creating -= 1

    def close(self) -> None:
        cancel_all()
        super().close()


async def _awaited(future: asyncio.Future) -> Any:
    return await future


def nothing_else_runs(loop: Any) -> bool:
    """Would `loop`, were the running step to await a host call now, do nothing but wait for
    that call? Then the caller may just as well wait in the host itself.

    Nothing is ready to run, no timer is set, no host call is pending, and the running step
    is not an eager task's first one, taken inside `create_task` in another task's step
    (which goes on only once this one suspends)."""
    return (not _pending and type(loop) is HostLoop and not loop._ready
            and not loop._scheduled and not loop.creating)


async def answered(value: Any) -> Any:
    """What an awaited call answered at once returns: its `await` gives the value at once,
    without a turn of the loop (cheaper to make and await than a finished future)."""
    return value


def start_call(name: str, args: dict[str, Any], future: asyncio.Future) -> None:
    """Start a host call for `future` without waiting for it."""
    reply = channel.request({"op": "start", "name": name, "args": args})
    if not reply.get("ok"):
        from .tools import tool_error

        future.set_exception(tool_error(reply))
        return
    _pending[reply["id"]] = future


def cancel_all() -> None:
    """Tell the host to drop calls nobody will wait for (at a cell's end)."""
    if _pending:
        ids = list(_pending)
        _pending.clear()
        channel.request({"op": "cancel", "ids": ids})


class _Policy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return HostLoop()


def install() -> None:
    """Make `asyncio.run`, `asyncio.new_event_loop` and friends use `HostLoop`."""
    asyncio.set_event_loop_policy(_Policy())
