"""What a cell can change, read from its bytecode (guest/reach.py), run here on this
interpreter: the cells themselves are tested in real guests by tests/engine/test_deltas.py."""

from __future__ import annotations

import asyncio
import builtins

import pytest
from tooliscode.guest import reach


@pytest.fixture(autouse=True)
def settled():
    reach.settle("/session")
    reach.forget()


def _of(code: str, ns: dict, loop=None):
    compiled = compile(code, "<cell>", "exec", dont_inherit=True)
    return reach.of(compiled, code, ns, set(ns), {"tool": print}, loop)


def test_this_interpreters_imports_are_read():
    assert reach._SHIFT is not None


def test_a_cell_naming_plain_variables_reaches_them_and_what_it_sets():
    found = _of("y = x + len('ab')\nz = tool(s)", {"x": 1, "s": "a", "rows": [1]})
    assert set(found.names) >= {"x", "y", "z", "s"} and set(found.own) == {"x", "s"}
    assert _of("def f(n):\n    return n * x\n", {"x": 2}).own == ("x",)
    assert _of("import json\nv = json.dumps(1)", {}) is not None  # imported already


@pytest.mark.parametrize("code", [
    "rows.append(1)",
    "def f():\n    rows.append(1)\n",
    "globals()", "vars()", "getattr(t, 'x')", "eval('1')", "exec('1')",
    "t.__class__", "g.gi_frame", "sys._getframe()",
    "import gc", "from . import x", "import tooliscode_no_such_module", "from json import *",
])
def test_a_cell_that_may_reach_more_is_unknown(code):
    assert _of(code, {"rows": [], "t": (1,)}) is None


def test_a_replaced_builtin_or_waiting_task_makes_a_cell_unknown(monkeypatch):
    monkeypatch.setattr(builtins, "len", lambda o: 0)
    assert _of("n = len('a')", {}) is None
    monkeypatch.undo()
    loop = asyncio.new_event_loop()
    try:
        assert _of("n = 1", {}, loop) is not None
        loop.call_soon(print)
        assert _of("n = 1", {}, loop) is None
    finally:
        loop.close()


def test_a_module_is_fixed_only_when_the_librarys():
    import json

    assert reach.fixed(json) and reach.fixed((1, "a", (2.0, None)))
    assert not reach.fixed(builtins) and not reach.fixed([1]) and not reach.fixed((1, [2]))


def test_a_cell_that_may_hang_objects_on_a_module_makes_modules_unknown():
    import json

    ns = {"json": json, "box": [1]}
    assert _of("n = json.dumps(1)", ns) is not None
    assert _of("json.JSONDecoder.held = 1", ns) is None  # sets an attribute, reaching json
    assert _of("n = json.dumps(1)", ns) is None  # from then on, until a new session
    assert _of("n = tool(1)", ns) is None
    reach.forget()
    assert _of("n = json.dumps(1)", ns) is not None
    assert _of("n = len('a')\nm = getattr(n, 'real')", ns) is None  # reflection
    assert _of("n = json.dumps(1)", ns) is None
    reach.forget()


def test_an_attribute_of_a_module_that_holds_data_makes_a_cell_unknown():
    import types

    module = types.ModuleType("json")  # a standard name, made here: its attributes are ours
    module.held = [1]
    module.count = 3
    ns = {"m": module}
    assert reach._attributes_plain([module], ("count",), ns)
    assert not reach._attributes_plain([module], ("held", "append"), ns)
