"""What the model reads after a cell, built from a `CellResult` alone (no guest)."""

from __future__ import annotations

from tooliscode import CellResult
from tooliscode.prompt._render import render


def test_parts_come_in_a_fixed_order():
    result = CellResult(ok=False, stdout="out\n", stderr="warn\n", value="3",
                        error="Traceback ...\nValueError: bad\n", error_type="ValueError",
                        notices=("the output was long",), files_written=("a.csv",))
    assert render(result) == ("[note] the output was long\nout\n[stderr]\nwarn\n[value] 3\n"
                              "[error]\nTraceback ...\nValueError: bad\n"
                              "[files written in /session] a.csv")


def test_a_notice_already_in_the_error_is_not_repeated():
    restart = "The interpreter was restarted; lost: keep."
    result = CellResult(ok=False, error=f"TimeoutError: too slow\n{restart}", notices=(restart,))
    text = render(result)
    assert text.count(restart) == 1 and not text.startswith("[note]")


def test_a_value_of_none_text_is_still_shown():
    assert render(CellResult(ok=True, value="None")) == "[value] None"


def test_a_silent_cell_describes_what_it_defined():
    result = CellResult(ok=True, new_names=("rows", "f"), described={"rows": "list of 3 items"})
    assert render(result) == \
        "(the cell ran and printed nothing; it defined: rows = list of 3 items, f)"
    assert render(result, {}) == "(the cell ran and printed nothing; it defined: rows, f)"


def test_a_silent_cell_shows_thirty_names_at_most():
    names = tuple(f"v{i}" for i in range(35))
    text = render(CellResult(ok=True, new_names=names))
    assert text.endswith("v29 and 5 more)") and "v30" not in text


def test_notices_and_files_still_come_with_a_silent_cell():
    text = render(CellResult(ok=True, notices=("n1",), files_written=("x.txt",)))
    assert text == ("(the cell ran and printed nothing; it defined no new names)\n[note] n1\n"
                    "[files written in /session] x.txt")


def test_a_final_answer_is_shown_short_and_ends_the_silence():
    assert render(CellResult(ok=True, has_final=True, final={"total": 3})) == \
        "[final answer] {'total': 3}"
    assert render(CellResult(ok=True, has_final=True, final=None)) == "[final answer] None"
    long = render(CellResult(ok=True, has_final=True, final="y" * 1_700))
    assert long == "[final answer] " + "y" * 500 + "... [1,200 more characters]"


def test_trailing_newlines_are_trimmed_but_inner_ones_kept():
    assert render(CellResult(ok=True, stdout="a\n\nb\n\n")) == "a\n\nb"
