"""Limits: time, memory, output; recovery after a trap."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

from tooliscode import Limits, Session, Tool
from tooliscode.engine._running import WATCHDOG_GRACE_S


def test_runaway_loop_is_stopped_and_the_session_recovers(short_session):
    s = short_session
    assert s.run("keep = 1\ndef helper():\n    return 2\nopen('kept.txt', 'w').write('x')").ok
    start = time.perf_counter()
    r = s.run("while True:\n    pass")
    took = time.perf_counter() - start
    assert not r.ok and r.rolled_back and r.error_type == "TimeoutError"
    assert took > 1.4  # not before its time; how long after depends on the machine
    # but by its own deadline, not by the host's watchdog, which fires 5 s after it
    assert took < 1.5 + WATCHDOG_GRACE_S, took
    assert not r.lost_names and "back to its state before this cell" in r.error, r.error
    after = s.run("open('kept.txt').read()")
    assert after.ok and after.value == "'x'"  # the folder survived
    assert s.run("keep + helper()").value == "3"  # and so did the variables
    assert s.run("get_order(order_id=2)['id']").value == "2"  # tools are back


def test_timeout_counts_time_spent_waiting_in_tools(short_session):
    # As the session's first cell, then as one that starts a new turn of a guest that waited
    # for it (its turn's source carries the cell): the data runtime once disarmed that one.
    for pause in (0.0, 0.2):
        time.sleep(pause)
        r = short_session.run("import time\nfor i in range(10):\n    slow(0.3)")
        assert not r.ok and r.rolled_back and r.error_type == "TimeoutError", (pause, r)
        assert "tool calls (slow x" in r.error, r.error


def test_a_tool_call_cut_short_by_the_cells_deadline_ends_the_cell_as_its_time_limit(tools):
    # The call ends at the cell's deadline: that is the cell's time limit, not the tool's own
    # timeout (a ToolError the code could catch, with nothing rolled back). Async tools are
    # bounded on the host; a sync tool with a timeout of its own runs on another thread.
    with Session(tools, limits=Limits(timeout_s=1.0, tool_timeout_s=30)) as s:
        for call in ("aslow(0.3)", "slow(0.3)", "aslow(0.3)"):
            r = s.run(f"for i in range(8):\n    {call}")
            assert not r.ok and r.rolled_back and r.error_type == "TimeoutError", (call, r)


def test_memory_limit_raises_memory_error_and_keeps_state():
    with Session([], limits=Limits(memory_bytes=64 * 1024 * 1024)) as s:
        assert s.run("keep = 'still here'").ok
        r = s.run("blob = bytearray(200 * 1024 * 1024)")
        assert not r.ok and r.error_type == "MemoryError" and not r.restarted
        r = s.run("chunks = []\nwhile True:\n    chunks.append(bytearray(1024 * 1024))")
        assert not r.ok and r.error_type == "MemoryError"
        assert s.run("del chunks\nkeep").value == "'still here'"


def test_deep_c_recursion_traps_and_recovers():
    with Session([], limits=Limits(timeout_s=20)) as s:
        s.run("marker = 1")
        r = s.run("import sys\nsys.setrecursionlimit(10**7)\n"
                  "x = []\nfor _ in range(200_000):\n    x = [x]\nrepr(x)[:10]")
        # CPython guards its C stack with RecursionError; a guest that traps instead must
        # come back: either way the session goes on.
        assert not r.ok and r.error_type in ("RecursionError", "MemoryError")
        assert s.run("1 + 1").value == "2"


def test_output_is_cut_with_a_notice_and_saved_in_the_folder():
    with Session([], limits=Limits(output_chars=1_000)) as s:
        r = s.run("for i in range(5000):\n    print(f'line {i}')")
        assert r.ok
        assert len(r.stdout) < 1_200
        assert r.stdout.startswith("line 0\n") and r.stdout.rstrip().endswith("line 4999")
        assert "characters cut" in r.stdout
        assert r.truncated and "/session/.tooliscode/output/" in r.truncated
        saved = r.truncated.split(" is in ")[1].split(";")[0]
        full = s.read_file(saved).decode()
        assert full.count("\n") == 5000 and "line 2500" in full
        check = s.run(f"sum(1 for _ in open('{saved}'))")
        assert check.value == "5000"


def test_huge_single_print_is_bounded():
    with Session([], limits=Limits(output_chars=2_000, spill_bytes=100_000)) as s:
        r = s.run("print('z' * 5_000_000)")
        assert r.ok and len(r.stdout) < 2_500
        assert "5,000,001 characters" in r.truncated


def test_truncated_is_set_only_by_cut_output():
    """Not by other notices that happen to contain "cut" (a lost name `cutoff`)."""
    started = threading.Event()

    async def main() -> None:
        with Session([Tool(name="started", function=started.set)]) as s:
            assert (await s.arun("cutoff = 1")).ok
            task = asyncio.ensure_future(s.arun("started()\nwhile True:\n    pass"))
            assert await asyncio.to_thread(started.wait, 60)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            r = await s.arun("print(cutoff)")
            assert r.ok and r.stdout == "1\n" and not r.restarted, r.error
            assert "cancelled" in r.notices[0] and "back to its state" in r.notices[0]
            assert r.truncated is None

    asyncio.run(main())


def test_no_output_limit_keeps_everything():
    with Session([], limits=Limits(output_chars=None)) as s:
        r = s.run("print('q' * 100_000)")
        assert len(r.stdout) == 100_001 and r.truncated is None


def test_limits_are_validated():
    import pytest

    with pytest.raises(ValueError):
        Limits(memory_bytes=1024)
    with pytest.raises(ValueError):
        Limits(timeout_s=0)


BOMBS = ["d = {}\ni = 0\nwhile True:\n    d[i] = str(i) * 100\n    i += 1",
         "chunks = []\nwhile True:\n    chunks.append(bytearray(4 * 1024 * 1024))",
         "l = [0] * 10**9"]


def test_memory_can_be_filled_and_freed_again_and_again():
    """Running out again and again must never leave the session unable to free what it holds
    (the extra room after the first MemoryError is given only once)."""
    with Session([], limits=Limits(memory_bytes=128 * 2**20, timeout_s=120)) as s:
        for bomb in [*BOMBS, *BOMBS]:
            r = s.run(bomb)
            assert r.error_type == "MemoryError", r.error
            freed = s.run("for _n in ('d', 'chunks', 'l'):\n    globals().pop(_n, None)\nx = 1")
            assert freed.ok, freed.error


_UNINTERRUPTED = """
from tooliscode import Limits, Session

def ping(n: int) -> int:
    \"\"\"Echo n.\"\"\"
    return n

class Counting:
    def __init__(self, engine):
        self.engine, self.ticks = engine, 0

    def increment_epoch(self):
        self.ticks += 1
        self.engine.increment_epoch()

with Session([ping], limits=Limits(timeout_s=30)) as s:
    s.run("1")
    ticker = s.runtime.ticker
    ticker._engines = counting = [Counting(engine) for engine in ticker._engines]
    r = s.run("import time\\nt = time.monotonic()\\nwhile time.monotonic() - t < 0.3:\\n"
              "    ping(n=1)\\n    time.sleep(0.002)\\nprint('done')")
    print(r.stdout.strip(), sum(c.ticks for c in counting))
"""


def test_a_cell_within_its_time_is_never_interrupted():
    """The epoch ticks only when a guest is due (its deadline, or a stop): a cell of 0.3 s
    (tool calls, a sleep) under a 30 s limit sees no tick (it saw one every 5 ms, each a
    thread wake-up and a GIL hand-off). In a process of its own: other tests' guests share
    the ticker."""
    done = subprocess.run([sys.executable, "-c", _UNINTERRUPTED], capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.split() == ["done", "0"], done.stderr[-2000:]
