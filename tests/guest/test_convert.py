"""The one rule that turns a tool's return value into JSON for the guest, without a guest."""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import decimal
import enum
import json
import math
import uuid
from pathlib import PurePosixPath
from typing import NamedTuple

import pydantic
import pytest
from tooliscode.guest.convert import to_json_value


class Colour(enum.Enum):
    RED = "red"
    ONE = 1


class Pair(NamedTuple):
    left: int
    right: str


@dataclasses.dataclass
class Point:
    x: int
    when: dt.date
    hidden: dataclasses.InitVar[int] = 0


class Item(pydantic.BaseModel):
    name: str
    at: dt.datetime


class Tagged(str):
    pass


class Array:
    """Quacks like a NumPy array."""

    def tolist(self) -> list:
        return [[1, 2], [3, 4]]


class BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


@pytest.mark.parametrize("value", [None, True, 0, -7, 2.5, "", "text", "ünï €"])
def test_json_scalars_pass_unchanged(value):
    assert to_json_value(value) == value and type(to_json_value(value)) is type(value)


def test_plain_json_is_returned_without_a_copy():
    rows = [{"id": i, "tags": ["a", None], "score": 1.5} for i in range(100)]
    assert to_json_value(rows) is rows


def test_nan_and_infinities_pass():
    out = to_json_value([math.nan, math.inf, -math.inf])
    assert math.isnan(out[0]) and out[1:] == [math.inf, -math.inf]


def test_mapping_keys_become_strings_the_way_json_does():
    out = to_json_value({7: "a", None: "c", 2.5: "d", math.inf: "e", Colour.RED: "f",
                         (1, 2): "g"})
    assert out == {"7": "a", "null": "c", "2.5": "d", "Infinity": "e", "red": "f",
                   "(1, 2)": "g"}
    assert list(to_json_value({True: 0, math.nan: 1, -math.inf: 2})) == \
        ["true", "NaN", "-Infinity"]
    assert list(to_json_value({False: 0})) == ["false"]


def test_sequences_and_sets_become_lists():
    assert to_json_value((1, "a")) == [1, "a"]
    assert to_json_value({3, 1, 2}) == [1, 2, 3]  # sorted when they can be
    assert sorted(to_json_value({1, "a"}), key=str) == [1, "a"]  # kept when they cannot
    assert to_json_value(frozenset({"b", "a"})) == ["a", "b"]
    assert to_json_value(collections.deque([1, 2])) == [1, 2]
    assert to_json_value(i * i for i in range(4)) == [0, 1, 4, 9]
    assert to_json_value(iter(["x"])) == ["x"]


def test_named_tuples_dataclasses_and_models_become_dicts():
    assert to_json_value(Pair(1, "b")) == {"left": 1, "right": "b"}
    assert to_json_value(Point(3, dt.date(2024, 2, 29))) == {"x": 3, "when": "2024-02-29"}
    item = Item(name="cup", at=dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc))
    assert to_json_value(item) == {"name": "cup", "at": "2024-01-02T03:04:05Z"}
    assert to_json_value(Point).startswith("<class ")  # the class itself is not a record


def test_bytes_are_text_when_they_can_be():
    assert to_json_value(b"caf\xc3\xa9") == "café"
    assert to_json_value(bytearray(b"ok")) == "ok"
    assert to_json_value(memoryview(b"mv")) == "mv"
    assert to_json_value(b"\xff\x00") == {"type": "bytes", "base64": "/wA="}


def test_dates_numbers_and_names_become_text():
    assert to_json_value(dt.datetime(2024, 5, 6, 7, 8)) == "2024-05-06T07:08:00"
    assert to_json_value(dt.date(2024, 5, 6)) == "2024-05-06"
    assert to_json_value(dt.time(7, 8, 9)) == "07:08:09"
    assert to_json_value(dt.timedelta(minutes=1, milliseconds=500)) == 60.5
    assert to_json_value(decimal.Decimal("1.10")) == "1.10"
    key = uuid.UUID(int=1)
    assert to_json_value(key) == str(key)
    assert to_json_value(PurePosixPath("/a/b")) == "/a/b"
    assert to_json_value(1 + 2j) == "(1+2j)"


def test_enums_become_their_value_and_scalar_subclasses_plain_scalars():
    assert to_json_value([Colour.RED, Colour.ONE]) == ["red", 1]
    out = to_json_value(Tagged("t"))
    assert out == "t" and type(out) is str
    assert type(to_json_value(Colour.ONE)) is int


def test_objects_with_tolist_use_it():
    assert to_json_value({"m": Array()}) == {"m": [[1, 2], [3, 4]]}


def test_anything_else_becomes_its_repr_and_nothing_raises():
    class Thing:
        def __repr__(self) -> str:
            return "<thing>"

    assert to_json_value([Thing()]) == ["<thing>"]
    out = to_json_value({"bad": BrokenRepr()})
    assert out["bad"].startswith("<unconvertible BrokenRepr: RuntimeError('no repr for you')")


def test_cycles_and_deep_nesting_become_markers():
    loop: list = [1]
    loop.append(loop)
    assert to_json_value(loop) == [1, "<cycle>"]
    shared = {"k": 1}
    assert to_json_value(({"a": shared}, {"b": shared})) == [{"a": {"k": 1}}, {"b": {"k": 1}}]
    deep: list = []
    for _ in range(1_000):
        deep = [deep]
    text = json.dumps(to_json_value(deep))  # the result is JSON, however deep the input
    assert "<nested too deep>" in text


def test_the_result_always_serialises():
    value = {"when": dt.date(2024, 1, 1), "ids": {uuid.UUID(int=2)}, "raw": b"\x80",
             "p": Pair(1, "x"), 3: [Colour.RED, None]}
    assert json.loads(json.dumps(to_json_value(value)))["3"] == ["red", None]
