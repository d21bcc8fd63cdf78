"""Where the guest pickles its variables for a rollback point (the default runtime), a cell
that can change only the variables it names gives the host what it changed, and the host
chains it onto the last whole checkpoint (guest/points.py, guest/reach.py,
engine/_points.py). A stopped cell's session must come back to exactly the state before it
all the same: through a chain of plain and pickled deltas and deletions, after cells that
change objects in place, and after code that reaches variables without naming them. Runs on
both runtimes (the data runtime keeps its interpreter itself: the same results, no chain)."""

from __future__ import annotations

import pytest
from tooliscode import Limits, Session
from tooliscode.engine._points import Checkpoint

STOP = "\nwhile True:\n    pass"


@pytest.fixture(scope="module")
def session():
    with Session([], limits=Limits(timeout_s=1)) as s:
        yield s


def _stopped(s: Session, code: str) -> None:
    r = s.run(code + STOP)
    assert r.rolled_back and not r.restarted, r.error


def _point(s: Session) -> Checkpoint | None:
    point = s._state.worker.points.settled(10)
    return point if isinstance(point, Checkpoint) else None


def test_a_chain_of_changes_comes_back_exactly(session):
    s = session
    steps = [
        "rows = [{'id': i} for i in range(50)]",  # the whole checkpoint
        "a = 1",  # plain values, in the result
        "a += 1\nname = 'hi'",
        "pair = (1, 'two')\nnested = [a, name]",  # pickled on their own
        "def twice(n):\n    return n * 2",  # a function, by value
        "del name",
        "import json\ntext = json.dumps([a])",  # a standard module, imported already
    ]
    for code in steps:
        assert s.run(code).ok, code
    point = _point(s)
    if point is not None:  # the pickling guest: every cell after the first was a delta
        assert len(point.deltas) == len(steps) - 1
    _stopped(s, "a = 100\nrows.clear()\ndel pair")
    r = s.run("print(a, 'name' in dir(), pair, nested, twice(3), text, len(rows))")
    assert r.stdout == "2 False (1, 'two') [2, 'hi'] 6 [2] 50\n", (r.stdout, r.error)
    _stopped(s, "a = 7")  # the point a rollback loaded is the point again
    assert s.run("print(a, len(rows))").stdout == "2 50\n"


def test_a_change_in_place_and_what_shares_it_come_back(session):
    """A cell naming a variable that can change in place is followed by a whole checkpoint:
    what shares its objects is kept shared."""
    s = session
    assert s.run("box = [1]\nholder = {'box': box}").ok
    assert s.run("holder['box'].append(2)").ok
    assert s.run("n = 1").ok
    _stopped(s, "box.append(3)")
    assert s.run("print(box, holder['box'] is box)").stdout == "[1, 2] True\n"


@pytest.mark.parametrize("code", [
    "getattr(globals()[key], 'append')(9)",
    "vars()[key].append(9)",
    "eval(key).append(9)",
    "exec(key + '.append(9)')",
    "import gc\n[o for o in gc.get_objects() if type(o) is list and o[:1] == ['mark']][0]"
    ".append(9)",
    "(lambda: (yield))().gi_frame.f_globals[key].append(9)",
    "import sys\nsys._getframe(0).f_globals[key].append(9)",
    "import builtins\nbuiltins.len = lambda o, _len=len: (globals()[key].append(9), _len(o))[1]",
])
def test_code_that_reaches_variables_without_naming_them_comes_back_right(session, code):
    """Reflection, frames, the collector, a builtin replaced: the guest cannot tell what
    such a cell changed, so a whole checkpoint follows it, and a stop comes back to what it
    left (not to a point that missed it). The cells name the list by a string only."""
    s = session
    assert s.run("box = ['mark']\nholder = {'box': box}\nkey = 'bo' + 'x'\nn = 0").ok
    r = s.run(code)
    assert r.ok, r.error
    assert s.run("n = len('ab')").ok  # names no changeable variable: a builtin may be replaced
    _stopped(s, "n = 5")
    r = s.run("print(box[-1], holder['box'] is box, n)")
    assert r.stdout == "9 True 2\n", (code, r.stdout, r.error)
    assert s.run("import builtins\nif getattr(builtins.len, '__defaults__', None):\n"
                 "    builtins.len = builtins.len.__defaults__[0]").ok


def test_a_tool_result_kept_in_a_variable_comes_back():
    def rows(n: int) -> list:
        """Rows, as a tool returns them."""
        return [{"id": i} for i in range(n)]

    with Session([rows], limits=Limits(timeout_s=1)) as s:
        assert s.run("first = rows(3)").ok
        assert s.run("second = rows(2)\ncount = len(second)").ok
        _stopped(s, "second.append(1)\ncount = 0")
        assert s.run("print(first, second, count)").stdout == \
            "[{'id': 0}, {'id': 1}, {'id': 2}] [{'id': 0}, {'id': 1}] 2\n"


def test_a_variable_reached_through_a_module_comes_back(session):
    """A cell that sets an attribute while it reaches a module (here on one of its classes)
    may make it hold the session's objects: from then on, a cell that reaches a module is
    followed by a whole checkpoint."""
    s = session
    assert s.run("import json\nbox = ['mark']").ok
    assert s.run("json.JSONDecoder.held = box").ok
    assert s.run("json.JSONDecoder.held.append(9)").ok  # names no variable but a module
    _stopped(s, "pass")
    assert s.run("print(box, json.dumps(1))").stdout == "['mark', 9] 1\n"


def test_names_a_star_import_binds_come_back(session):
    """`from m import *` binds names its code does not list: a whole checkpoint follows."""
    s = session
    assert s.run("n = 1").ok and s.run("n = 2").ok  # a whole point, then one to follow
    assert s.run("from json import *").ok
    _stopped(s, "dumps = None")
    assert s.run("print(dumps([1]), loads('2'))").stdout == "[1] 2\n"


def test_a_module_of_the_sessions_own_is_not_taken_for_the_librarys(session):
    """A file in the session's folder named as a standard module is imported first: calling
    it may change what a variable holds, so a cell that names it is followed by a whole
    checkpoint."""
    s = session
    assert s.run("open('colorsys.py', 'w').write('seen = []\\ndef add(x):\\n"
                 "    seen.append(x)\\n')").ok
    try:
        assert s.run("import colorsys\nseen = colorsys.seen").ok
        assert s.run("colorsys.add(1)").ok  # names the module alone
        _stopped(s, "pass")
        assert s.run("print(seen)").stdout == "[1]\n"
    finally:
        s.run("import os\nos.remove('colorsys.py')")
