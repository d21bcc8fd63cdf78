"""A run's default-runtime guest renewed for the next run: its memory written back to the
moment after its setup (`runtime/component/_memory.py`), or, where a run left what that
cannot undo, its component started again."""

from __future__ import annotations

import pytest
from tooliscode import Limits, Tool
from tooliscode.codetool import CodeTool, Sandbox, Toolbox
from tooliscode.runtime import runtime_named


def ping() -> str:
    """Answers pong."""
    return "pong"


TOOLS = Toolbox.of([Tool.from_function(ping)])
TRACES = """
import json, os, random, builtins, sys
os.makedirs("/session/sub", exist_ok=True)
with open("/session/sub/secret.txt", "w") as f:
    f.write("s3cret")
json.marked = True
builtins.leak = sys.modules["planted"] = "from the last run"
big = [str(i) * 10 for i in range(2000)]
print(random.random(), ping())
"""
LOOK = """
import json, os, random, builtins, sys
print(sorted(os.listdir("/session")), hasattr(json, "marked"), "big" in globals(),
      hasattr(builtins, "leak") or "planted" in sys.modules, ping())
print(random.random())
"""


@pytest.fixture(scope="module")
def code():
    with CodeTool(TOOLS, keep_spare=True, runtime=runtime_named("default"),
                  limits=Limits(timeout_s=20)) as tool:
        yield tool


def _store(run: Sandbox) -> object:
    return run.session._state.worker.instance._store


def _ok(code: CodeTool, run: Sandbox, source: str) -> str:
    reply = code.run_code(source, sandbox=run)
    assert reply.ok, reply.text
    return reply.result.stdout


def test_a_guest_is_renewed_in_place_and_finds_nothing_of_the_run_before(code, next_run):
    run = code.take()
    numbers = {_ok(code, run, TRACES).split()[0]}
    store = None
    for _ in range(4):
        run = next_run(code, run, TOOLS)
        # written back: no new instance (but at the first renewal of a guest that started in
        # a slot, which starts it again off the slot: test_slots.py)
        assert store is None or _store(run) is store
        store = _store(run)
        listing, number = _ok(code, run, LOOK).splitlines()
        assert listing == "[] False False False pong"
        assert number not in numbers  # a random stream of its own
        numbers.add(number)
        _ok(code, run, TRACES)
    code.finish(run, TOOLS)


def test_a_run_that_allocates_within_the_headroom_is_written_back(code, next_run):
    run = code.take()
    _ok(code, run, "x = 1")
    run = next_run(code, run, TOOLS)
    store = _store(run)
    _ok(code, run, "big = bytearray(8 << 20)\nrows = [{'id': i} for i in range(20000)]")
    run = next_run(code, run, TOOLS)
    assert _store(run) is store
    assert _ok(code, run, LOOK).splitlines()[0] == "[] False False False pong"
    code.finish(run, TOOLS)


def test_a_guest_the_limit_leaves_no_headroom_is_written_back_all_the_same(next_run):
    runtime = runtime_named("default")
    limits = Limits(timeout_s=20, memory_bytes=runtime.min_memory_bytes)
    with CodeTool(TOOLS, keep_spare=True, runtime=runtime, limits=limits) as tight:
        run = tight.take()
        _ok(tight, run, "x = 1")
        store = _store(run)
        run = next_run(tight, run, TOOLS)
        assert _store(run) is store
        assert _ok(tight, run, LOOK).splitlines()[0] == "[] False False False pong"
        reply = tight.run_code("big = bytearray(64 << 20)", sandbox=run)
        assert "MemoryError" in reply.text
        tight.finish(run, TOOLS)


@pytest.mark.parametrize("source", [
    "grown = bytearray(64 << 20)",  # its allocator would not know the pages past the baseline
    "kept = open('/session/kept.txt', 'w')",  # a descriptor still open
    "import os\nos.close(3)",  # a descriptor the memory names: the session folder's
    "import os\nos.write(1, b'')\nos.close(1)",  # the console's stream
    "import os\nos.close(0)",  # the console's input, taken before the baseline
])
def test_what_cannot_be_written_back_gets_a_new_instance(code, next_run, source):
    run = code.take()
    _ok(code, run, "x = 1")
    run = next_run(code, run, TOOLS)  # the guest the run below changes is a renewed one
    store = _store(run)
    _ok(code, run, source)
    run = next_run(code, run, TOOLS)
    assert _store(run) is not store
    assert _ok(code, run, LOOK).splitlines()[0] == "[] False False False pong"
    store = _store(run)
    run = next_run(code, run, TOOLS)  # and the new instance is written back again
    assert _store(run) is store
    assert _ok(code, run, "print(ping())").strip() == "pong"
    code.finish(run, TOOLS)
