"""Session.snapshot / Session.restore on the default runtime: what comes along, what is named
as left behind, and what is refused."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from tooliscode import Session
from tooliscode.durable import SnapshotError


def get_price(sku: str) -> float:
    """The unit price of a product."""
    return {"a": 1.5, "b": 2.0}[sku]


STATE = '''
import json, collections, array
class Cart:
    tax = 0.2
    def __init__(self):
        self.items = []
    def add(self, sku, n=1):
        self.items.append((sku, n))
        return self
    def total(self):
        return sum(get_price(s) * n for s, n in self.items) * (1 + self.tax)
class Bulk(Cart):
    def total(self):
        return round(super().total() * 10, 6)
def counter(start):
    count = start
    def step():
        nonlocal count
        count += 1
        return count
    return step
cart = Cart().add("a", 2).add("b")
bulk = Bulk().add("a")
step = counter(5)
step()
rows = [{"i": i} for i in range(1000)]
Point = collections.namedtuple("Point", "x y")
p = Point(1, 2)
price = get_price
open("notes.txt", "w").write("kept")
handle = open("notes.txt")
gen = (i for i in range(3))
buf = bytearray(b"ab")
data = {"nums": array.array("i", [1, 2]), "raw": [bytearray(b"c"), b"d"]}
import dataclasses, enum, typing
@dataclasses.dataclass(order=True)
class Line:
    sku: str
    n: int = 1
    tags: list = dataclasses.field(default_factory=list, metadata={"unit": "pcs"})
class Pair(typing.NamedTuple):
    x: int
    y: int = 0
class Size(enum.IntEnum):
    S = 1
    M = 2
class Tone(str, enum.Enum):
    WARM = "warm"
    COOL = "cool"
    def loud(self):
        return self.value.upper()
class Perm(enum.Flag):
    R = enum.auto()
    W = enum.auto()
lines = [Line("b", 2, ["x"]), Line("a")]
pair, size, tone, perm = Pair(1), Size.M, Tone.COOL, Perm.R | Perm.W
import abc, functools
class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self): ...
class Square(Shape):
    def __init__(self, side):
        self.side = side
    def area(self):
        return self.side ** 2
@functools.cache
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
square = Square(3)
'''
CLASSES = ("print(sorted(lines), dataclasses.fields(Line)[2].metadata['unit'], "
           "Line.__annotations__['n'] is int, pair._replace(y=5), size + 1, tone.loud(), "
           "Tone('warm') is Tone.WARM, perm, Perm.R in perm, square.area(), "
           "isinstance(square, Shape), sorted(Shape.__abstractmethods__), fib(80))")
"""The classes Python's own machinery makes (a dataclass, a NamedTuple, enums, an ABC) and a
cached function come back whole: the default runtime rebuilds them by value."""
CHECK = ("print(cart.total(), bulk.total(), step(), len(rows), isinstance(bulk, Cart), "
         "price('b'), p, open('notes.txt').read(), json.dumps([1]), buf + b'!', "
         "data['nums'].tolist(), data['raw'])")
EXPECTED = ("6.0 18.0 7 1000 True 2.0 Point(x=1, y=2) kept [1] bytearray(b'ab!') [1, 2] "
            "[bytearray(b'c'), b'd']\n")
CLASSES_PRINTED = ("[Line(sku='a', n=1, tags=[]), Line(sku='b', n=2, tags=['x'])] pcs True "
                   "Pair(x=1, y=5) 3 COOL True Perm.R|W True 9 True ['area'] "
                   "23416728348467685\n")


@pytest.fixture(scope="module")
def blob() -> bytes:
    with Session([get_price]) as s:
        assert s.run(STATE).ok
        return s.snapshot()


def test_variables_definitions_imports_and_files_come_back(blob):
    with Session.restore(blob, [get_price]) as s:
        r = s.run(CHECK)
        assert r.ok, r.error
        assert r.stdout == EXPECTED
        classes = s.run(CLASSES)
        assert classes.stdout == CLASSES_PRINTED, classes.error
        (notice,) = r.notices
        assert "restored from a snapshot" in notice
        assert "handle: an open file" in notice
        if s.runtime.exact:  # the data runtime copies the interpreter: the generator too
            assert "whole interpreter" in notice and "gen:" not in notice
        else:
            assert "gen: a generator" in notice
        assert s.run("x = 1").notices == ()  # told once


def test_a_snapshot_restores_in_another_process(blob, tmp_path):
    (tmp_path / "blob.bin").write_bytes(blob)
    script = ("from tooliscode import Session\n"
              f"def get_price(sku: str) -> float:\n    return {{'a': 1.5, 'b': 2.0}}[sku]\n"
              f"s = Session.restore(open({str(tmp_path / 'blob.bin')!r}, 'rb').read(),\n"
              f"                    [get_price])\n"
              f"print(s.run({CHECK!r}).stdout, end='')\n"
              f"print(s.run({CLASSES!r}).stdout, end='')\ns.close()\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout == EXPECTED + CLASSES_PRINTED, out.stderr


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_snapshots_are_refused_before_a_session_starts(blob, damage):
    bad = bytearray(blob)
    if damage == "truncate":
        bad = bad[:-10]
    else:
        bad[len(bad) // 3] ^= 0x40
    with pytest.raises(SnapshotError):
        Session.restore(bytes(bad), [get_price])


def test_signed_snapshots_need_their_key(blob):
    with Session([get_price]) as s:
        s.run("x = 41")
        signed = s.snapshot(key="k")
    with pytest.raises(SnapshotError):
        Session.restore(signed, [get_price])
    with pytest.raises(SnapshotError):
        Session.restore(blob, [get_price], key="k")  # unsigned, but a key is configured
    with Session.restore(signed, [get_price], key="k") as s:
        assert s.run("x + 1").value == "42"


def test_a_snapshot_waits_for_the_running_cell():
    began = threading.Event()

    def started() -> None:
        """The cell is running."""
        began.set()

    with Session([get_price, started]) as s:
        s.run("import time")
        running = threading.Thread(target=s.run,
                                   args=("started()\ntime.sleep(0.5)\ndone = True",))
        running.start()
        assert began.wait(60)
        blob = s.snapshot()
        running.join()
    with Session.restore(blob, [get_price]) as r:
        assert r.run("done").value == "True"
