"""Async tools called from guest code: one serving task per cell on the caller's loop
(core/engine/_handoff.py). Timeouts, errors, and the loop's other tasks; cancellation is in
tests/security/test_faults.py."""

from __future__ import annotations

import asyncio

from tooliscode import Limits, Session


async def test_a_timed_out_call_does_not_spoil_the_next_ones():
    async def nap(seconds: float) -> float:
        await asyncio.sleep(seconds)
        return seconds

    async with Session([nap], limits=Limits(tool_timeout_s=0.3)) as s:
        r = await s.arun("try:\n    nap(5)\nexcept ToolError as e:\n    err = str(e)\n"
                         "[err, nap(0), nap(0.01), nap(0)]")
        assert r.ok, r.error
        err, *rest = eval(r.value)
        assert "timed out" in err and rest == [0, 0.01, 0]
        assert [c.ok for c in r.tool_calls] == [False, True, True, True]


async def test_errors_reach_the_guest_and_the_records():
    async def fail(why: str) -> str:
        raise ValueError(why)

    async with Session([fail]) as s:
        r = await s.arun("try:\n    fail('no')\nexcept ToolError as e:\n    print(e)")
        assert r.ok and "ValueError: no" in r.stdout
        assert r.tool_calls[0].error == "ValueError: no"


async def test_the_loops_other_tasks_run_during_a_loop_of_calls():
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async def seen() -> int:
        return ticks

    ticker = asyncio.create_task(tick())
    try:
        async with Session([seen], limits=Limits(tool_calls=None)) as s:
            r = await s.arun("first = seen()\nfor i in range(3000):\n    last = seen()\n"
                             "last - first")
            assert r.ok, r.error
            assert int(r.value) > 0
    finally:
        ticker.cancel()


async def test_calls_taken_on_the_parked_loop_see_what_the_loop_thread_would():
    """Most calls of a loop of calls take their first step on the guest's thread while the
    loop is parked; a call that suspends finishes on the loop's thread. Either way the tool
    sees the caller's loop, one current task for the whole call, and its own context."""
    import contextvars

    seen = contextvars.ContextVar("seen", default=0)
    loop = asyncio.get_running_loop()

    async def probe(i: int) -> list:
        task = asyncio.current_task()
        token = seen.set(i)
        if i % 3 == 0:
            await asyncio.sleep(0.001 if i % 2 else 0)  # suspends: the rest on the loop
        same = asyncio.current_task() is task and seen.get() == i
        seen.reset(token)
        return [same, asyncio.get_running_loop() is loop]

    def plain(i: int) -> int:
        """A sync tool, between the async ones, that runs an event loop of its own."""
        return asyncio.run(asyncio.sleep(0, result=i))

    async with Session([probe, plain], limits=Limits(tool_calls=None)) as s:
        r = await s.arun("bad = []\nfor i in range(300):\n    if probe(i) != [True, True]:\n"
                         "        bad.append(i)\n    plain(i)\nbad")
        assert r.ok, r.error
        assert r.value == "[]"


async def test_sync_tools_never_see_the_loop_that_async_calls_borrowed():
    async def twice(i: int) -> int:
        return 2 * i

    def running() -> bool:
        """Whether this (the guest's) thread has a running event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return True

    async with Session([twice, running], limits=Limits(tool_calls=None)) as s:
        r = await s.arun("[twice(i) for i in range(200)][-1], running()")
        assert r.ok and r.value == "(398, False)", r.error
        r = await s.arun("running()")
        assert r.ok and r.value == "False", r.error


async def test_a_borrowed_step_that_blocks_past_its_timeout_times_out():
    import time

    from tooliscode import Tool

    async def quick() -> int:
        return 1

    async def hog(seconds: float) -> float:
        time.sleep(seconds)  # blocks without awaiting: a tool's mistake, timed all the same
        return seconds

    tools = [Tool.from_function(quick, timeout_s=10), hog]  # quick never races the hog
    async with Session(tools, limits=Limits(tool_timeout_s=0.2)) as s:
        r = await s.arun("quick()\nquick()\ntry:\n    hog(0.4)\nexcept ToolError as e:\n"
                         "    err = str(e)\n[err, quick()]")
        assert r.ok, r.error
        err, after = eval(r.value)
        assert "timed out" in err and after == 1
