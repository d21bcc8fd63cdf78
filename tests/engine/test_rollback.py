"""A stopped cell costs only itself: after its time limit, a cancel (from any thread, or of the
task awaiting `arun`), the interpreter exiting or a tool that never returns, the session comes
back to its state before the cell, and the model is told what stopped it, what it did that
stands, and what came back. Runs on both runtimes (the data pass sets TOOLISCODE_RUNTIME);
on the data runtime the interpreter itself comes back, generators and random state too."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest
from _cancels import leftovers, nothing_left, pooled
from tooliscode import Limits, Session, ToolIsCode
from tooliscode.durable import FolderStore
from tooliscode.engine import Cancel
from tooliscode.engine._live import pool_for
from tooliscode.engine._rollback import Rollback
from tooliscode.engine._worker import _running as running_workers
from tooliscode.errors import SessionClosed

RELEASE = threading.Event()
ENTERED = threading.Event()


def blocks() -> str:
    """Waits until the test lets it go (a sync tool that cannot be interrupted)."""
    ENTERED.set()
    RELEASE.wait(30)
    return "released"


async def waits(seconds: float) -> str:
    """An async tool that sleeps."""
    ENTERED.set()
    await asyncio.sleep(seconds)
    return "slept"


def touched(name: str) -> str:
    """Records a side effect in the world."""
    return f"touched {name}"


TOOLS = [blocks, waits, touched]
STATE = ("import random\nkeep = [41]\nrandom.seed(7)\ngen = (i * i for i in range(10))\n"
         "next(gen)\nclass Point:\n    def __init__(self, x):\n        self.x = x\n"
         "p = Point(3)\nbuf = bytearray(b'ab')")
CHECK = "keep, p.x, buf"
"""`buf` must come back a bytearray (a pickled point once made it bytes)."""
EXACT_CHECK = "keep, p.x, buf, random.random()"
"""Module state (the random generator's) comes back only with the interpreter itself."""


@pytest.fixture(scope="module")
def session():
    with Session(TOOLS, limits=Limits(timeout_s=2)) as s:
        yield s


def _exact(s: Session) -> bool:
    """Whether this session's guest keeps its interpreter itself (a data-runtime guest started
    from the start image; one that booted while the image was being made pickles)."""
    worker = s._state.worker
    return worker is not None and worker.instance.commits


def _fresh(s: Session) -> tuple[bool, str]:
    """Set the state up, and return whether its guest is exact and what the check reads.
    (A data guest that booted while the start image was being made pickles; the guest a stop
    brings back may be exact by then, though what it came back to was pickled.)"""
    assert s.run(STATE).ok
    exact = _exact(s)
    expected = s.run(EXACT_CHECK if exact else CHECK)
    assert s.run(STATE).ok  # the same state again (the check drew a random number)
    return exact, expected.value


def _comes_back(s: Session, r, expected: tuple[bool, str], cause: str) -> None:
    assert not r.ok and r.rolled_back and not r.restarted, r.error
    assert cause in r.error and "back to its state before this cell" in r.error, r.error
    exact, value = expected
    after = s.run(EXACT_CHECK if exact else CHECK)
    assert after.ok and after.value == value, (after.error, after.value, value)
    gen = s.run("next(gen)")
    if exact:  # the interpreter itself: the generator goes on where it was
        assert "exactly" in r.error and gen.value == "1", gen.error
        assert not r.lost_names
    else:  # its variables, pickled: the generator is named as not kept
        assert "gen" in r.lost_names and "gen: a generator" in r.error, r.error
        assert gen.error_type == "NameError"


def test_a_cell_past_its_time_limit_comes_back(session):
    expected = _fresh(session)
    r = session.run("keep.append(1)\np.x = 99\nrandom.random()\nwhile True:\n    pass")
    _comes_back(session, r, expected, "still running after 2 s")


def test_state_many_cells_on_comes_back_exactly(session):
    """Past several rounds of the data runtime learning which pages every cell writes (those
    are left unprotected and copied at each commit: `_hot`), the point is still exact."""
    from tooliscode.runtime.data import _hot

    expected = _fresh(session)
    for i in range(2 * _hot.RELEARN + 5):
        assert session.run(f"keep.append({i})\nkeep.pop()\nrandom.random()").ok
    if expected[0]:  # each cell drew a number: the next one is read, then drawn again
        assert session.run("state = random.getstate()").ok
        expected = True, session.run(f"random.setstate(state)\n{EXACT_CHECK}").value
        assert session.run("random.setstate(state)").ok
    r = session.run("keep.append(1)\np.x = 99\nrandom.random()\nwhile True:\n    pass")
    _comes_back(session, r, expected, "still running after 2 s")


def test_the_interpreter_exiting_comes_back(session):
    expected = _fresh(session)
    r = session.run("keep.clear()\nimport os\nos._exit(3)")
    _comes_back(session, r, expected, "exited")


def test_a_stopped_cell_names_its_tool_calls_and_files(session):
    _fresh(session)
    r = session.run("touched('a')\ntouched('b')\nopen('made.txt', 'w').write('x')\n"
                    "while True:\n    pass")
    assert r.rolled_back and "made 2 tool calls (touched x2): their effects stand" in r.error
    assert r.files_written == ("made.txt",) and "not rolled back" in r.error, r.error
    assert session.read_file("made.txt") == b"x"  # the folder is as the cell left it
    assert [c.name for c in r.tool_calls] == ["touched", "touched"]


CANCELLED_IN = {
    "a pure-Python loop": "while True:\n    keep.append(0)",
    "a long C call": "sum(range(10**15))",
    "a catastrophic regex": "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')",
    "time.sleep": "import time\ntime.sleep(60)",
    "a blocking tool call": "blocks()",
    "an async tool call": "waits(60)",
    "gathered async calls": "import asyncio\nawait asyncio.gather(waits(60), waits(60))",
}


@pytest.mark.parametrize("where", list(CANCELLED_IN))
def test_cancel_from_another_thread_stops_the_cell_wherever_it_is(session, where):
    expected = _fresh(session)
    ENTERED.clear()
    RELEASE.clear()
    results = []
    runner = threading.Thread(target=lambda: results.append(
        session.run("keep.append(2)\n" + CANCELLED_IN[where])))
    runner.start()
    try:
        if "tool" in where or "gathered" in where:
            assert ENTERED.wait(30)
        else:
            time.sleep(0.3)
        assert session.cancel()
        runner.join(10)
        assert not runner.is_alive()
    finally:
        RELEASE.set()
    r = results[0]
    assert r.error_type == "CancelledError", r.error
    assert "cancelled after" in r.error
    _comes_back(session, r, expected, "cancelled")
    assert not session.cancel()  # nothing runs now


def test_cancelling_the_task_awaiting_arun_comes_back_at_the_next_cell():
    async def main() -> None:
        with Session(TOOLS) as s:
            assert (await s.arun("keep = [1]\ngen = iter(range(5))\nnext(gen)")).ok
            task = asyncio.ensure_future(s.arun("keep.append(2)\nwhile True:\n    pass"))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            r = await s.arun("keep")
            assert r.ok and r.value == "[1]", r.error
            assert "cancelled" in r.notices[0] and "before that cell" in r.notices[0]

    asyncio.run(main())


def test_a_cancel_stops_only_the_cells_it_was_given_to(session):
    """A `Cancel` (a framework's time limit, a client gone) stops its own cell, from another
    thread or before the cell started, and says why; fired once its cell ended, it touches
    nothing, nor the session's next cell."""
    expected = _fresh(session)
    cancel = Cancel()
    timer = threading.Timer(0.3, cancel, args=("the client went away",))
    timer.start()
    r = session.run("keep.append(2)\nwhile True:\n    pass", cancel=cancel)
    assert r.error_type == "CancelledError" and "(the client went away)" in r.error, r.error
    _comes_back(session, r, expected, "cancelled")
    fired = session.run("keep.append(3)", cancel=cancel)  # fired before this cell started
    assert fired.error_type == "CancelledError" and not fired.rolled_back, fired.error
    assert "(the client went away)" in fired.error and "before it started" in fired.error
    done = Cancel()
    assert session.run("keep.append(4)", cancel=done).ok
    done("too late")
    assert session.run("keep").value == "[41, 4]"


def test_a_code_tool_call_cancelled_before_its_cell_runs_none():
    with ToolIsCode(TOOLS) as tic:
        cancel = Cancel()
        cancel("the time limit ran out")
        reply = tic.code_tool.run_code("keep = 1", key="k", cancel=cancel)
        assert reply.result is None and not reply.ok
        assert reply.text == "[error] the code did not run: the time limit ran out"
        assert tic.code_tool.run_code("'keep' in globals()", key="k").text == "[value] False"


def _threads() -> int:
    return sum(t.is_alive() for t in threading.enumerate())


def test_nothing_is_left_behind_after_a_hundred_cancels(tmp_path):
    with Session(TOOLS, limits=Limits(timeout_s=30)) as s:
        s.run("keep = 1")
        for _ in range(3):  # the first ones start threads that stay (the tool pool, a loop)
            _cancel_once(s)
        threads, fds = _threads(), len(os.listdir("/proc/self/fd"))
        guests = len(set(running_workers) - pooled())
        for _ in range(100):
            _cancel_once(s)
        time.sleep(0.5)  # the last given-up guest's thread ends on its own
        assert s.run("keep").value == "1"
        assert _threads() <= threads + 1, [t.name for t in threading.enumerate()]
        assert len(set(running_workers) - pooled()) <= guests + 1
        assert len(os.listdir("/proc/self/fd")) <= fds + 8
        folder = s.workdir
        started = time.perf_counter()
        s.close()
        assert time.perf_counter() - started < 1.0  # close after cancels returns at once
    deadline = time.monotonic() + 10
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not folder.exists()


@pytest.mark.parametrize("when", ["before its guest is made", "before it is attached",
                                  "before its state is loaded"])
def test_a_session_closed_while_its_stopped_cell_comes_back_keeps_no_guest(monkeypatch, when):
    """A stop and a close on another thread come together (an MCP session's DELETE): the
    close finds no guest while the stopped cell's session is coming back (made to land here at
    each step of that), and the guest made for it is let go with the folder, or not made: not
    left running (a fresh-clone CI run once found one left after a DELETE)."""
    s = Session(TOOLS, limits=Limits(timeout_s=30))
    s.run("keep = 1")
    before, folder = leftovers(), s.workdir
    if when == "before its guest is made":  # after the check that the session is open
        of = Rollback.of.__func__
        monkeypatch.setattr(Rollback, "of", classmethod(
            lambda cls, worker, names: (s.close(), of(cls, worker, names))[1]))
    elif when == "before it is attached":
        attach = Session._attach
        monkeypatch.setattr(Session, "_attach", lambda self, worker: (s.close(),
                                                                      attach(self, worker))[1])
    else:  # the close lets that guest go: its folder goes only once the guest has ended
        load = Rollback.load
        monkeypatch.setattr(Rollback, "load", lambda self, *args: (s.close(),
                                                                   load(self, *args))[1])
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            s.run("while True:\n    pass")
        except BaseException as exc:  # noqa: BLE001 - what the run ended with is the test's
            outcome.append(exc)

    runner = threading.Thread(target=run)
    runner.start()
    while not s.running:
        time.sleep(0.001)
    s.cancel()
    runner.join(10)
    assert outcome and isinstance(outcome[0], SessionClosed), outcome
    nothing_left((before[0] - 1, before[1]))  # its first guest and the one made after: gone
    deadline = time.monotonic() + 10
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not folder.exists()


def _cancel_once(s: Session, code: str = "while True:\n    pass"):
    results = []
    runner = threading.Thread(target=lambda: results.append(s.run(code)))
    runner.start()
    while not s.running:
        time.sleep(0.001)
    time.sleep(0.01)
    s.cancel()
    runner.join(10)
    assert results and results[0].rolled_back, results and results[0].error
    return results[0]


def test_an_object_that_cannot_be_made_again_costs_only_its_name(session):
    """It pickles and does not unpickle: the point comes back without it, named, rather
    than not at all (the data runtime's point is its memory: there it comes back too)."""
    assert session.run("class Weird:\n    def __init__(self, x):\n        self.x = x\n"
                       "    def __reduce__(self):\n        return Weird, ()\n"
                       "w = Weird(1)\nkeep = [41]").ok
    exact = _exact(session)
    r = _cancel_once(session, "keep.append(1)\nwhile True:\n    pass")
    assert not r.restarted and session.run("keep").value == "[41]", r.error
    if exact:
        assert session.run("w.x").value == "1"
    else:
        assert "w" in r.lost_names and "keep" not in r.lost_names
        assert "w: could not be loaded (TypeError: Weird.__init__()" in r.error, r.error
        assert session.run("w").error_type == "NameError"


def test_a_durable_conversation_stores_the_state_it_came_back_to(tmp_path):
    """The state after a stop is what the store holds: another worker taking the
    conversation finds the variables from before the stopped cell, and none of its."""
    store = FolderStore(tmp_path / "store")
    limits = Limits(timeout_s=1)
    with ToolIsCode(TOOLS, store=store, limits=limits) as a, \
            ToolIsCode(TOOLS, store=store, limits=limits) as b:
        assert a.run_code("keep = [1]", key="c").ok
        stopped = a.run_code("keep.append(2)\npartial = 1\nwhile True:\n    pass", key="c")
        assert stopped.result is not None and stopped.result.rolled_back, stopped.text
        _saved(a, "c")
        reply = b.run_code("print(keep, 'partial' in globals())", key="c")
        assert reply.text.strip() == "[1] False", reply.text


def _saved(tic: ToolIsCode, key: str) -> None:
    entry = tic.code_tool.keeper._entry(key)
    deadline = time.monotonic() + 60
    while entry.lock.locked():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_keeping_nothing_is_a_limit_the_result_names():
    with Session([], limits=Limits(timeout_s=1, rollback_bytes=0)) as s:
        s.run("keep = 1")
        r = s.run("while True:\n    pass")
        assert r.restarted and not r.rolled_back and "keep" in r.lost_names, r.error
        assert s.run("keep").error_type == "NameError"


def test_a_session_closed_after_its_first_cell_makes_no_point(monkeypatch):
    """The first point waits for the next command (`POINT_WAIT_S`, long here so the test does
    not race the clock): an exit means none is made; any other command has it made first."""
    from tooliscode.engine import _guest_loop

    monkeypatch.setattr(_guest_loop, "POINT_WAIT_S", 30.0)
    s = Session([], limits=Limits(timeout_s=1))
    assert s.run("x = 1").ok
    worker = s._state.worker
    s.close(wait=True)  # the guest ended, or went back to its pool (a renewal: no point)
    assert worker.points.point is None
    assert not worker.thread.is_alive() or worker in pool_for(s.runtime).idle()
    with Session([], limits=Limits(timeout_s=1)) as s:
        assert s.run("x = 1").ok
        r = s.run("x = 2\nwhile True:\n    pass")
        assert r.rolled_back, r.error
        assert s.run("x").value == "1"


def test_a_point_is_taken_again_only_when_the_variables_changed(monkeypatch):
    """Where the guest pickles, the first cell's point is a whole checkpoint; a cell that
    names only variables holding numbers or strings brings what it changed with its result,
    and no checkpoint follows it (see test_deltas.py); one that changes a list in place or
    deletes every name gets its point all the same."""
    from tooliscode.engine._points import Points

    taken: list[object] = []
    checkpointed = Points._checkpointed
    mine: list[Points] = []

    def counted(self, blob, result) -> None:
        if self in mine:  # an earlier test's session may still be taking its last point
            taken.append(blob)
        checkpointed(self, blob, result)

    monkeypatch.setattr(Points, "_checkpointed", counted)
    with Session([], limits=Limits(timeout_s=1)) as s:
        mine.append(s._state.worker.points)
        for code in ("x = 1", "x = 1", "print(x)", "x = 2", "x = 2"):
            assert s.run(code).ok
        if not _exact(s):
            assert len(taken) == 1  # after the first cell: the others carried their changes
        assert s.run("x = 3\nwhile True:\n    pass").rolled_back
        assert s.run("x").value == "2"
        assert s.run("rows = [1]").ok and s.run("rows.append(2)").ok
        assert s.run("rows.append(3)\nwhile True:\n    pass").rolled_back
        assert s.run("rows").value == "[1, 2]"
        assert s.run("del x, rows, _").ok
        assert s.run("x = 5\nwhile True:\n    pass").rolled_back
        assert s.run("x").error_type == "NameError"


def test_a_state_too_big_to_keep_stays_named_while_cells_leave_it_as_it_was():
    with Session([], limits=Limits(timeout_s=1, rollback_bytes=10_000)) as s:
        assert s.run("big = 'x' * 50_000\nn = 1").ok
        for _ in range(3):
            assert s.run("print(n)").ok
        r = s.run("n = 2\nwhile True:\n    pass")
        assert r.restarted and "big" in r.lost_names, r.error
        assert "Limits.rollback_bytes" in r.error, r.error


_BIG = "big = [bytes([i]) * (1 << 20) for i in range(80)]\nn = 1"
"""80 MiB of distinct bytes: in a guest of `_ROOM`, a pickled copy does not fit beside them
(the data runtime's start image takes some 90 MiB of that room)."""
_ROOM = 192 << 20


def test_a_state_past_rollback_bytes_is_only_pickled_that_far():
    """Where the point is the pickled variables, the pickling stops at the limit: a state
    over it costs that much after each cell, not its whole size (nor the memory for a copy
    of all of it, which this guest would not have)."""
    with Session([], limits=Limits(timeout_s=1, memory_bytes=_ROOM,
                                   rollback_bytes=4 << 20)) as s:
        assert s.run(_BIG).ok
        assert s.run("print(n)").ok
        r = s.run("n = 2\nwhile True:\n    pass")
        assert r.restarted and "big" in r.lost_names, r.error
        assert "is more than Limits.rollback_bytes (4.0 MiB)" in r.error, r.error


def test_a_state_whose_copy_does_not_fit_in_the_guest_is_named_for_what_it_is():
    """The cells run as ever; a stopped one says why its session could not come back (on a
    runtime whose point is the interpreter's memory, kept by the host, it comes back)."""
    with Session([], limits=Limits(timeout_s=1, memory_bytes=_ROOM)) as s:
        assert s.run(_BIG).ok
        r = s.run("n = 2")
        assert r.ok and s.run("print(n)").stdout == "2\n", r.error
        r = s.run("n = 3\nwhile True:\n    pass")
        if _exact(s):
            assert r.rolled_back and s.run("n, len(big)").value == "(2, 80)", r.error
        else:
            assert r.restarted and "big" in r.lost_names, r.error
            assert "needs more memory than the session has left" in r.error, r.error


def _point_held(s: Session) -> tuple[object, threading.Event, threading.Event]:
    """`keep = [1]` has run in `s`, whose guest's points are held back from then on until
    `gate` is set (`due` is set when one is due: now, for that cell). The cells name a list,
    so a whole point follows each (a cell naming only numbers brings its own: test_deltas)."""
    assert s.run("keep = [0]").ok
    worker = s._state.worker
    gate, due = _hold_points(worker)
    assert s.run("keep = [1]").ok
    assert due.wait(10)
    return worker, gate, due


def _hold_points(worker) -> tuple[threading.Event, threading.Event]:
    """Hold back `worker`'s points until `gate` is set; `due` is set when one is due."""
    gate, due = threading.Event(), threading.Event()
    wanted = worker._point_wanted

    def held() -> bool:
        due.set()
        gate.wait(10)
        return wanted()

    worker._point_wanted = held
    return gate, due


def test_a_cell_cancelled_while_the_last_point_is_kept_never_runs():
    """A cell sent the moment the last result came waits for that cell's point; cancelled
    then (by `cancel()`, or its awaiting task), it is dropped: the guest, and the point under
    way, are left alone, and a later stop comes back to that point. The point is held back
    here until the cancel is in, so the test does not race the clock."""
    with Session([], limits=Limits(timeout_s=1)) as s:
        worker, gate, due = _point_held(s)
        results = []
        runner = threading.Thread(target=lambda: results.append(s.run("keep = [2]")))
        runner.start()
        while s._running is None:  # sent, waiting for the guest
            time.sleep(0.001)
        assert not s.running and s.cancel("the user pressed stop")
        runner.join(10)
        gate.set()
        r = results[0]
        assert r.error_type == "CancelledError" and not r.rolled_back and not r.restarted
        assert "before it started (the user pressed stop)" in r.error, r.error
        assert s._state.worker is worker and worker.alive

        async def cancelled_task() -> None:
            gate.clear()
            due.clear()
            assert (await s.arun("keep = [3]")).ok
            assert due.wait(10)
            task = asyncio.ensure_future(s.arun("keep = [4]"))
            while s._running is None:
                await asyncio.sleep(0.001)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            gate.set()
            after = await s.arun("keep")
            assert after.ok and after.value == "[3]", after
            assert after.notices == ("The last cell was cancelled before it started (the task "
                                     "running it was): none of it ran, and the session is as "
                                     "it was.",), after.notices

        asyncio.run(cancelled_task())
        assert s._state.worker is worker
        stopped = s.run("keep = [5]\nwhile True:\n    pass")
        assert stopped.rolled_back, stopped.error
        assert s.run("keep").value == "[3]"


def test_no_point_is_made_for_a_cell_whose_state_is_dropped_next(monkeypatch):
    """A renewal (a run's sandbox made as new for the next run) forgets the state: the point
    the cell before it would keep is not made. Any other command has it made first."""
    from tooliscode.engine import _guest_loop

    monkeypatch.setattr(_guest_loop, "POINT_WAIT_S", 30.0)
    with Session([]) as s:
        assert s.run("x = 1").ok
        worker = s._state.worker
        worker.between_turns(lambda instance: None, forgets=True)
        assert worker.points.point is None
        assert s.run("x = 2").ok
        worker.between_turns(lambda instance: None)
        assert worker.points.point is not None


def test_a_cell_still_waiting_for_the_last_point_at_its_time_limit_never_runs(monkeypatch):
    """The guest keeps a state so big that the next cell's time is up before it starts: that
    cell is given up without stopping the guest, whose point is kept all the same."""
    from tooliscode.engine import _running

    monkeypatch.setattr(_running, "WATCHDOG_GRACE_S", 0.0)
    with Session([], limits=Limits(timeout_s=0.5)) as s:
        worker, gate, due = _point_held(s)
        r = s.run("keep = [2]")
        gate.set()
        assert r.error_type == "TimeoutError" and not r.rolled_back, r.error
        assert "had not started after" in r.error and "None of it ran" in r.error, r.error
        assert s._state.worker is worker and s.run("keep").value == "[1]"
        stopped = s.run("keep = [5]\nwhile True:\n    pass")
        assert stopped.rolled_back, stopped.error
        assert s.run("keep").value == "[1]"
