"""What the model reads when code fails: carets where CPython puts them, the line of every
syntax error, and import advice that is true in the sandbox."""

from __future__ import annotations

import asyncio
import linecache
import sys
import traceback

import pytest
from tooliscode import Limits, Session

PROGRAMS = [
    "x = [1, 2]\nx[5]",
    "x = [1, 2]\nx[5]\n",
    "d = {'a': 1}\nd['b']",
    "x = [1, 2]\ny = x[0] + x[7]",
    "s = 'abc'\ns.upper().nope",
    "n = None\nn.attr",
    "def f(a):\n    return a + 1\nf('x')",
    "x = 1 / 0",
    "a, b = [1, 2, 3]",
    "a, b, c = (1, 2)",
    "int('nope')",
    "x = [1, 2, 3]\nx[1:2:0]",
    "{}.get()",
    "len(5)",
    "import math\nmath.sqrt(-1)",
    "class A:\n    pass\nA().missing()",
    "def g():\n    return h()\ng()",
    "x = {'k': [1]}\nx['k'][3]",
    "t = (1,)\nt[0] = 2",
    "x = 'a' + 1",
    "y = 2 ** 'x'",
    "lst = [1, 2]\nprint(lst[1] * lst[2])",
    "obj = object()\nobj.x = 1",
    "def f(*, k):\n    pass\nf(1)",
    "def f(a, b):\n    pass\nf(1)",
    "next(iter([]))",
    "import asyncio\nasync def main():\n    await asyncio.sleep(0)\n    return [][0]\n"
    "asyncio.run(main())",
    "async def co():\n    return {}['x']\nawait co()",
    "x = [[1], [2]]\nx[0][0][0]",
    "m = {'a': {'b': 1}}\nv = m['a']['c']",
    "s = 'text'\ns[10]",
    "def outer():\n    def inner(v):\n        return v.nope\n    return inner(3)\nouter()",
    "numbers = [1, 2, 3]\ntotal = sum(numbers) / (len(numbers) - 3)",
    "rows = [{'id': 1}]\nrows[0]['name'].strip()",
    "a = [1]\nb = a[0] / (a[0] - 1) + 2",
]
"""Small failing programs; each is compared frame by frame with the host CPython's output."""


@pytest.fixture(scope="module")
def session():
    with Session([], limits=Limits(timeout_s=30)) as s:
        yield s


def _frames(text: str) -> list[tuple[str, str]]:
    """(source line, caret line or "") for each frame of the cell's code."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if line.startswith('  File "<cell-'):
            source = lines[i + 1] if i + 1 < len(lines) else ""
            after = lines[i + 2] if i + 2 < len(lines) else ""
            found.append((source, after if after.strip() and set(after.strip()) <= set("^~")
                          else ""))
    return found


def _on_the_host(code: str) -> str:
    """The host CPython's traceback of `code`, run as a cell is (same file name, source in
    linecache, top-level await allowed)."""
    name = "<cell-1>"
    lines = code.splitlines(True)
    lines[-1] += "" if lines[-1].endswith("\n") else "\n"
    linecache.cache[name] = (len(code), None, lines, name)
    try:
        compiled = compile(code, name, "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT
        if compiled.co_flags & 0x80:  # CO_COROUTINE
            asyncio.new_event_loop().run_until_complete(eval(compiled, {}))
        else:
            exec(compiled, {})
    except Exception as exc:  # noqa: BLE001 - every program fails
        return "".join(traceback.format_exception(exc))
    finally:
        linecache.cache.pop(name, None)
    raise AssertionError(f"{code!r} did not fail on the host")


def test_carets_match_the_hosts_cpython(session):
    """The host runs CPython 3.11, the default guest 3.12 and the data guest 3.15. 3.11 and
    3.12 place carets alike, so there every frame must match. 3.13 changed calls: a call is
    now marked even when it is the whole line (`f(1)` gets `~^^^`, where 3.11 shows none), and
    a call returned at once (`return inner(3)`) is not marked. So on 3.15 frames whose carets
    differ must be such calls, and every other frame must match."""
    major_minor = tuple(int(x) for x in session.run(
        "import sys\nsys.version_info[:2]").value.strip("()").split(","))
    compared = 0
    for code in PROGRAMS:
        r = session.run(code)
        assert not r.ok, code
        guest, host = _frames(r.error), _frames(_on_the_host(code))
        assert [g[0] for g in guest] == [h[0] for h in host], (code, r.error)
        for (line, theirs), (_, ours) in zip(guest, host):
            if theirs == ours:
                compared += 1
            else:  # only 3.13's change to calls may differ: one marks the call, one does not
                assert major_minor >= (3, 13) and "(" in line and not (theirs and ours), \
                    (code, line, theirs, ours)
    assert compared >= 25  # 3.15 matches 29 frames; the others mark calls


def test_the_issues_example(session):
    r = session.run("x = [1, 2]\nx[5]")
    assert "    x[5]\n    ~^^^\nIndexError" in r.error, r.error


SYNTAX = {
    "def f():\n    pass\nbreak": "break",
    "continue": "continue",
    "nonlocal x": "nonlocal x",
    "from __future__ import braces2": "from __future__ import braces2",
    "x = 1\nawait_ = 2\ndef g():\n    x = 1\n    global x": "global x",
}


@pytest.mark.parametrize("code,line", SYNTAX.items(), ids=[v for v in SYNTAX.values()])
def test_syntax_errors_found_by_the_compiler_show_their_line(session, code, line):
    session.run("keep = 'kept'")
    r = session.run(code)
    assert not r.ok and r.error_type == "SyntaxError"
    lines = r.error.splitlines()
    at = lines.index(f"    {line}")
    assert set(lines[at + 1].strip()) <= set("^~") and "^" in lines[at + 1], r.error
    assert session.run("keep").value == "'kept'"


def test_a_missing_package_is_told_as_the_sandbox_has_it(session):
    session.run("keep = 'kept'")
    r = session.run("import nosuchmod")
    assert r.error_type == "ModuleNotFoundError"
    assert "Site initialization" not in r.error and "virtual environment" not in r.error
    assert "No package 'nosuchmod' is in this sandbox" in r.error
    assert "none can be installed" in r.error
    assert session.runtime.python_note in r.error  # what it has instead
    if session.runtime.name == "data":
        r = session.run("import numpy.nosuchmod")  # the package is here: Python's words do
        assert "No module named 'numpy.nosuchmod'" in r.error and "[sandbox]" not in r.error
    assert session.run("keep").value == "'kept'"


def test_the_host_is_a_cpython_with_the_caret_format():
    assert sys.version_info >= (3, 11), "carets came with CPython 3.11"
