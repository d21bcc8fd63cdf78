"""Guest code calling host tools: plain, awaited, gathered; errors, timeouts, conversion."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import threading
import time

import pydantic
import pytest
from tooliscode import Limits, Session, Tool, ToolError


def test_plain_call_returns_the_value(session):
    r = session.run("o = get_order(order_id=3)\no['total']")
    assert r.ok and r.value == "4.5", r.error
    assert r.tool_calls[0].name == "get_order"
    assert r.tool_calls[0].arguments == {"order_id": 3} and r.tool_calls[0].ok


def test_positional_arguments(session):
    r = session.run("get_order(2)['id']")
    assert r.ok and r.value == "2", r.error


def test_sync_tools_run_on_the_session_thread(session):
    assert session.run("whoami()").value == "'tooliscode-guest'"


def test_awaited_call(session):
    r = session.run("x = await get_order(order_id=1)\nx['status']")
    assert r.ok and r.value == "'paid'", r.error


def _meeting(size: int) -> list:
    """Tools that return only once `size` calls of them are running at the same time.

    A test of concurrency that no machine speed passes or fails by accident: calls run one
    after another never meet, and wait until the cell's time is up.
    """
    arrived, lock, everyone = [0], threading.Lock(), threading.Event()

    def arrive() -> None:
        with lock:
            arrived[0] += 1
            if arrived[0] >= size:
                everyone.set()

    def meet(tag: str) -> str:
        """Wait on a host thread for the others."""
        arrive()
        if not everyone.wait(_MEETING_S):
            raise ToolError(f"only {arrived[0]} of {size} calls ever ran at once")
        return tag

    async def ameet(tag: str) -> dict:
        """Wait on the event loop for the others."""
        arrive()
        deadline = time.monotonic() + _MEETING_S
        while not everyone.is_set():
            if time.monotonic() > deadline:
                raise ToolError(f"only {arrived[0]} of {size} calls ever ran at once")
            await asyncio.sleep(0.01)
        return {"tag": tag}

    return [meet, ameet]


_MEETING_S = 60


@pytest.fixture
def meeting_of_six():
    with Session(_meeting(6), limits=Limits(timeout_s=_MEETING_S + 30)) as s:
        yield s


def test_gathered_calls_run_concurrently(meeting_of_six):
    r = meeting_of_six.run("import asyncio\n"
                           "res = await asyncio.gather(meet('a'),\n"
                           "                           *(ameet(str(i)) for i in range(5)))\n"
                           "[res[0]] + [x['tag'] for x in res[1:]]")
    assert r.ok, r.error
    assert r.value == "['a', '0', '1', '2', '3', '4']"
    assert len(r.tool_calls) == 6


def test_asyncio_run_with_gather(session):
    r = session.run("import asyncio\nasync def main():\n"
                    "    return await asyncio.gather(*(aslow(0.2, str(i)) for i in range(4)))\n"
                    "len(asyncio.run(main()))")
    assert r.ok and r.value == "4", r.error


def test_async_tools_run_on_a_private_loop_under_run(session):
    r = session.run("aslow(0, 't')['loop']")
    assert r.ok
    assert r.value is not None


async def test_async_tools_run_on_the_callers_loop_under_arun(tools):
    loop = asyncio.get_running_loop()
    async with Session(tools) as s:
        r = await s.arun("aslow(0.01, 't')['loop']")
        assert r.ok, r.error
        assert int(r.value) == id(loop)
        r = await s.arun("x = await aslow(0.01, 'u')\nx['loop']")
        assert int(r.value) == id(loop)


def test_plain_calls_inside_async_code_give_values(session):
    r = session.run("import asyncio\nasync def f():\n    o = get_order(order_id=1)\n"
                    "    return o['id'] + get_order(order_id=2)['id']\nasyncio.run(f())")
    assert r.ok and r.value == "3", r.error
    r = session.run("x = await get_order(order_id=1)\ny = get_order(order_id=2)\n"
                    "if get_order(order_id=3)['id'] == 3:\n    z = 'yes'\n(x['id'], y['id'], z)")
    assert r.ok and r.value == "(1, 2, 'yes')", r.error


def pair(a: int) -> list:
    """Two numbers from `a`."""
    return [a, a + 1]


USED_AT_ONCE = {  # each read differently from the bytecode of CPython 3.12 and 3.15
    "x = pair(a=1)\nx": "[1, 2]", "sum(x for x in pair(a=1))": "3",
    "[r for r in pair(a=1)]": "[1, 2]", "{k: 0 for k in pair(a=1)}": "{1: 0, 2: 0}",
    "f'{pair(a=1)}'": "'[1, 2]'", "x, y = pair(a=1)\ny": "2",
    "d = {}\nd['k'] = pair(a=1)\nd": "{'k': [1, 2]}", "'yes' if pair(a=1) else 'no'": "'yes'",
    "pair(a=1)[0] + 1": "2", "for r in pair(a=1):\n    pass\nr": "2",
    "len(await pair(a=1))": "2", "len(await asyncio.gather(pair(a=1), pair(a=2)))": "2",
}


def test_inside_async_code_a_value_used_at_once_is_a_value_and_the_rest_awaitables():
    with Session([pair]) as s:
        for code, want in USED_AT_ONCE.items():
            *lines, last = code.splitlines()
            body = "".join(f"    {line}\n" for line in [*lines, f"return {last}"])
            r = s.run(f"import asyncio\nasync def f():\n{body}await f()")
            assert r.value == want, (code, r.error)
        r = s.run("import asyncio\nasync def f():\n    return [pair(a=i) for i in range(2)]\n"
                  "[type(c).__name__ for c in await f()]")
        assert r.value == "['ToolCallFuture', 'ToolCallFuture']", r.error


def test_calls_handed_on_inside_async_code_stay_concurrent():
    with Session(_meeting(5), limits=Limits(timeout_s=_MEETING_S + 30)) as s:
        r = s.run("import asyncio\ntasks = [meet(str(i)) for i in range(4)]\n"
                  "t = asyncio.create_task(meet('t'))\n"
                  "res = await asyncio.gather(*tasks)\n(res, await t)")
    assert r.ok and r.value == "(['0', '1', '2', '3'], 't')", r.error


def test_a_call_neither_awaited_nor_used_says_how_to_get_its_value(session):
    r = session.run("import asyncio\nprint(whoami())\nawait asyncio.sleep(0)")
    assert r.ok and "write `await whoami(...)` for its value" in r.stdout


def test_tool_error_reaches_the_guest_with_its_message(session):
    r = session.run("get_order(order_id=-5)")
    assert not r.ok and r.error_type == "ToolError"
    assert "order -5 does not exist" in r.error
    r = session.run("try:\n    explode('bad thing')\nexcept ToolError as e:\n    msg = str(e)\nmsg")
    assert r.ok and "ValueError: bad thing" in r.value
    assert r.tool_calls[0].ok is False and "bad thing" in r.tool_calls[0].error


def test_invalid_arguments_are_reported_by_field(session):
    r = session.run("get_order(order_id='not a number')")
    assert not r.ok and "order_id" in r.error


def test_missing_and_unexpected_arguments(session):
    r = session.run("get_order()")
    assert not r.ok and "missing" in r.error and "order_id" in r.error
    r = session.run("get_order(order_id=1, colour='red')")
    assert not r.ok and "colour" in r.error


def test_per_tool_timeout():
    def stuck() -> str:
        time.sleep(3)
        return "late"

    with Session([Tool.from_function(stuck, timeout_s=0.3)]) as s:
        r = s.run("stuck()")
        assert not r.ok and "timed out" in r.error  # before the tool's 3 s were up
        assert s.run("1 + 1").value == "2"  # the session goes on


def test_async_tool_timeout_from_limits():
    async def hang() -> str:
        await asyncio.sleep(5)
        return "late"

    with Session([hang], limits=Limits(tool_timeout_s=0.2)) as s:
        r = s.run("try:\n    hang()\nexcept ToolError as e:\n    err = str(e)\nerr")
        assert r.ok and "timed out" in r.value


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Model(pydantic.BaseModel):
    name: str
    when: dt.date


def odd_results() -> dict:
    """Returns values that are not JSON."""
    return {"point": Point(1, 2), "model": Model(name="m", when=dt.date(2024, 5, 1)),
            "bytes": b"abc", "blob": b"\xff\x00", "set": {3, 1, 2}, "tuple": (1, 2),
            "when": dt.datetime(2024, 1, 2, 3, 4, 5), 7: "int key", "obj": object()}


def test_results_are_converted_by_the_documented_rule():
    with Session([odd_results]) as s:
        r = s.run("r = odd_results()\n[r['point'], r['model'], r['bytes'], r['blob'], r['set'], "
                  "r['tuple'], r['when'], r['7'], r['obj'][:8]]")
        assert r.ok, r.error
        assert r.value == ("[{'x': 1, 'y': 2}, {'name': 'm', 'when': '2024-05-01'}, 'abc', "
                           "{'type': 'bytes', 'base64': '/wA='}, [1, 2, 3], [1, 2], "
                           "'2024-01-02T03:04:05', 'int key', '<object ']")


def test_tool_call_limit_per_cell():
    def ping() -> int:
        return 1

    with Session([ping], limits=Limits(tool_calls=5)) as s:
        r = s.run("n = 0\ntry:\n    for i in range(10):\n        n += ping()\n"
                  "except ToolError as e:\n    print(e)\nn")
        assert r.value == "5"
        assert "limit of 5 tool calls" in r.stdout
        assert s.run("ping()").value == "1"  # the count is per cell


def test_unknown_tool_is_a_name_error(session):
    r = session.run("get_ordr(order_id=1)")
    assert not r.ok and r.error_type == "NameError"


def test_large_result_crosses_intact():
    def big() -> list:
        return [{"i": i, "s": "x" * 50} for i in range(50_000)]

    with Session([big]) as s:
        r = s.run("rows = big()\n(len(rows), rows[-1]['i'], sum(r['i'] for r in rows))")
        assert r.ok and r.value == f"(50000, 49999, {sum(range(50_000))})", r.error


def test_large_arguments_cross_intact():
    def count(text: str) -> int:
        return len(text)

    with Session([count]) as s:
        r = s.run("count('y' * 5_000_000)")
        assert r.ok and r.value == "5000000", r.error


def test_openai_dict_tool_with_function():
    spec = {"type": "function", "name": "add", "description": "Add.",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
                                                            "b": {"type": "integer"}},
                           "required": ["a", "b"]}}
    with Session([Tool.from_openai(spec, function=lambda a, b: a + b)]) as s:
        assert s.run("add(2, b=3)").value == "5"
