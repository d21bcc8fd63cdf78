"""A cell leaves no reference cycles behind: what it made is freed when it ends, not kept
for the garbage collector. Cycles made each cell (the cell and its calls holding each
other, a cancelled output task, callbacks held by the futures they refer to) made a
framework's runs collect several times as often, each collection walking the whole heap."""

from __future__ import annotations

import asyncio
import gc

from tooliscode import Session, Tool


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


PER_CELL = {"Cell", "CellCalls", "Command", "OutputStream", "Waiter", "Parking", "Steer"}
"""What each cell makes (other tests in this process may leave garbage of their own)."""


def _ours(garbage: list) -> list[str]:
    return sorted({type(o).__qualname__ for o in garbage
                   if (type(o).__module__ or "").startswith("tooliscode")
                   and type(o).__qualname__ in PER_CELL})


def test_cells_run_and_awaited_leave_no_cycles() -> None:
    with Session([Tool.from_function(add)]) as s:
        async def cells() -> None:
            for _ in range(3):
                r = await s.arun("print(add(a=1, b=2))", on_output=lambda stream, text: None)
                assert r.ok and r.stdout == "3\n", r.error

        assert s.run("print(add(a=1, b=2))", on_output=lambda stream, text: None).ok
        asyncio.run(cells())  # the first: what starting a loop's tasks leaves
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for _ in range(3):
                assert s.run("print(add(a=1, b=2))", on_output=lambda stream, text: None).ok
            asyncio.run(cells())
            gc.collect()
            assert _ours(gc.garbage) == []
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
