"""How a session's variables become bytes and come back (guest/persist.py), run here on this
interpreter: plain data goes alone and fast, and still comes back with its own types."""

from __future__ import annotations

import array
import marshal
import pickle

from tooliscode.guest import persist


class Cart:
    pass


def _round_trip(values: dict) -> tuple[dict, dict, dict]:
    """(what came back, what was left out, the state's own parts)."""
    data, dropped = persist.dump(values, list(values), {})
    back: dict = {}
    assert persist.load(data, back, {}) == {}
    return back, dropped, pickle.loads(data)


def test_data_with_buffers_comes_back_with_its_types():
    """marshal writes a bytearray or an array.array as bytes: none of them may go by it."""
    values = {"buf": bytearray(b"ab"), "nums": array.array("i", [1, 2]),
              "rows": [{"raw": bytearray(b"c"), "b": b"d"}], "pair": (bytearray(b"e"), 1)}
    back, dropped, _ = _round_trip(values)
    assert dropped == {}
    assert back == values
    assert type(back["buf"]) is bytearray and type(back["nums"]) is array.array
    assert type(back["rows"][0]["raw"]) is bytearray and type(back["pair"][0]) is bytearray


def test_plain_values_skip_the_full_pickler_and_others_keep_it():
    values = {"n": 5, "s": "x", "c": 2j, "rows": [{"id": 1, "v": 1.5}], "tags": {"a", "b"},
              "frozen": frozenset({1}), "buf": bytearray(b"x"), "cart": Cart(),
              "kinds": [Cart], "calls": [len], "more": [...]}
    back, dropped, state = _round_trip(values)
    assert state["format"] == 3
    assert set(state["marshalled"]) == {"n", "s", "c"}
    assert set(state["pickled"]) == {"rows", "tags", "frozen", "buf"}
    assert dropped == {}
    assert back["kinds"] == [Cart] and back["calls"] == [len] and back["more"] == [...]
    assert isinstance(back["cart"], Cart)
    assert {k: back[k] for k in ("n", "s", "c", "rows", "tags", "frozen", "buf")} == \
        {k: values[k] for k in ("n", "s", "c", "rows", "tags", "frozen", "buf")}


def test_a_state_in_the_last_format_still_loads():
    """A snapshot stored before format 3 (each plain value marshalled) is read as it was."""
    old = pickle.dumps({"format": 2, "values": b"", "modules": [],
                        "marshalled": {"rows": marshal.dumps([{"id": 1}]), "n": marshal.dumps(3)}})
    back: dict = {}
    assert persist.load(old, back, {}) == {}
    assert back == {"rows": [{"id": 1}], "n": 3}


def test_data_nested_past_the_recursion_limit_is_named_not_lost_silently():
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    back, dropped, _ = _round_trip({"deep": deep, "n": 1})
    assert back == {"n": 1}
    assert "RecursionError" in dropped["deep"]
