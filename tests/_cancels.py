"""What the tests of each front end's cancel and time limit share: a cell that runs until it
is stopped, waiting until it runs, and counting what a stop might leave behind."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from tooliscode.codetool import CodeTool
from tooliscode.engine import Session
from tooliscode.engine._live import _pools, live
from tooliscode.engine._worker import Worker
from tooliscode.engine._worker import _running as running_workers

SET = "x = 41"
LOOP = "x = 42\nwhile True:\n    pass"
"""Changes the state, then runs until it is stopped."""
READ = "print(x)"
CAME_BACK = "The last cell was cancelled (the task running it was). The session is back to its " \
    "state before that cell"
"""The notice of the cell after one whose task was cancelled."""


def running(code_tool: CodeTool | None = None) -> Session | None:
    """The session of `code_tool`'s conversations (or, without one, of this process) whose
    cell is running now, if one is (taken by its guest: one cancelled before that never runs)."""
    if code_tool is None:
        sessions = list(live)
    else:
        sandboxes = [code_tool.get(key) for key in code_tool.keys]
        sessions = [s.session for s in sandboxes if s is not None and s.session is not None]
    return next((s for s in sessions if s.running), None)


async def until_running(code_tool: CodeTool) -> Session:
    """Wait until a cell of `code_tool` runs (a hang guard, not a timing assert)."""
    deadline = time.monotonic() + 60
    while (session := running(code_tool)) is None:
        assert time.monotonic() < deadline, "no cell started"
        await asyncio.sleep(0.005)
    return session


def until(condition: Callable[[], object], what: str) -> None:
    """Wait until `condition()` holds (a hang guard, not a timing assert)."""
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.005)


async def cancel_when_running(code_tool: CodeTool, run: object) -> Session:
    """Start `run` (a coroutine), cancel its task once its cell runs, and return that cell's
    session, whose cell must have stopped by then."""
    task = asyncio.ensure_future(run)  # type: ignore[arg-type]
    session = await until_running(code_tool)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert session._running is None, "the cell runs on after its run was cancelled"
    return session


def leftovers() -> tuple[int, int]:
    """Guests whose threads have not ended (but those a pool keeps for sessions to come), and
    the threads that watch stop signals."""
    watching = sum(t.name == "tooliscode-stop-signals" for t in threading.enumerate())
    return len(set(running_workers) - pooled()), watching


def pooled() -> set[Worker]:
    """The guests the process's pools keep for sessions to come."""
    return {w for pool in list(_pools.values()) for w in pool.idle()}


def nothing_left(before: tuple[int, int]) -> None:
    """Every guest a stop gave up has ended (each ends on its own thread, at once), and no
    stop signal is watched any more: no more than `before`."""
    deadline = time.monotonic() + 20
    while any(now > then for now, then in zip(leftovers(), before)):
        assert time.monotonic() < deadline, f"left behind: {leftovers()} > {before}"
        time.sleep(0.02)
