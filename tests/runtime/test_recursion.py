"""Recursion through C code ends in a RecursionError the code can catch, and the session keeps
its variables; recursion CPython does not count is told as recursion, never as a crash."""

from __future__ import annotations

import textwrap

import pytest
from tooliscode import Limits, Session

THROUGH_C = {
    "repr": "class R:\n    def __repr__(self):\n        return repr(self)\nrepr(R())",
    "map": "def f(x):\n    return list(map(f, [x]))\nf(1)",
    "sorted key": "def k(x):\n    return sorted([x], key=k)\nk(1)",
    "nested eval": "def e(n):\n    return eval('e(n + 1)')\ne(0)",
    "getattr": "class A:\n    def __getattr__(self, name):\n"
               "        return getattr(self, name)\nA().x",
    "eq": "class Q:\n    def __eq__(self, other):\n        return self == other\nQ() == Q()",
    "str in print": "class S:\n    def __str__(self):\n        return str(self)\nprint(S())",
}


@pytest.fixture(scope="module")
def session():
    with Session([], limits=Limits(timeout_s=60)) as s:
        yield s


@pytest.mark.parametrize("code", THROUGH_C.values(), ids=THROUGH_C.keys())
def test_recursion_through_c_is_a_recursion_error_and_the_session_lives(session, code):
    assert session.run("keep = [41]").ok
    r = session.run(code)
    assert not r.ok and not r.restarted, r.error
    # eval nests the parser too: CPython 3.15 can stop there first, on its own stack check
    assert r.error_type in ("RecursionError", "MemoryError"), r.error
    assert "RecursionError" in r.error or "stack overflow" in r.error.lower(), r.error[-400:]
    assert "crash" not in r.error
    if r.error_type == "MemoryError":  # then the hint must not blame the memory limit
        assert "not the memory limit" in r.error
    assert session.run("keep").value == "[41]"


def test_the_code_can_catch_it(session):
    body = textwrap.indent(THROUGH_C["repr"], "    ")
    r = session.run(f"try:\n{body}\nexcept RecursionError as e:\n    caught = repr(e)\ncaught")
    assert r.ok and "RecursionError" in r.value, r.error


def test_a_tuple_nested_ten_thousand_deep_hashes_as_natively(session):
    r = session.run("t = ()\nfor _ in range(10_000):\n    t = (t,)\nisinstance(hash(t), int)")
    assert r.ok and r.value == "True", r.error


def test_recursion_cpython_does_not_count_is_told_as_recursion(session):
    """Hashing a tuple nested 300,000 deep recurses in C with no check (native CPython dies of
    it too): the guest is replaced, and the model reads that its code recursed too deeply."""
    session.run("keep = [41]")
    r = session.run("t = ()\nfor _ in range(300_000):\n    t = (t,)\nhash(t)")
    assert not r.ok and r.rolled_back and r.error_type == "RecursionError", r.error
    assert "recursed so deeply" in r.error and "crash" not in r.error
    assert "keep" not in r.lost_names  # (an earlier test's deep `t` may not pickle)
    assert session.run("keep + [1]").value == "[41, 1]"  # the state before the cell
