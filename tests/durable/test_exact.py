"""Exact snapshots on the data runtime: the interpreter itself comes back, in this process and
in another worker process over a real Redis; damaged, foreign and mismatched ones are refused."""

from __future__ import annotations

import time

import pytest
from tooliscode import Limits, Session
from tooliscode.durable import SnapshotError, pack, unpack
from tooliscode.engine import snapshot_runtime

from .test_workers import workers  # noqa: F401 - the fixture

LIMITS = Limits(timeout_s=60)

# What pickling cannot carry: a generator mid-way, a lambda over a closure, an instance of a
# class with open-ended attributes, a DataFrame, a module's own state, the random stream.
STATE = '''
import random, json, pandas as pd
squares = (i * i for i in range(10))
next(squares), next(squares)
k = 3
times_k = lambda x: x * k
class Bag:
    pass
bag = Bag()
bag.anything = {"nested": [1, 2]}
bag.itself = bag
df = pd.DataFrame({"a": range(1000), "b": [f"r{i}" for i in range(1000)]})
json.remembered = "module state"
random.seed(7)
random.random()
notes = open("notes.txt", "w")
notes.write("kept")
notes.flush()
readers = [open("notes.txt"), open("notes.txt")]
import sys
console = sys.__stdout__
'''
CHECK = ("print(next(squares), times_k(2), bag.anything['nested'], bag.itself is bag, "
         "int(df.a.sum()), df.b.iloc[-1], json.remembered, random.random(), bump(1), "
         "open('notes.txt').read())")


def bump(n: int) -> int:
    """Add a hundred."""
    return n + 100


def halve(n: int) -> float:
    """Half of n."""
    return n / 2


@pytest.fixture(scope="module")
def made(data_runtime):
    """A snapshot of a session in STATE, and what CHECK printed in the original after it."""
    with Session([bump], runtime=data_runtime, limits=LIMITS) as s:
        result = s.run(STATE)
        assert result.ok, result.error
        blob = s.snapshot()
        expected = s.run(CHECK)
        assert expected.ok, expected.error
        return blob, expected.stdout


def test_an_exact_snapshot_brings_back_what_pickling_cannot(data_runtime, made):
    blob, expected = made
    assert unpack(blob, runtime=snapshot_runtime(data_runtime))[1]["kind"] == "memory"
    with Session.restore(blob, [bump], runtime=data_runtime, limits=LIMITS) as s:
        r = s.run(CHECK)
        assert r.ok, r.error
        assert r.stdout == expected  # the random stream goes on as in the original: no reseed
        (notice,) = r.notices
        assert "whole interpreter" in notice and "notes: an open file" in notice
        assert "readers: holds open files" in notice
        assert all(n not in notice for n in ("squares", "times_k", "console", "sys", "json"))
        assert s.run("x = 1").notices == ()
        # The old file object's descriptor is held by a placeholder: it never reaches a file
        # opened later, and the model gets an error, not someone else's data.
        r = s.run("other = open('other.txt', 'w')\nnotes.write('more'); notes.flush()")
        assert not r.ok
        assert s.run("other.write('new'); other.close()").ok
        assert s.read_file("other.txt") == b"new" and s.read_file("notes.txt") == b"kept"


def test_the_tools_are_the_restoring_sessions(data_runtime, made):
    blob, _ = made
    with Session.restore(blob, [halve], runtime=data_runtime, limits=LIMITS) as s:
        assert s.run("halve(9)").value == "4.5"
        r = s.run("bump(1)")
        assert not r.ok and "bump" in r.error
        assert "times_k" in s.names and "halve" not in s.names
        assert s.run("times_k(5)").value == "15"


def test_a_restored_session_snapshots_again(data_runtime, made):
    blob, _ = made
    with Session.restore(blob, [bump], runtime=data_runtime, limits=LIMITS) as s:
        assert s.run("more = next(squares)").ok
        again = s.snapshot()
    with Session.restore(again, [bump], runtime=data_runtime, limits=LIMITS) as s:
        assert s.run("print(more, next(squares))").stdout == "4 9\n"


def test_an_idle_snapshot_is_small(data_runtime):
    with Session([], runtime=data_runtime, limits=LIMITS) as s:
        s.run("x = 1")
        blob = s.snapshot()
    assert len(blob) < 1_000_000
    with Session.restore(blob, [], runtime=data_runtime, limits=LIMITS) as s:
        assert s.run("x").value == "1"


def test_new_small_objects_make_a_snapshot_of_about_their_size(data_runtime):
    # 40,000 two-item lists and their ints take about 5 MB of malloc's blocks here. Their
    # 16-byte blocks used to go to the free holes spread over the start image's heap, and the
    # snapshot then carried 8,000 of its pages (36 MB); the image's holes are filled at its
    # build now, so the lists take fresh pages at the top of the heap.
    with Session([], runtime=data_runtime, limits=LIMITS) as s:
        s.run("x = 1")
        idle = len(s.snapshot())
        s.run("pairs = [[i, -i] for i in range(40_000)]")
        blob = s.snapshot()
    assert len(blob) - idle < 8_000_000
    with Session.restore(blob, [], runtime=data_runtime, limits=LIMITS) as s:
        assert s.run("pairs[-1], len(pairs)").value == "([39999, -39999], 40000)"


def _resealed(blob: bytes, runtime, **changes) -> bytes:
    """`blob` with its metadata changed and sealed again, as a forger without a key could."""
    parts, meta = unpack(blob, runtime=snapshot_runtime(runtime))
    meta.update(changes.pop("meta", {}))
    parts.update(changes)
    return pack(parts, runtime=snapshot_runtime(runtime), meta=meta)


@pytest.mark.parametrize("case, message", [
    ("truncate", "integrity|cut short"),
    ("flip", "integrity"),
    ("other image", "does not have"),
    ("other content", "with content"),
    ("version", "version 99"),
    ("memory", "memory is damaged|could not be applied"),
    ("small limit", "Limits.memory_bytes"),
])
def test_bad_snapshots_are_refused_and_the_host_goes_on(data_runtime, made, case, message):
    blob, expected = made
    limits = LIMITS
    if case == "truncate":
        blob = blob[:len(blob) // 2]
    elif case == "flip":
        blob = bytearray(blob)
        blob[len(blob) - 100] ^= 0x10
        blob = bytes(blob)
    elif case == "other image":
        blob = _resealed(blob, data_runtime, meta={"image_file": "wasi-python-image-"
                                                                   + "0" * 32 + ".mem"})
    elif case == "other content":
        blob = _resealed(blob, data_runtime, meta={"image": "f" * 64})
    elif case == "version":
        blob = _resealed(blob, data_runtime, meta={"version": 99})
    elif case == "memory":
        blob = _resealed(blob, data_runtime, runs=b"\xff\xff\xff\x00\x05\x00\x00\x00")
    else:
        limits = Limits(timeout_s=60, memory_bytes=48 * 2**20)
    with pytest.raises(SnapshotError, match=message):
        Session.restore(blob, [bump], runtime=data_runtime, limits=limits)
    with Session.restore(made[0], [bump], runtime=data_runtime, limits=LIMITS) as s:
        assert s.run(CHECK).stdout == expected


def test_snapshots_of_the_other_runtime_or_key_are_refused(data_runtime, made):
    blob, _ = made
    with pytest.raises(SnapshotError, match="made on runtime 'data"):
        Session.restore(blob, [bump], runtime="default")
    with Session([bump], runtime="default") as s:
        s.run("x = 1")
        default = s.snapshot()
    with pytest.raises(SnapshotError, match="made on runtime 'component"):
        Session.restore(default, [bump], runtime=data_runtime)
    with Session([bump], runtime=data_runtime, limits=LIMITS) as s:
        s.run("x = 1")
        signed = s.snapshot(key="k1")
    with pytest.raises(SnapshotError, match="another key"):
        Session.restore(signed, [bump], runtime=data_runtime, key="k2")
    with Session.restore(signed, [bump], runtime=data_runtime, limits=LIMITS, key="k1") as s:
        assert s.run("x").value == "1"


def test_two_workers_alternate_on_one_exact_conversation(redis_url, workers):  # noqa: F811
    a = workers("redis", redis_url, runtime="data")
    b = workers("redis", redis_url, runtime="data")
    key = f"exact-{time.time_ns()}"
    setup = ("import random, pandas as pd\nsquares = (i * i for i in range(10))\n"
             "times_k = lambda x: x * bump(0)\nclass Bag: pass\nbag = Bag(); bag.n = 0\n"
             "df = pd.DataFrame({'a': range(100)})\nrandom.seed(3)")
    assert a.call(key, setup)["ok"]
    step = "bag.n += 1\nprint(next(squares), times_k(1), bag.n, int(df.a.sum()), random.random())"
    outputs = [w.call(key, step) for w in (b, a, b, a)]
    assert all(o["ok"] for o in outputs), outputs
    with Session([bump], runtime="data", limits=LIMITS) as here:  # the same steps, unmoved
        here.run(setup)
        assert [o["stdout"] for o in outputs] == [here.run(step).stdout for _ in range(4)]


def test_a_data_guest_without_the_start_image_snapshots_its_variables(data_runtime):
    small = Limits(timeout_s=60, memory_bytes=48 * 2**20)  # below the image: a bare start
    with Session([bump], runtime=data_runtime, limits=small) as s:
        assert s.run("x = bump(1)\ng = (i for i in range(3))").ok
        blob = s.snapshot()
    assert unpack(blob, runtime=snapshot_runtime(data_runtime))[1].get("kind") is None
    with Session.restore(blob, [bump], runtime=data_runtime, limits=small) as s:
        r = s.run("print(x)")
        assert r.stdout == "101\n" and "g: a generator" in r.notices[0]
