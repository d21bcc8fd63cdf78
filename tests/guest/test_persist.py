"""How a session's variables become bytes and come back (guest/persist.py), run here on this
interpreter: one pickle, in C for plain data, with every type and every shared object kept."""

from __future__ import annotations

import array
import collections
import io
import marshal
import pickle
import sys

import pytest
from tooliscode.guest import persist


class Cart:
    pass


class Listing(dict):
    """A dict whose keys() is no view."""

    def keys(self):  # type: ignore[override]
        return list(super().keys())


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


def test_objects_shared_between_names_stay_shared():
    rows = [{"id": 1, "v": 1.5}]
    cart = Cart()
    cart.rows = rows
    values = {"rows": rows, "first": rows[0], "cart": cart, "kinds": [Cart], "calls": [len],
              "more": [...], "tags": {"a"}, "n": 2j}
    back, dropped, state = _round_trip(values)
    assert state["format"] == 3 and dropped == {}
    assert back["first"] is back["rows"][0] and back["cart"].rows is back["rows"]
    assert back["kinds"] == [Cart] and back["calls"] == [len] and back["more"] == [...]
    assert back["tags"] == {"a"} and back["n"] == 2j


def test_tools_are_the_new_sessions_own():
    def tool() -> None: ...

    def other() -> None: ...

    data, dropped = persist.dump({"t": tool, "held": [tool]}, ["t", "held"], {"tool": tool})
    back: dict = {}
    assert persist.load(data, back, {"tool": other}) == {}
    assert back["t"] is other and back["held"] == [other]


def test_a_new_setups_tools_are_named_not_the_last_ones():
    """What `dump` keeps of the last helpers it was given goes with a new setup's."""
    def first() -> None: ...

    def second() -> None: ...

    persist.dump({"t": first}, ["t"], {"tool": first})
    data, _ = persist.dump({"t": second}, ["t"], {"tool": second})
    back: dict = {}
    assert persist.load(data, back, {"tool": first}) == {}
    assert back["t"] is first  # named as the tool, not pickled by value


def test_a_state_in_the_last_format_still_loads():
    """A snapshot stored before format 3 (plain values marshalled one by one, tools named by
    persistent id) is read as it was."""

    def tool() -> None: ...

    class Named(pickle.Pickler):
        def persistent_id(self, obj):
            return "tool" if obj is tool else None

    out = io.BytesIO()
    Named(out, protocol=5).dump({"held": [tool]})
    old = pickle.dumps({"format": 2, "values": out.getvalue(), "modules": [],
                        "marshalled": {"rows": marshal.dumps([{"id": 1}]), "n": marshal.dumps(3)}})
    back: dict = {}
    assert persist.load(old, back, {"tool": tool}) == {}
    assert back == {"rows": [{"id": 1}], "n": 3, "held": [tool]}


def test_data_nested_past_the_recursion_limit_is_named_not_lost_silently():
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    back, dropped, _ = _round_trip({"deep": deep, "n": 1})
    assert back == {"n": 1}
    assert "RecursionError" in dropped["deep"]


class _OutOfMemory:
    def __reduce__(self):
        raise MemoryError


def test_running_out_of_memory_is_the_guests_not_a_name_left_out():
    """The command loop must see a MemoryError (it gives back the room it held in reserve
    only then), not a state saved without the name that was being pickled."""
    with pytest.raises(MemoryError):
        persist.dump({"big": _OutOfMemory(), "n": 1}, ["big", "n"], {})


class _NeedsArgument:
    def __init__(self, x):
        self.x = x

    def __reduce__(self):  # pickles, but cannot be made again
        return _NeedsArgument, ()


class _BadState:
    def __init__(self):
        self.a = 1

    def __setstate__(self, state):
        raise ValueError("no such state")


class _Gone:
    pass


def test_a_name_whose_object_cannot_be_made_again_is_left_out_alone(monkeypatch):
    shared = {"rows": [1, 2]}
    values = {"keep": 5, "shared": shared, "also": [shared], "bad": [_NeedsArgument(1)],
              "state": _BadState(), "gone": {"inner": [_Gone()]}, "fine": Cart()}
    data, dropped = persist.dump(values, list(values), {})
    assert dropped == {}
    monkeypatch.delattr(sys.modules[__name__], "_Gone")  # its class no longer found by name
    back: dict = {}
    failed = persist.load(data, back, {})
    assert set(failed) == {"bad", "state", "gone"}, failed
    assert "TypeError" in failed["bad"] and "no such state" in failed["state"]
    assert "_Gone" in failed["gone"]
    assert back["keep"] == 5 and back["also"][0] is back["shared"]
    assert isinstance(back["fine"], Cart)
    assert not {"bad", "state", "gone"} & set(back)


def test_a_tool_the_new_session_lacks_costs_only_the_names_holding_it():
    def tool() -> None: ...

    data, _ = persist.dump({"t": [tool], "n": 1}, ["t", "n"], {"tool": tool})
    back: dict = {}
    failed = persist.load(data, back, {})
    assert back == {"n": 1} and "the new session has no 'tool'" in failed["t"]


def test_enums_come_back_with_their_members_and_methods():
    import enum

    namespace: dict = {"__name__": "__main__"}
    exec("import enum\n"
         "class Base(enum.Enum):\n"
         "    def shout(self):\n"
         "        return str(self.value).upper()\n"
         "class Tone(str, Base):\n"
         "    WARM = 'warm'\n"
         "    COOL = 'cool'\n"
         "class Size(enum.IntEnum):\n"
         "    S = 1\n"
         "    M = 2\n"
         "picked = [Tone.COOL, Size.M]\n", namespace)
    names = ["Base", "Tone", "Size", "picked"]
    data, dropped = persist.dump(namespace, names, {})
    assert dropped == {}
    back: dict = {}
    assert persist.load(data, back, {}) == {}
    tone, size = back["picked"]
    assert tone is back["Tone"].COOL and tone.shout() == "COOL" and tone == "cool"
    assert size is back["Size"].M and size + 1 == 3
    assert issubclass(back["Tone"], back["Base"]) and isinstance(tone, enum.Enum)


def test_a_subclass_is_made_again_without_its_bases_init_subclass():
    """What `__init_subclass__` did when the cells made the class is in the state; run again
    while loading, it did it twice (and read globals not back yet)."""
    namespace: dict = {"__name__": "__main__"}
    exec("class Plugin:\n"
         "    registry = []\n"
         "    def __init_subclass__(cls, **kwargs):\n"
         "        super().__init_subclass__(**kwargs)\n"
         "        Plugin.registry.append(cls.__name__)\n"
         "class Csv(Plugin):\n"
         "    pass\n", namespace)
    data, dropped = persist.dump(namespace, ["Plugin", "Csv"], {})
    assert dropped == {}
    back: dict = {}
    assert persist.load(data, back, {}) == {}
    assert back["Plugin"].registry == ["Csv"] and issubclass(back["Csv"], back["Plugin"])
    exec("class Json(Plugin):\n    pass\n", back)
    assert back["Plugin"].registry == ["Csv", "Json"]


def test_closures_that_hold_their_own_function_come_back():
    """A closure's contents went with the function's making: one that calls itself (or two
    that call each other) recursed until the pickler gave up, and the name was lost."""
    namespace: dict = {"__name__": "__main__"}
    exec("def outer():\n"
         "    def walk(n):\n"
         "        return walk(n - 1) + 1 if n else 0\n"
         "    def later():\n"
         "        return unset\n"
         "    def ping(n):\n"
         "        return pong(n - 1) if n else 'ping'\n"
         "    def pong(n):\n"
         "        return ping(n - 1) if n else 'pong'\n"
         "    out = walk, later, ping\n"
         "    unset = 1\n"
         "    del unset\n"
         "    return out\n"
         "walk, later, ping = outer()\n", namespace)
    data, dropped = persist.dump(namespace, ["walk", "later", "ping"], {})
    assert dropped == {}
    back: dict = {}
    assert persist.load(data, back, {}) == {}
    assert back["walk"](5) == 5 and back["ping"](3) == "pong"
    with pytest.raises(NameError):  # its cell empty, as it was
        back["later"]()


def test_exceptions_generics_and_type_vars_of_the_cells_come_back():
    namespace: dict = {"__name__": "__main__"}
    exec("import typing\n"
         "T = typing.TypeVar('T', bound=int)\n"
         "class Box(typing.Generic[T]):\n"
         "    def __init__(self, v):\n"
         "        self.v = v\n"
         "class AppError(Exception):\n"
         "    def __init__(self, code, message):\n"
         "        super().__init__(message)\n"
         "        self.code = code\n"
         "box = Box[int](3)\n"
         "errors = [AppError(404, 'missing')]\n", namespace)
    names = ["T", "Box", "AppError", "box", "errors"]
    data, dropped = persist.dump(namespace, names, {})
    assert dropped == {}
    back: dict = {}
    assert persist.load(data, back, {}) == {}
    (error,) = back["errors"]
    assert type(error) is back["AppError"] and error.code == 404 and str(error) == "missing"
    assert back["Box"].__parameters__ == (back["T"],) and back["T"].__bound__ is int
    assert isinstance(back["box"], back["Box"]) and back["box"].v == 3


def test_sqlite_connections_come_back_to_their_data(tmp_path):
    import sqlite3

    memory = sqlite3.connect(":memory:")
    memory.execute("create table t (v)")
    memory.executemany("insert into t values (?)", [(1,), (2,)])
    memory.commit()
    on_disk = sqlite3.connect(tmp_path / "kept.db")
    on_disk.execute("create table t (v)")
    on_disk.execute("insert into t values (3)")
    on_disk.commit()
    back, dropped, _ = _round_trip({"memory": memory, "on_disk": on_disk})
    assert dropped == {}
    assert back["memory"].execute("select sum(v) from t").fetchone() == (3,)
    assert back["on_disk"].execute("select v from t").fetchall() == [(3,)]
    memory.execute("insert into t values (10)")  # the two are apart from then on
    assert back["memory"].execute("select count(*) from t").fetchone() == (2,)


def test_dict_views_come_back_live_on_their_dict():
    """A view shows its dict only through a read-only proxy: made again on the dict itself,
    so a key added after the restore shows in the view."""
    data = {"a": 1}
    ordered = collections.OrderedDict(b=2)
    own = Listing(b=2)
    values = {"data": data, "keys": data.keys(), "vals": data.values(), "items": data.items(),
              "ordered": ordered.keys(), "alone": {"z": 3}.items(), "own": dict.keys(own)}
    back, dropped, _ = _round_trip(values)
    assert dropped == {}
    back["data"]["new"] = 5
    assert list(back["keys"]) == ["a", "new"] and list(back["vals"]) == [1, 5]
    assert list(back["items"]) == [("a", 1), ("new", 5)]
    assert type(back["ordered"]) is type(ordered.keys()) and list(back["ordered"]) == ["b"]
    assert list(back["alone"]) == [("z", 3)]
    assert type(back["own"]) is type(data.keys()) and list(back["own"]) == ["b"]
