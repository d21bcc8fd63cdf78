"""The cell's last expression kept by patching one instruction (guest/cells.py), checked on
this interpreter's bytecode (the guests run it on 3.12 and 3.15: tests/engine/test_cells.py)."""

from __future__ import annotations

import pytest
from tooliscode.guest import cells


def _value(code: str) -> object:
    patched = cells._value_kept_in_bytecode(compile(code, "<cell>", "exec", dont_inherit=True))
    if patched is None:
        return "not patched"
    ns = {"x": 41}
    exec(patched, ns)
    return ns.get(cells._VALUE, "no value")


def test_the_tail_is_learned_and_the_patch_works_here():
    assert cells._TAIL is not None and cells._patch_works()


@pytest.mark.parametrize(("code", "value"), [
    ("x + 1", 42),
    ("y = 2\nx * y", 82),
    ("print", print),
    ("[x]", [41]),
])
def test_a_final_expression_statement_is_kept(code, value):
    assert _value(code) == value


@pytest.mark.parametrize("code", ["if x:\n    x", "y = 1; y", "x = 1", "for i in []:\n    i",
                                  "try:\n    x\nexcept Exception:\n    pass"])
def test_anything_else_is_left_to_the_slow_sure_path(code):
    assert _value(code) == "not patched"


def test_a_cell_that_cannot_end_in_a_value_is_not_parsed_again():
    compiled = compile("x = 1\ny = x", "<cell>", "exec", dont_inherit=True)
    assert not cells._may_end_in_expression(compiled, "x = 1\ny = x",
                                            cells._ends_like_tail(compiled))
