"""A run's guest renewed for the next run (engine/_renewal.py): the same guest, back to the
moment after its setup, or a new one where that cannot be done safely."""

from __future__ import annotations

import pytest
from tooliscode import Limits, Tool
from tooliscode.codetool import CodeTool, Sandbox, Toolbox


def ping() -> str:
    """Answers pong."""
    return "pong"


TOOLS = Toolbox.of([Tool.from_function(ping)])


@pytest.fixture
def code(data_runtime):
    with CodeTool(TOOLS, keep_spare=True, runtime=data_runtime,
                  limits=Limits(timeout_s=20)) as tool:
        yield tool


def _first_run(code: CodeTool, source: str) -> tuple[Sandbox, object]:
    run = code.take()
    reply = code.run_code(source, sandbox=run)
    assert reply.ok, reply.text
    return run, run.session


def test_a_guest_is_renewed_in_place_and_its_tools_still_work(code, next_run):
    run, session = _first_run(code, "big = list(range(1000)); print(ping())")
    for _ in range(3):
        run = next_run(code, run, TOOLS)
        assert run.session is session  # renewed: no new guest was made
        reply = code.run_code("print('big' in globals(), ping())", sandbox=run)
        assert reply.text.strip() == "False pong", reply.text


def test_the_first_cell_of_a_renewed_guest_sees_no_earlier_cell(code, next_run):
    run, _ = _first_run(code, "x = 1")
    run = next_run(code, run, TOOLS)
    reply = code.run_code("x = 2\nprint(x)", sandbox=run)
    assert reply.ok and reply.result.names == ("x",)


@pytest.mark.parametrize("source", [
    "grown = bytearray(64 << 20)",  # memory grew: its allocator knows pages past the baseline
    "import os\nos.close(3)",  # a preopen closed: the guest's descriptors are not all known
    "import os\nos.close(1)",  # the console's descriptor
])
def test_a_guest_that_cannot_be_renewed_safely_is_replaced(code, source, next_run):
    run, session = _first_run(code, source)
    run = next_run(code, run, TOOLS)
    assert run.session is not session
    reply = code.run_code("print(sorted(globals().keys() & {'grown', 'f', 'os'}), ping())",
                          sandbox=run)
    assert reply.text.strip() == "[] pong", reply.text


def test_a_guest_stopped_by_its_time_limit_is_replaced(data_runtime, next_run):
    with CodeTool(TOOLS, keep_spare=True, runtime=data_runtime,
                  limits=Limits(timeout_s=0.5)) as code:
        run = code.take()
        session = run.session
        assert "TimeoutError" in code.run_code("x = 1\nwhile True: pass", sandbox=run).text
        run = next_run(code, run, TOOLS)  # its session's new guest took no baseline: not renewed
        assert run.session is not session
        assert code.run_code("print(ping())", sandbox=run).text.strip() == "pong"


def test_a_renewed_guest_comes_back_to_its_own_runs_point_not_the_last_runs(data_runtime,
                                                                                  next_run):
    """The renewed guest keeps committing into the last run's point (its next commit brings
    it up to date): a cell stopped in the next run comes back to that run's state exactly,
    with nothing of the run before."""
    with CodeTool(TOOLS, keep_spare=True, runtime=data_runtime,
                  limits=Limits(timeout_s=1.0)) as code:
        run = code.take()
        for cell in ("old = list(range(5000))", "older = {'k': old}", "import random"):
            assert code.run_code(cell, sandbox=run).ok  # later cells commit points
        for n in range(2):
            run = next_run(code, run, TOOLS)
            assert code.run_code(f"a = [{n}] * 100\nimport random\nr = random.random()",
                                 sandbox=run).ok
            assert code.run_code("b = a + [1]", sandbox=run).ok  # the point is made first
            stopped = code.run_code("a.append(2); del b\nwhile True: pass", sandbox=run)
            assert "TimeoutError" in stopped.text and stopped.result.rolled_back, stopped.text
            reply = code.run_code(f"print(a == [{n}] * 100, b == a + [1], r == r, "
                                  "sorted(k for k in ('old', 'older') if k in globals()))",
                                  sandbox=run)
            assert reply.text.strip() == "True True True []", reply.text
