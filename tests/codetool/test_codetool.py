"""CodeTool: the one code tool under every front end (contexts, tool sets, scopes, failures),
and the step drivers that let run_code and arun_code share one body."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time

import pytest
from tooliscode import SessionClosed, Tool, ToolError
from tooliscode.codetool import CodeTool, Sandbox, Toolbox
from tooliscode.codetool._steps import Blocking, Hold, adrive, drive


def who() -> str:
    """Who is asking."""


WHO = Tool.from_function(who)


def asking(sandbox: Sandbox) -> list[Tool]:
    """`who()` answers with the running cell's context."""
    def answer() -> str:
        if sandbox.context is None:
            raise ToolError("no cell is running")
        return str(sandbox.context)
    return [dataclasses.replace(WHO, function=answer)]


# -- the drivers (no guest) --------------------------------------------------------------------

def _steps(lock: threading.Lock, log: list[str]):
    yield Hold(lock)
    try:
        value = yield Blocking(lambda x: x * 2, (21,))
        log.append(f"got {value}")
        try:
            yield Blocking(lambda: 1 / 0)
        except ZeroDivisionError:
            log.append("caught")
        return value
    finally:
        lock.release()
        log.append("released")


def test_both_drivers_run_one_body_and_throw_failures_back_into_it():
    lock, log = threading.Lock(), []
    assert drive(_steps(lock, log)) == 42
    assert asyncio.run(adrive(_steps(lock, log))) == 42
    assert log == ["got 42", "caught", "released"] * 2 and not lock.locked()


async def test_a_cancelled_async_run_releases_what_it_holds():
    lock, log = threading.Lock(), []

    def slow_steps():
        yield Hold(lock)
        try:
            yield Blocking(time.sleep, (0.5,))
        finally:
            lock.release()
            log.append("released")

    task = asyncio.ensure_future(adrive(slow_steps()))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert log == ["released"] and not lock.locked()


# -- CodeTool ----------------------------------------------------------------------------------

def test_tools_read_the_context_of_the_running_cell_only():
    with CodeTool(Toolbox(asking)) as code:
        assert code.run_code("print(who())", key="a", context="ann").text == "ann"
        assert code.run_code("print(who())", key="a", context="bob").text == "bob"
        assert code.get("a").context is None


async def test_async_calls_on_one_key_take_turns_with_their_own_contexts():
    with CodeTool(Toolbox(asking)) as code:
        replies = await asyncio.gather(*(code.arun_code(
            "print(who())", key="k", context=f"c{i}")
            for i in range(4)))
    assert [r.text for r in replies] == ["c0", "c1", "c2", "c3"]


def test_other_tools_replace_a_used_session_and_say_so():
    first = Toolbox.of([dataclasses.replace(WHO, function=lambda: "one")])
    second = Toolbox.of([dataclasses.replace(WHO, function=lambda: "two")])
    assert first.key != second.key
    with CodeTool(first) as code:
        code.run_code("x = 1")
        reply = code.run_code("print(who()); print(x)", tools=second)
        assert reply.text.startswith("[note] The tools changed")
        assert "two" in reply.text and "NameError" in reply.text and not reply.ok
        assert code.run_code("print(who())", tools=second).text == "two"


def test_runs_get_sandboxes_of_their_own_and_a_started_spare():
    tools = Toolbox.of([dataclasses.replace(WHO, function=lambda: "me")])
    with CodeTool(tools, keep_spare=True) as code:
        run = code.take()
        assert code.run_code("x = 1", sandbox=run).ok
        assert code.keys == []  # nothing keyed was made
        renewable = run.session.runtime.renews
        code.finish(run, tools)
        for _ in range(500):  # offered at once, ready once started (or renewed) on another
            spare = code.spare  # thread
            if spare is not None and spare.ready(tools) and not spare.lock.locked():
                break
            time.sleep(0.01)
        spare = code.spare
        assert spare is not None and spare.ready(tools)
        # a new sandbox, or (where the runtime renews its guests) the same one renewed
        assert (spare is run) == renewable
        nxt = code.take()
        assert nxt is spare and code.spare is None
        assert "NameError" in code.run_code("print(x)", sandbox=nxt).text
        nxt.close()
        with pytest.raises(SessionClosed):
            code.run_code("1", sandbox=nxt)


LEAVE_TRACES = """
import json, os, random
os.makedirs("/session/sub", exist_ok=True)
with open("/session/sub/secret.txt", "w") as f:
    f.write("s3cret")
kept = open("/session/sub/secret.txt")
json.marked = True
import builtins, sys
builtins.leak = sys.modules["planted"] = "from the last run"
x = 41
print(kept.fileno(), random.random())
"""
FIND_TRACES = """
import json, os, random
found = []
for fd in range(3, 40):
    try:
        found.append((fd, os.read(fd, 6)))
    except OSError:
        pass
import builtins, sys
print(sorted(os.listdir("/session")), hasattr(json, "marked"), "x" in globals(), found,
      hasattr(builtins, "leak") or "planted" in sys.modules)
print(random.random())
"""


def test_a_run_finds_nothing_of_the_runs_before_it(next_run):
    """Whether the next run's sandbox is new or renewed (the data runtime), no variable,
    module change, file, open descriptor or random stream of the last run reaches it."""
    tools = Toolbox.of([dataclasses.replace(WHO, function=lambda: "me")])
    with CodeTool(tools, keep_spare=True) as code:
        run = code.take()
        first = code.run_code(LEAVE_TRACES, sandbox=run)
        assert first.ok, first.text
        fd, number = first.result.stdout.split()
        numbers = {number}
        for _ in range(3):
            run = next_run(code, run, tools)
            found = code.run_code(FIND_TRACES, sandbox=run)
            assert found.ok, found.text
            listing, number = found.result.stdout.splitlines()
            assert listing == "[] False False [] False", (fd, listing)
            assert number not in numbers
            numbers.add(number)
            assert code.run_code(LEAVE_TRACES, sandbox=run).ok


def test_a_sandbox_that_cannot_start_is_a_reply_not_a_crash():
    def broken(sandbox: Sandbox) -> list[Tool]:
        raise RuntimeError("no tools today")

    with CodeTool(Toolbox(broken)) as code:
        reply = code.run_code("print(1)")
        assert reply.result is None and not reply.ok
        assert reply.text == ("[error] the sandbox could not run the code: "
                              "RuntimeError: no tools today")
    with pytest.raises(SessionClosed):
        code.run_code("print(1)")


def test_an_evicted_conversation_is_told_once():
    with CodeTool(idle_timeout_s=0.2) as code:
        code.run_code("x = 1", key="old")
        time.sleep(0.4)
        code.run_code("y = 1", key="new")
        again = code.run_code("print(2)", key="old")
        assert again.text.startswith("[note] This conversation's earlier Python session was "
                                     "closed after") and again.text.endswith("\n2")
        assert code.run_code("print(3)", key="old").text == "3"
