"""Faults on the host side: tools that fail, hang, or return too much; cancelled cells."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from tooliscode import Limits, Session, Tool, ToolError


def fails() -> None:
    """Raises a plain exception."""
    raise KeyError("missing-key")


def refuses() -> None:
    """Raises a message meant for the model."""
    raise ToolError("customer c9 is archived; use list_archived()")


def hangs_forever() -> str:
    """Never returns in time."""
    time.sleep(30)
    return "late"


async def ahangs() -> str:
    await asyncio.sleep(30)
    return "late"


def huge() -> list:
    """About 60 MB of JSON."""
    return ["x" * 1000] * 60_000


def not_json() -> object:
    return {"lock": threading.Lock(), "set": {1, 2}, "nested": {(1, 2): object()}}


def test_a_failing_tool_is_a_tool_error_with_its_message():
    with Session([fails, refuses]) as s:
        r = s.run("fails()")
        assert r.error_type == "ToolError" and "KeyError" in r.error and "missing-key" in r.error
        r = s.run("refuses()")
        assert "customer c9 is archived; use list_archived()" in r.error
        assert "Traceback" in r.error and "refuses.py" not in r.error


def test_a_hanging_sync_tool_gives_its_timeout_error():
    tool = Tool.from_function(hangs_forever, timeout_s=0.5)
    with Session([tool]) as s:
        s.run("keep = 1")
        r = s.run("hangs_forever()")
        assert "timed out" in r.error  # at its 0.5 s, not when the tool's 30 s are up
        assert s.run("keep").value == "1"


def test_a_hanging_sync_tool_without_timeout_is_cut_at_the_cell_limit():
    with Session([hangs_forever], limits=Limits(timeout_s=1)) as s:
        s.run("keep = 1")
        r = s.run("hangs_forever()")
        assert not r.ok and r.rolled_back and r.error_type == "TimeoutError"
        assert "1 tool call (hangs_forever) still running" in r.error, r.error
        assert s.run("keep + 1").value == "2"


def test_a_hanging_async_tool_is_cut_at_the_cell_limit_without_restart():
    with Session([ahangs], limits=Limits(timeout_s=1)) as s:
        s.run("keep = 1")
        r = s.run("try:\n    ahangs()\nexcept ToolError as e:\n    print(e)")
        assert "timed out" in r.stdout or r.rolled_back  # either way, not the tool's 30 s


def test_a_huge_result_crosses_or_fails_cleanly():
    with Session([huge], limits=Limits(memory_bytes=256 * 1024 * 1024)) as s:
        r = s.run("rows = huge()\nlen(rows)")
        assert (r.ok and r.value == "60000") or r.error_type == "MemoryError", r.error
        assert s.run("1").ok


def test_a_huge_result_larger_than_guest_memory_fails_cleanly():
    def giant() -> str:
        return "y" * 200_000_000

    with Session([giant], limits=Limits(memory_bytes=64 * 1024 * 1024)) as s:
        s.run("keep = 5")
        r = s.run("g = giant()")
        assert not r.ok
        assert s.run("keep").value == "5"


def test_results_that_are_not_json_are_converted():
    with Session([not_json]) as s:
        r = s.run("r = not_json()\n(r['set'], sorted(r['nested']), r['lock'][:6])")
        assert r.ok, r.error
        assert r.value.startswith("([1, 2], ['(1, 2)'], '<")


def test_trap_during_a_tool_call_is_recovered():
    entered = threading.Event()

    def slow_tool() -> str:
        entered.set()
        time.sleep(1.5)
        return "done"

    with Session([slow_tool], limits=Limits(timeout_s=1)) as s:
        s.run("keep = 1")
        r = s.run("slow_tool()\nwhile True:\n    pass")
        assert entered.is_set()
        assert not r.ok and r.rolled_back and not r.lost_names
        assert s.run("2 * keep").value == "2"


async def test_cancelling_a_computing_cell_stops_it():
    async with Session([]) as s:
        await s.arun("keep = 1")
        task = asyncio.create_task(s.arun("while True:\n    pass"))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        r = await s.arun("keep + 1")
        assert r.ok and r.value == "2" and not r.restarted, r.error
        assert any("cancelled" in n and "back to its state" in n for n in r.notices), r.notices


async def test_cancelling_a_cell_waiting_on_a_tool_stops_the_tool():
    stopped = asyncio.Event()

    async def waits() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "late"

    async with Session([waits]) as s:
        task = asyncio.create_task(s.arun("waits()"))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(stopped.wait(), 5)
        assert (await s.arun("3")).value == "3"


async def test_cancelling_while_sleeping_in_the_guest():
    async with Session([]) as s:
        task = asyncio.create_task(s.arun("import time\ntime.sleep(60)"))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 30)  # at once; the guest's sleep is 60 s
        r = await s.arun("4")
        assert r.value == "4"
