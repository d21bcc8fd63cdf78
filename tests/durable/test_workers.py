"""Durable conversations: two real worker processes share one conversation through a store,
one is killed mid-cell, calls for one key race, and the store goes down."""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tooliscode.durable import FolderStore

from .conftest import free_port

WORKER = Path(__file__).parent / "worker.py"


RUNTIME = os.environ.get("TOOLISCODE_RUNTIME") or "default"


class Worker:
    def __init__(self, kind: str, where: str, on_error: str = "error", lease_s: float = 2.0,
                 wait_s: float = 20.0, runtime: str = RUNTIME):
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), kind, where, on_error, str(lease_s), str(wait_s),
             runtime],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert json.loads(self._line()) == {"ready": True}

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the worker died"
        return line

    def send(self, key: str, code: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"key": key, "code": code}) + "\n")
        self.proc.stdin.flush()

    def reply(self) -> dict:
        return json.loads(self._line())

    def call(self, key: str, code: str) -> dict:
        self.send(key, code)
        return self.reply()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(30)


def _until_leased(folder: Path, key: str, held: bool = True) -> None:
    """Wait until some worker holds `key`'s lease in the folder store (its flock), or, with
    `held=False`, until none does."""
    lock = FolderStore(folder)._path(key, ".lock")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if lock.exists():
            with open(lock, "rb") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if held:
                        return
                else:
                    fcntl.flock(f, fcntl.LOCK_UN)
                    if not held:
                        return
        elif not held:
            return
        time.sleep(0.01)
    raise AssertionError(f"no worker took the lease of {key!r}")


@pytest.fixture
def workers(request):
    made: list[Worker] = []

    def make(*args, **kwargs) -> Worker:
        made.append(Worker(*args, **kwargs))
        return made[-1]

    yield make
    for w in made:
        w.close()


def test_two_workers_alternate_on_one_conversation(redis_url, workers):
    a, b = workers("redis", redis_url), workers("redis", redis_url)
    key = f"conv-{time.time_ns()}"
    assert a.call(key, "x = 1\ndef twice(n):\n    return 2 * bump(n)")["ok"]
    assert b.call(key, "x += 1\nprint(x, twice(x))")["stdout"] == "2 204\n"
    assert a.call(key, "x += 1\nprint(x)")["stdout"] == "3\n"  # a saw b's cell
    assert b.call(key, "print(x)")["stdout"] == "3\n"
    other = a.call(f"{key}-other", "print('x' in globals())")
    assert other["stdout"] == "False\n" and other["notices"] == []


def test_a_killed_worker_loses_only_the_running_cell(redis_url, workers):
    a, b = workers("redis", redis_url, lease_s=1.0), workers("redis", redis_url)
    key = f"kill-{time.time_ns()}"
    assert a.call(key, "y = 10")["ok"]
    a.send(key, "import time\ny = 99\ntime.sleep(60)")
    time.sleep(1.0)  # the cell is running (its lease held) when the worker dies
    a.kill()
    reply = b.call(key, "print(y)")  # waits for the dead worker's lease to run out
    assert reply["stdout"] == "10\n", reply
    assert "last cell of this conversation did not complete" in reply["notices"][0], reply
    assert "continues from the state saved after the cell before it" in reply["notices"][0]
    assert b.call(key, "print(y)")["notices"] == []  # told once


def test_an_answered_cell_survives_its_worker_killed_right_after(redis_url, workers):
    """The answer goes back only once the cell's state is stored: killing the worker the
    moment it has answered loses nothing the model read."""
    a, b = workers("redis", redis_url, lease_s=1.0), workers("redis", redis_url)
    key = f"answered-{time.time_ns()}"
    assert a.call(key, "x = 1")["ok"]
    time.sleep(1.0)
    assert a.call(key, "x = 2")["ok"]
    a.kill()  # right after the answer, before anything else happens in it
    reply = b.call(key, "print(x)")
    assert reply["stdout"] == "2\n" and reply["notices"] == [], reply


def test_a_lost_first_cell_is_said_too(redis_url, workers):
    a, b = workers("redis", redis_url, lease_s=1.0), workers("redis", redis_url)
    key = f"first-{time.time_ns()}"
    a.send(key, "import time\nx = 5\ntime.sleep(60)")
    time.sleep(1.0)
    a.kill()
    reply = b.call(key, "print('x' in globals())")
    assert reply["stdout"] == "False\n", reply
    assert "did not complete" in reply["notices"][0]
    assert "Nothing of this conversation was saved before it" in reply["notices"][0]


def test_a_call_racing_another_worker_waits_for_it(tmp_path, workers):
    a = workers("folder", str(tmp_path))
    b = workers("folder", str(tmp_path))
    key = "race"
    assert a.call(key, "z = 0")["ok"]
    # The answer comes before the save that holds the lease: the lease to wait for is the
    # next cell's, not that save's (on a busy machine b would otherwise go between them).
    _until_leased(tmp_path, key, held=False)
    a.send(key, "import time\ntime.sleep(1.5)\nz += 1")
    _until_leased(tmp_path, key)
    assert b.call(key, "z += 1\nprint(z)")["stdout"] == "2\n"  # after a's cell, not beside it
    assert a.reply()["ok"]


def test_a_call_that_cannot_wait_long_enough_fails_clearly(tmp_path, workers):
    a = workers("folder", str(tmp_path))
    b = workers("folder", str(tmp_path), wait_s=0.3)
    # Long enough for b, a new process that may still be importing on a loaded machine, to
    # ask for the lease while a's cell holds it.
    a.send("busy", "import time\ntime.sleep(3)")
    _until_leased(tmp_path, "busy")
    reply = b.call("busy", "print(1)")
    assert "LeaseHeld" in reply["error"] and "busy in another worker" in reply["error"]
    assert a.reply()["ok"]


def test_a_store_that_is_down_is_an_error_or_a_fresh_session(workers):
    down = f"redis://127.0.0.1:{free_port()}/0"
    started = time.monotonic()
    reply = workers("redis", down, "error").call("k", "print(1)")
    assert "StoreUnavailable" in reply["error"]
    assert time.monotonic() - started < 30  # an answer, not a hang
    reply = workers("redis", down, "fresh").call("k", "print(1)")
    assert reply["stdout"] == "1\n" and "could not be reached" in reply["notices"][0]


def test_a_fleet_with_workers_killed_loses_no_answered_cell(redis_url, workers):
    """Three workers, conversations routed at random, workers SIGKILLed now and then (mid-cell
    and right after an answer) and replaced: every cell that was answered is in the final
    state of its conversation, and every cell that was cut off is reported on the next call."""
    rng = random.Random(7)
    fleet = [workers("redis", redis_url, lease_s=1.0, wait_s=30) for _ in range(3)]
    keys = [f"fleet-{time.time_ns()}-{c}" for c in range(4)]
    answered: dict[str, list[int]] = {k: [] for k in keys}
    cut: dict[str, list[int]] = {k: [] for k in keys}
    told: dict[str, int] = {k: 0 for k in keys}
    kills = {(1, 2): "mid-cell", (2, 1): "after", (4, 3): "mid-cell"}
    for step in range(6):
        for c, key in enumerate(keys):
            cell = f"done = globals().get('done', [])\ndone.append({step})\nprint(len(done))"
            w = rng.randrange(len(fleet))
            how = kills.get((step, c))
            if how == "mid-cell":
                fleet[w].send(key, "import time\n" + cell + "\ntime.sleep(30)")
                time.sleep(0.5)
                fleet[w].kill()
                cut[key].append(step)
                fleet[w] = workers("redis", redis_url, lease_s=1.0, wait_s=30)
                continue
            reply = fleet[w].call(key, cell)
            assert reply["ok"], reply
            answered[key].append(step)
            told[key] += sum("did not complete" in n for n in reply["notices"])
            if how == "after":
                fleet[w].kill()
                fleet[w] = workers("redis", redis_url, lease_s=1.0, wait_s=30)
    for key in keys:
        reply = fleet[rng.randrange(len(fleet))].call(key, "print(done)")
        final = json.loads(reply["stdout"])
        assert final == sorted(final) and set(answered[key]) <= set(final), (key, final)
        assert not set(cut[key]) & set(final), (key, final, cut[key])
        assert told[key] == len(cut[key]), (key, told[key], cut[key])
