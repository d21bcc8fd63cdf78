"""Cells that pause at calls waiting for a decision, and go on: in the same process (the guest
parked in the host) and elsewhere (the cell run again from the state before it, its calls
answered from the log). Counters at the tools prove that nothing runs twice."""

from __future__ import annotations

import asyncio
import collections
import subprocess
import sys
import time

import pytest
from tooliscode import Limits, Session
from tooliscode.codetool import CodeTool
from tooliscode.durable import FolderStore, Keeper
from tooliscode.engine import CallPaused, CellLog, Decision, StopCell, current_call

RAN: collections.Counter[str] = collections.Counter()
SENT: list[tuple[str, str]] = []


def find_late_orders() -> list[dict]:
    """Orders past their due date."""
    RAN["find_late_orders"] += 1
    return [{"customer": "ann", "id": 1}, {"customer": "bob", "id": 2}]


def send_email(to: str, body: str) -> str:
    """Send an email; a person approves each one."""
    call = current_call()
    if call is None or not call.approved:
        raise CallPaused("approval", {"policy": "emails"})
    RAN["send_email"] += 1
    SENT.append((to, body))
    return f"sent to {to}"


def ping(n: int) -> int:
    """An ungated call."""
    RAN["ping"] += 1
    return n


async def asend(to: str) -> str:
    """An async tool that needs approval."""
    call = current_call()
    if call is None or not call.approved:
        raise CallPaused("approval")
    RAN["asend"] += 1
    return f"async sent to {to}"


async def aslow(to: str) -> str:
    """An async tool that needs approval and takes a while once approved."""
    call = current_call()
    if call is None or not call.approved:
        raise CallPaused("approval")
    await asyncio.sleep(0.2)
    RAN["aslow"] += 1
    return f"slowly sent to {to}"


TOOLS = [find_late_orders, send_email, ping, asend]
LOOP = ("late = find_late_orders()\n"
        "done = [send_email(to=o['customer'], body=f\"order {o['id']} is late\") for o in late]\n"
        "print(done)")


@pytest.fixture(autouse=True)
def _counters():
    RAN.clear()
    SENT.clear()


@pytest.fixture(scope="module")
def session():
    with Session(TOOLS, limits=Limits(timeout_s=20)) as s:
        yield s


def test_gated_calls_one_after_another_pause_one_at_a_time(session):
    r = session.run(LOOP, call_id="call_1")
    assert [(p.id, p.tool, p.arguments["to"]) for p in r.paused] == [("call_1:2", "send_email",
                                                                     "ann")]
    assert r.paused[0].metadata == {"policy": "emails"} and session.paused_for == "call_1"
    assert "[paused]" in r.error or r.error_type == "Paused"
    r = session.resume({"call_1:2": Decision.approve()})
    assert [p.id for p in r.paused] == ["call_1:3"]
    r = session.resume({"call_1:3": Decision.approve(arguments={"to": "bob",
                                                                "body": "edited"})})
    assert r.ok and r.stdout == "['sent to ann', 'sent to bob']\n", r
    assert SENT == [("ann", "order 1 is late"), ("bob", "edited")]
    assert RAN == {"find_late_orders": 1, "send_email": 2}
    assert session.paused == () and session.paused_for is None


def test_a_rejected_call_never_runs_and_raises_tool_error_with_the_message(session):
    r = session.run("try:\n    send_email(to='x', body='b')\nexcept ToolError as e:\n"
                    "    print('refused:', e)", call_id="call_2")
    r = session.resume({r.paused[0].id: Decision.reject("not to x, please")})
    assert r.ok and r.stdout == "refused: not to x, please\n"
    assert RAN["send_email"] == 0 and SENT == []


def test_respond_makes_the_message_the_result_without_running(session):
    r = session.run("print(send_email(to='y', body='b'))", call_id="call_3")
    r = session.resume({r.paused[0].id: Decision.respond("the reviewer sent it by hand")})
    assert r.ok and r.stdout == "the reviewer sent it by hand\n" and RAN["send_email"] == 0


def test_gathered_gated_calls_pause_together(session):
    code = ("import asyncio\n"
            "async def main():\n"
            "    return await asyncio.gather(send_email(to='a', body='1'), ping(n=7),\n"
            "                                asend(to='b'), send_email(to='c', body='3'))\n"
            "print(await main())")
    r = session.run(code, call_id="call_4")
    assert sorted(p.tool for p in r.paused) == ["asend", "send_email", "send_email"]
    assert RAN["ping"] == 1  # the ungated call ran before the pause
    ids = {p.arguments.get("to"): p.id for p in r.paused}
    partial = session.resume({ids["a"]: Decision.approve()})  # one of three: still paused
    assert partial.paused
    r = session.resume({ids["a"]: Decision.approve(), ids["b"]: Decision.approve(),
                        ids["c"]: Decision.reject("no")})
    assert not r.ok and "ToolError: no" in r.error
    assert RAN == {"ping": 1, "send_email": 1, "asend": 1}


def test_approved_calls_run_though_a_refusal_beside_them_ends_the_code():
    """The refusal is answered at once, so the code hears of it first, and the `gather` that
    raises on it ends the cell: the approved call beside it still runs (a person approved
    it), before the code goes on."""
    with Session([send_email, aslow], limits=Limits(timeout_s=20)) as s:
        r = s.run("import asyncio\nawait asyncio.gather(aslow(to='a'), "
                  "send_email(to='b', body='x'))", call_id="call_9")
        ids = {p.arguments["to"]: p.id for p in r.paused}
        r = s.resume({ids["a"]: Decision.approve(), ids["b"]: Decision.reject("no")})
        assert not r.ok and "ToolError: no" in r.error
        assert RAN == {"aslow": 1}


def test_a_hundred_calls_and_one_gated_make_101_calls_across_the_pause(session):
    code = "total = sum(ping(n=i) for i in range(100))\nprint(total, send_email(to='z', body='b'))"
    r = session.run(code, call_id="call_5")
    assert RAN["ping"] == 100 and r.paused
    r = session.resume({r.paused[0].id: Decision.approve()})
    assert r.stdout == "4950 sent to z\n"
    assert sum(RAN.values()) == 101


def test_the_pause_does_not_count_against_the_cell_time_limit():
    with Session(TOOLS, limits=Limits(timeout_s=1.0)) as s:
        r = s.run("import time\ntime.sleep(0.3)\nsend_email(to='t', body='b')\n"
                  "time.sleep(0.3)\nprint('done')", call_id="c")
        time.sleep(1.5)  # longer than the cell's whole limit, spent paused
        r = s.resume({r.paused[0].id: Decision.approve()})
        assert r.ok and r.stdout == "done\n", r.error


_WATCHED = """
from tooliscode import Limits, Session
from tooliscode.engine import CallPaused

def send_email(to: str) -> str:
    \"\"\"Send an email.\"\"\"
    raise CallPaused("approval")

with Session([send_email], limits=Limits(timeout_s=5)) as s:
    before = s.runtime.ticker.armed
    r = s.run("send_email(to='t')", call_id="c")
    print(before, bool(r.paused), s.runtime.ticker.armed)
"""


def test_a_paused_cell_keeps_no_ticker_running():
    """A cell waiting for a decision (for hours, perhaps) is not watched: the epoch ticker
    lets it go, so its deadline cannot come while it waits. (In a process of its own: here,
    other tests' guests share the ticker.)"""
    done = subprocess.run([sys.executable, "-c", _WATCHED], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.split() == ["0", "True", "0"], done.stderr[-2000:]


def test_a_runaway_loop_after_a_pause_is_still_stopped():
    """Once a paused cell goes on it is watched again: a runaway loop hits the limit."""
    with Session(TOOLS, limits=Limits(timeout_s=1.0)) as s:
        r = s.run("send_email(to='t', body='b')\nwhile True:\n    pass", call_id="c")
        r = s.resume({r.paused[0].id: Decision.approve()})
        assert not r.ok and r.error_type == "TimeoutError", r.error
        assert RAN["send_email"] == 1 and s.run("print('next')").stdout == "next\n"


def test_a_new_cell_gives_up_the_paused_one(session):
    r = session.run("x = 1\nsend_email(to='q', body='b')\nx = 2", call_id="call_6")
    assert r.paused
    r = session.run("print(x)")
    assert r.stdout == "1\n" and RAN["send_email"] == 0
    assert any("did not go on" in n for n in r.notices)


def test_an_unanswered_pause_expires_and_leaves_the_session_usable():
    with Session(TOOLS, limits=Limits(timeout_s=20, pause_s=0.5)) as s:
        r = s.run("send_email(to='late', body='b')", call_id="c")
        assert r.paused
        time.sleep(1.0)
        r = s.resume({r.paused[0].id: Decision.approve()})  # too late: it was refused
        assert not r.ok and "pause expired" in r.error and RAN["send_email"] == 0
        assert s.run("print(1)").stdout == "1\n"


def test_closing_a_session_with_a_paused_cell_does_not_hang():
    s = Session(TOOLS)
    assert s.run("send_email(to='c', body='b')", call_id="c").paused
    started = time.monotonic()
    s.close(wait=True)
    assert time.monotonic() - started < 10


def test_a_logged_cell_goes_on_in_another_session_without_running_its_calls_again():
    with Session(TOOLS) as s:
        s.run("n = 41")
        base = s.snapshot()
        assert s.run(LOOP, call_id="c1").paused
        log = CellLog.from_json(s.paused_log().to_json())
    assert RAN == {"find_late_orders": 1}
    with Session.restore(base, TOOLS) as s2:
        r = s2.run(LOOP, log=log, decisions={"c1:2": Decision.approve()})
        assert [p.id for p in r.paused] == ["c1:3"] and RAN["find_late_orders"] == 1
        r = s2.resume({"c1:3": Decision.reject("no")})
    assert RAN == {"find_late_orders": 1, "send_email": 1}


def test_a_cell_that_asks_for_other_calls_when_it_goes_on_is_stopped_before_any_runs():
    """A cell that reads the clock to choose its next call cannot be continued elsewhere: the
    first call that differs from the log stops it, and no call is made."""
    code = ("import time\n"
            "first = ping(n=int(time.time() * 1000) % 1000003)\n"
            "send_email(to='w', body=str(first))")
    with Session(TOOLS) as s:
        base = s.snapshot()
        assert s.run(code, call_id="c").paused
        log = s.paused_log()
    time.sleep(0.01)
    with Session.restore(base, TOOLS) as s2:
        r = s2.run(code, log=log, decisions={"c:2": Decision.approve()})
        assert not r.ok and "CellStopped" in r.error and "no call was made" in r.error
        assert "same calls in the same order" in r.error
    assert RAN == {"ping": 1}


def test_a_code_tool_continues_a_paused_conversation_in_another_process_from_its_store(tmp_path):
    """The store keeps the state before the cell and the record; a new code tool (another
    process, as far as it knows) continues it; a record continued once cannot be again."""
    store = tmp_path / "store"
    with CodeTool(TOOLS, store=Keeper(FolderStore(store))) as first:
        assert first.run_code("n = 41", key="conv").ok
        paused = first.run_code(LOOP, key="conv", call_id="call_9")
        assert [p.id for p in paused.paused] == ["call_9:2"] and "[paused]" in paused.text
    with CodeTool(TOOLS, store=Keeper(FolderStore(store))) as second:
        reply = second.run_code(LOOP, key="conv", call_id="call_9",
                                decisions={"call_9:2": Decision.approve()})
        assert [p.id for p in reply.paused] == ["call_9:3"]
    with CodeTool(TOOLS, store=Keeper(FolderStore(store))) as third:
        reply = third.run_code(LOOP, key="conv", call_id="call_9",
                               decisions={"call_9:3": Decision.approve()})
        assert reply.ok and reply.result.stdout == "['sent to ann', 'sent to bob']\n"
        again = third.run_code(LOOP, key="conv", call_id="call_9",
                               decisions={"call_9:3": Decision.approve()})
        assert again.result is None and "no paused cell" in again.text
        assert third.run_code("print(n, done)", key="conv").result.stdout.startswith("41 [")
    assert RAN == {"find_late_orders": 1, "send_email": 2}


def test_a_tool_that_stops_the_cell_ends_it_where_the_code_cannot_catch_it():
    def tripwire() -> str:
        """Ends the cell, as a guardrail that ends the run does."""
        raise StopCell("the guardrail 'no_spam' ended the run")

    with Session([tripwire, ping]) as s:
        r = s.run("try:\n    tripwire()\nexcept Exception as e:\n    print('caught', e)\n"
                  "ping(n=1)")
        assert not r.ok and "CellStopped" in r.error and "no_spam" in r.error, r
        assert r.stdout == "" and RAN["ping"] == 0
        assert s.run("print(2)").stdout == "2\n"
