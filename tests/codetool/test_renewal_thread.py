"""Where a run's sandbox is renewed for the next run (`Sandbox.renew`): on its guest's own
thread, between turns, with no other thread taking part, once the last run's caller is
likely done (`Worker.after_turn(quiet=True)`) or the next run takes the sandbox; a run that
takes it at once finds it renewed all the same; and a renewal that fails, or never runs,
still hands the next run a sandbox as new, never the last run's guest."""

from __future__ import annotations

import concurrent.futures as cf
import threading

import pytest
from tooliscode import Limits, Tool
from tooliscode.codetool import CodeTool, Toolbox
from tooliscode.codetool import _runs as runs_module
from tooliscode.codetool import _sandbox as sandbox_module
from tooliscode.engine import Renewal
from tooliscode.engine import _guest_loop as loop_module
from tooliscode.engine._command import NotStarted
from tooliscode.engine._worker import Worker


def ping() -> str:
    """Answers pong."""
    return "pong"


TOOLS = Toolbox.of([Tool.from_function(ping)])


@pytest.fixture(scope="module")
def code():
    with CodeTool(TOOLS, keep_spare=True, limits=Limits(timeout_s=20)) as tool:
        yield tool


def _renews(code: CodeTool) -> bool:
    run = code.take()
    try:
        assert code.run_code("1", sandbox=run).ok
        return run.live().runtime.renews
    finally:
        code.finish(run, TOOLS)


def test_the_renewal_runs_on_the_guests_thread_and_the_next_run_finds_it_done(code, monkeypatch):
    if not _renews(code):
        pytest.skip("this runtime starts a new guest per run")  # pragma: no cover
    threads: list[threading.Thread] = []
    renewed = Worker.renewed

    def spy(self: Worker, *args: object, **kwargs: object) -> bool:
        threads.append(threading.current_thread())
        return renewed(self, *args, **kwargs)

    monkeypatch.setattr(Worker, "renewed", spy)
    # Waiting this long for quiet, a run could not go on unless taking the sandbox hurries it.
    monkeypatch.setattr(loop_module, "QUIET_S", 60.0)
    handed: list[object] = []  # work given to the background threads
    for module in (runs_module, sandbox_module):
        monkeypatch.setattr(module, "submit", lambda fn, *args: handed.append(fn) or fn(*args))
    for _ in range(3):
        run = code.take()
        worker = run.live()._state.worker
        assert code.run_code("x = 41", sandbox=run).ok
        code.finish(run, TOOLS)
        run = code.take()  # at once: it hurries the renewal, which its first cell waits for
        assert run.live()._state.worker is worker  # the same guest, renewed
        reply = code.run_code("print('x' in globals(), ping())", sandbox=run)
        assert reply.ok and reply.result.stdout == "False pong\n", reply.text
        code.finish(run, TOOLS)
        assert threads and threads[-1] is worker.thread
    assert all(t.name == "tooliscode-guest" for t in threads)
    assert handed == []  # nor did another thread take part


@pytest.mark.parametrize("outcome", ["died first", "not renewed", "not asked"])
def test_a_renewal_that_fails_or_never_runs_gives_the_next_run_a_new_guest(code, monkeypatch,
                                                                         outcome):
    if not _renews(code):
        pytest.skip("this runtime starts a new guest per run")  # pragma: no cover

    def renew_soon(self: Renewal) -> cf.Future | None:
        if outcome == "not asked":
            return None
        future: cf.Future = cf.Future()
        if outcome == "died first":
            future.set_exception(NotStarted("the guest died first"))
        else:
            future.set_result(False)
        return future

    run = code.take()
    assert code.run_code("x = 41", sandbox=run).ok
    old = run.live()
    monkeypatch.setattr(Renewal, "renew_soon", renew_soon)
    code.finish(run, TOOLS)
    nxt = code.take()
    assert nxt is run
    reply = code.run_code("print('x' in globals(), ping())", sandbox=nxt)  # waits its turn
    assert reply.ok and reply.result.stdout == "False pong\n", reply.text
    assert nxt.live() is not old and old.closed
    assert not nxt.lock.locked()
    code.finish(nxt, TOOLS)


def test_a_quiet_action_waits_until_hurried_or_a_command_comes(monkeypatch):
    """`after_turn(quiet=True)` waits for `QUIET_S` before it runs, unless `hurry` is called
    or a command comes, which then runs after it."""
    monkeypatch.setattr(loop_module, "QUIET_S", 60.0)
    from tooliscode import Session

    with Session([], limits=Limits(rollback_bytes=0)) as s:
        assert s.run("x = 1").ok
        worker = s._state.worker
        order: list[str] = []
        first = worker.after_turn(lambda _instance: order.append("action"), quiet=True)
        with pytest.raises(cf.TimeoutError):
            first.result(0.3)  # still waiting for quiet
        worker.hurry()
        first.result(30)
        second = worker.after_turn(lambda _instance: order.append("second"), quiet=True)
        assert s.run("x = 2").ok  # a command ends the wait too, and runs after the action
        assert second.done() and order == ["action", "second"]
        assert s.run("x").value == "2"
