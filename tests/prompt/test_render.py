"""What the model reads back after a cell: never empty, and everything that matters in it."""

from __future__ import annotations

import json

import pytest
from tooliscode import CellResult, Limits, ToolIsCode
from tooliscode.prompt._render import render


def run(tic: ToolIsCode, code: str) -> str:
    return tic.tool_call({"type": "function_call", "call_id": "c", "name": "run_python",
                          "arguments": json.dumps({"code": code})})["output"]


@pytest.fixture
def tic():
    with ToolIsCode([], limits=Limits(timeout_s=3, output_chars=400)) as t:
        yield t


def test_silent_cell_lists_what_it_defined_with_short_descriptions(tic):
    text = run(tic, "rows = [{'id': i} for i in range(5000)]\nname = 'Ada'\nn = 3\n"
                    "cfg = {'a': 1, 'b': 2}\ndef helper(): pass\nclass Thing: pass\nt = Thing()")
    assert text.startswith("(the cell ran and printed nothing; it defined: ")
    for part in ("rows = list of 5,000 items, the first a dict", "name = 'Ada'", "n = 3",
                 "cfg = dict of 2 keys ('a', 'b')", "helper = <function helper>",
                 "Thing = <class Thing>", "t = <Thing object>"):
        assert part in text
    # the description cell ran no user code and left nothing behind
    assert "__tic" not in run(tic, "print(sorted(k for k in globals() if 'tic' in k))")


def test_hostile_repr_is_never_called(tic):
    text = run(tic, "class Boom:\n    def __repr__(self):\n        while True: pass\nb = Boom()")
    assert "b = <Boom object>" in text


def test_silent_cell_that_defined_nothing(tic):
    assert run(tic, "import json as _j\ndel _j") == \
        "(the cell ran and printed nothing; it defined no new names)"


def test_output_value_and_error_together(tic):
    text = run(tic, "print('partial')\n1/0")
    assert text.startswith("partial\n[error]\nTraceback")
    assert "ZeroDivisionError" in text
    assert run(tic, "6 * 7") == "[value] 42"


def test_truncation_notice_and_files_written(tic):
    text = run(tic, "open('report.csv', 'w').write('a,b\\n')\nprint('x' * 5000)")
    assert "[note] stdout was 5,001 characters" in text
    assert "[files written in /session] report.csv" in text


def test_a_stop_and_the_rollback_are_reported_once(tic):
    run(tic, "keep = 1")
    text = run(tic, "while True: pass")
    assert "TimeoutError" in text and text.count("back to its state before this cell") == 1
    assert "1" in run(tic, "keep")


def test_render_without_a_session():
    assert render(CellResult(ok=True)) == \
        "(the cell ran and printed nothing; it defined no new names)"
    assert render(CellResult(ok=True, new_names=("a", "b")), {"a": "3"}) == \
        "(the cell ran and printed nothing; it defined: a = 3, b)"
    final = render(CellResult(ok=True, has_final=True, final="x" * 600))
    assert final.startswith("[final answer] xxx") and "100 more characters" in final
    many = render(CellResult(ok=True, stdout="ok\n",
                             files_written=tuple(f"f{i}" for i in range(25))))
    assert many == "ok\n[files written in /session] " + ", ".join(f"f{i}" for i in range(20)) + \
        " and 5 more"
