"""Tool calls awaited in guest code, one after another or gathered: values, records, errors,
and the concurrency gathered calls keep, on both routes (`run` and `arun`).

An awaited call that nothing else could overlap is answered in one crossing (guest/aio.py);
one the loop could overlap with other work starts on the host and is waited for.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict

import pytest
from tooliscode import Limits, Session, ToolError

MEETING_S = 60
"""How long a meeting waits for its last member: calls run one after another never meet."""


def echo(x: int) -> dict:
    """Returns its argument and its square."""
    return {"x": x, "sq": x * x}


async def aecho(x: int) -> dict:
    """Returns its argument and its square (async)."""
    await asyncio.sleep(0)
    return {"x": x, "sq": x * x}


def whoami() -> str:
    """The name of the host thread running this tool."""
    return threading.current_thread().name


def refuse(why: str) -> str:
    """Always fails with `why`."""
    raise ToolError(f"refused: {why}")


async def abreak(why: str) -> str:
    """Always fails (async) with a ValueError."""
    raise ValueError(why)


def slow(seconds: float) -> float:
    """Sleeps on the host."""
    time.sleep(seconds)
    return seconds


class _Meetings:
    """Tools that return only once `size` calls of one group are running at the same time:
    a test of concurrency that no machine speed passes or fails by accident."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._arrived: dict[str, int] = defaultdict(int)
        self._everyone: dict[str, threading.Event] = defaultdict(threading.Event)

    def _arrive(self, group: str, size: int) -> threading.Event:
        with self._lock:
            self._arrived[group] += 1
            if self._arrived[group] >= size:
                self._everyone[group].set()
            return self._everyone[group]

    def tools(self) -> list:
        def meet(group: str, size: int) -> str:
            """Waits on a host thread for the rest of its group."""
            if not self._arrive(group, size).wait(MEETING_S):
                raise ToolError(f"only {self._arrived[group]} of {size} calls ran at once")
            return group

        async def ameet(group: str, size: int) -> str:
            """Waits on the event loop for the rest of its group."""
            everyone = self._arrive(group, size)
            deadline = time.monotonic() + MEETING_S
            while not everyone.is_set():
                if time.monotonic() > deadline:
                    raise ToolError(f"only {self._arrived[group]} of {size} calls ran at once")
                await asyncio.sleep(0.005)
            return group

        return [meet, ameet]


@pytest.fixture(scope="module")
def session():
    tools = [echo, aecho, whoami, refuse, abreak, slow, *_Meetings().tools()]
    with Session(tools, limits=Limits(timeout_s=MEETING_S + 30)) as s:
        yield s


@pytest.fixture(params=["run", "arun"])
def run(request, session):
    """Runs a cell through `Session.run` or `await Session.arun`."""
    async def through(code: str):
        if request.param == "run":
            return session.run(code)
        return await session.arun(code)
    return through


def _expected(n: int) -> list[dict]:
    return [echo(i) for i in range(n)]


async def _value(run, code: str):
    """The value of the cell `code`, which must succeed."""
    r = await run(code)
    assert r.ok, r.error
    return eval(r.value)


async def test_awaited_one_after_another(run):
    r = await run("out = []\nfor i in range(12):\n    out.append(await echo(i))\n"
                  "    out.append(await aecho(x=i))\nout")
    assert r.ok, r.error
    assert eval(r.value) == [v for v in _expected(12) for _ in range(2)]
    assert [c.name for c in r.tool_calls] == ["echo", "aecho"] * 12
    assert all(c.ok for c in r.tool_calls)
    assert [c.arguments for c in r.tool_calls] == [{"x": i} for i in range(12) for _ in "ab"]


async def test_awaited_in_expressions_comprehensions_and_asyncio_run(run):
    assert await _value(run, "[await echo(i) for i in range(5)] + "
                             "[(await aecho(i))['x'] for i in range(3)]") == \
        _expected(5) + [0, 1, 2]
    assert await _value(run, "import asyncio\nasync def main():\n    a = await echo(2)\n"
                             "    return (await aecho(a['sq']))['sq']\nasyncio.run(main())") == 16


async def test_gathered(run):
    r = await run("import asyncio\nawait asyncio.gather(*[echo(i) for i in range(10)], "
                  "*[aecho(i) for i in range(10)])")
    assert r.ok, r.error
    assert eval(r.value) == _expected(10) * 2
    assert sorted(c.name for c in r.tool_calls) == ["aecho"] * 10 + ["echo"] * 10


async def test_gathered_coroutines_that_await_calls(run):
    r = await run("import asyncio\nasync def work(i):\n    a = await echo(i)\n"
                  "    return (await aecho(a['sq']))['x']\n"
                  "await asyncio.gather(*(work(i) for i in range(6)))")
    assert r.ok and eval(r.value) == [i * i for i in range(6)], r.error
    assert len(r.tool_calls) == 12


async def test_an_awaited_sync_tool_needs_no_thread_but_gathered_ones_get_theirs(run):
    alone, gathered = await _value(
        run, "import asyncio\n(await whoami(), await asyncio.gather(whoami(), whoami()))")
    assert alone == "tooliscode-guest"
    assert all(name.startswith("tooliscode-tool") for name in gathered)
    # however the awaited value is used next: kept, returned, indexed, in a comprehension
    shapes = ("x = await whoami()\n    return x", "return await whoami()",
              "return (await whoami())[:99]", "return [await whoami() for _ in 'ab'][1]",
              "return {'t': await whoami()}['t']")
    threads = await _value(run, "".join(f"async def f{i}():\n    {body}\n"
                                        for i, body in enumerate(shapes))
                           + f"[{', '.join(f'await f{i}()' for i in range(len(shapes)))}]")
    assert threads == ["tooliscode-guest"] * len(shapes)


async def test_errors_of_awaited_calls_are_tool_errors(run):
    r = await run("out = []\nfor why in ['a', 'b']:\n    try:\n        await refuse(why)\n"
                  "    except ToolError as e:\n        out.append((str(e), e.tool))\n"
                  "    try:\n        await abreak(why)\n    except ToolError as e:\n"
                  "        out.append((str(e), e.tool))\n"
                  "    out.append((await echo(1))['x'])\nout")
    assert r.ok, r.error
    assert eval(r.value) == [("refused: a", "refuse"), ("ValueError: a", "abreak"), 1,
                             ("refused: b", "refuse"), ("ValueError: b", "abreak"), 1]
    assert [c.ok for c in r.tool_calls] == [False, False, True] * 2
    r = await run("await refuse('uncaught')")
    assert not r.ok and r.error_type == "ToolError" and "refused: uncaught" in r.error
    assert "await refuse('uncaught')" in r.error  # the line that failed
    assert await _value(run, "try:\n    await echo(y=1)\nexcept ToolError as e:\n"
                             "    out = (type(e).__name__, isinstance(e, TypeError))\nout") \
        == ("ToolArgumentError", True)


async def test_errors_of_gathered_calls_are_tool_errors(run):
    assert await _value(run, "import asyncio\nres = await asyncio.gather(echo(1), refuse('g'), "
                             "abreak('h'), return_exceptions=True)\n"
                             "[type(x).__name__ + ':' + str(x) for x in res[1:]]") \
        == ["ToolError:refused: g", "ToolError:ValueError: h"]
    r = await run("import asyncio\nawait asyncio.gather(echo(1), refuse('g'))")
    assert not r.ok and r.error_type == "ToolError" and "refused: g" in r.error


async def test_coroutines_awaiting_calls_still_overlap(run):
    assert await _value(run, "import asyncio\nasync def work(i, tool):\n"
                             "    return await tool(group='plain', size=6)\nawait asyncio.gather("
                             "*(work(i, meet if i % 2 else ameet) for i in range(6)))") \
        == ["plain"] * 6


async def test_eager_tasks_awaiting_calls_still_overlap(run):
    assert await _value(run, "import asyncio\nasync def work():\n"
                             "    return await meet(group='eager', size=4)\n"
                             "loop = asyncio.get_running_loop()\n"
                             "loop.set_task_factory(asyncio.eager_task_factory)\ntry:\n"
                             "    res = await asyncio.gather(*(work() for _ in range(4)))\n"
                             "finally:\n    loop.set_task_factory(None)\nres") == ["eager"] * 4


async def test_an_awaited_call_under_a_guest_timeout_is_cut_off(run):
    assert await _value(run, "import asyncio\ntry:\n    async with asyncio.timeout(0.2):\n"
                             "        await slow(5)\n    out = 'not cut off'\n"
                             "except TimeoutError:\n    out = 'cut off'\nout") == "cut off"
    assert await _value(run, "(await echo(3))['sq']") == 9  # the session goes on
