"""Every text that reaches the model is bounded, as printed output is: an error of any kind,
a value's repr, a tool's message, the names a cell defined, the files it wrote, search
results, help. What is cut is saved whole in the session folder, a note says where, and the
session answers the next cell."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from tooliscode import Limits, ToolIsCode

LIMIT = Limits().output_chars
BOUND = LIMIT + 2_000
"""What the model may read for one cell: the limit, the cut markers and the notes."""
_folder: list[Path] = []


def boom(n: int) -> str:
    """Fail with a message of `n` characters."""
    raise RuntimeError("q" * n)


def big_doc() -> int:
    """Return one."""
    return 1


big_doc.__doc__ = "Return one. " + "d" * 5_000_000


def make_files(n: int) -> int:
    """Write `n` empty files into the session folder's `many/`."""
    target = _folder[0] / "many"
    target.mkdir(exist_ok=True)
    for i in range(n):
        (target / f"f{i}").touch()
    return n


def _tool(i: int):
    def tool(x: int) -> int:
        return x

    tool.__name__ = f"lookup_{i}"
    tool.__doc__ = f"Look up record kind {i} by number."
    return tool


@pytest.fixture(scope="module")
def tic(tmp_path_factory):
    _folder[:] = [tmp_path_factory.mktemp("bounded")]
    code = ToolIsCode([boom, big_doc, make_files, *(_tool(i) for i in range(120))],
                      workdir=_folder[0], limits=Limits(timeout_s=60))
    yield code
    code.close()


def run(tic, code: str):
    reply = tic.run_code(code)
    assert reply.result is not None, reply.text
    return reply.text, reply.result


def saved_whole(tic, text: str, what: str) -> None:
    """The note names the text cut and the file holding all of it, which the next cell reads
    back at the length the note gives."""
    found = re.search(rf"\[note\] {re.escape(what)} was ([\d,]+) characters; [\d,]+ were cut "
                      r"from the middle\. The full text is in (\S+); read", text)
    assert found, text[:600]
    total, path = int(found[1].replace(",", "")), found[2]
    _, r = run(tic, f"len(open({path!r}, encoding='utf-8').read())")
    assert r.value == str(total), (r.value, total, r.error)


def still_answers(tic) -> None:
    _, r = run(tic, "keep")
    assert r.ok and r.value == "41" and not r.restarted, r.error


@pytest.fixture(autouse=True)
def keep(tic):
    run(tic, "keep = 41")


def test_a_huge_message(tic):
    text, r = run(tic, "raise ValueError('z' * 10_000_000)")
    assert len(text) < BOUND and len(r.error) < BOUND
    assert "raise ValueError('z' * 10_000_000)" in r.error and "ValueError: zzz" in r.error
    saved_whole(tic, text, "The error's text")
    still_answers(tic)


def test_a_tools_huge_message_is_cut_on_the_host(tic):
    text, r = run(tic, "boom(n=5_000_000)")
    assert len(text) < BOUND and r.error_type == "ToolError"
    assert len(r.tool_calls[0].error) <= LIMIT // 4 + 300  # what crossed into the guest
    found = re.search(r"\[the message was ([\d,]+) characters; the whole message is in (\S+)\]",
                      r.error)
    assert found and found[1] == f"{5_000_000 + len('RuntimeError: '):,}", r.error[-500:]
    _, check = run(tic, f"text = open({found[2]!r}).read()\n(len(text), text[:14], text[-3:])")
    assert check.value == "(5000014, 'RuntimeError: ', 'qqq')", check.error
    still_answers(tic)


STR_CASES = {
    "huge str": ("class E(Exception):\n    def __str__(self):\n        return 's' * 5_000_000\n"
                 "raise E()", "E: sss"),
    "raised SyntaxError": ("raise SyntaxError('s' * 5_000_000)", "SyntaxError: sss"),
    "huge note": ("e = KeyError('k')\ne.add_note('n' * 5_000_000)\nraise e", "nnn"),
    "huge line": ("x = (" + "a, " * 100_000, "SyntaxError"),
    "group of huge members": ("raise ExceptionGroup('g', [ValueError('m' * 1_000_000) "
                              "for _ in range(20)])", "ValueError: mmm"),
}


@pytest.mark.parametrize("code,shown", STR_CASES.values(), ids=STR_CASES.keys())
def test_huge_error_texts_of_every_kind(tic, code, shown):
    text, r = run(tic, code)
    assert not r.ok and len(text) < BOUND, len(text)
    assert shown in r.error
    saved_whole(tic, text, "The error's text")
    still_answers(tic)


def test_a_str_that_raises(tic):
    text, r = run(tic, "class E(Exception):\n    def __str__(self):\n        raise RuntimeError\n"
                       "raise E()")
    assert "E: <exception str() failed>" in r.error and len(text) < 1_000
    still_answers(tic)


@pytest.mark.parametrize("code", [
    "class V:\n    def __repr__(self):\n        return 'v' * 5_000_000\nV()",
    "class V:\n    def __repr__(self):\n        raise RuntimeError('r' * 5_000_000)\nV()",
], ids=["huge repr", "repr raising a huge message"])
def test_a_huge_value(tic, code):
    text, r = run(tic, code)
    assert r.ok and len(r.value) <= Limits().value_chars + 200 and len(text) < BOUND
    saved_whole(tic, text, "The value's repr")
    still_answers(tic)


def test_chained_exceptions_keep_both_types_readable(tic):
    text, r = run(tic, "try:\n    raise KeyError('k' * 3_000_000)\nexcept KeyError as e:\n"
                       "    raise ValueError('v' * 3_000_000) from e")
    assert len(text) < BOUND
    assert "KeyError: 'kkk" in r.error and "ValueError: vvv" in r.error
    assert "The above exception was the direct cause of the following exception" in r.error
    saved_whole(tic, text, "The error's text")
    still_answers(tic)


def test_a_long_chain_keeps_its_last_exceptions(tic):
    text, r = run(tic, "def f(n):\n    try:\n        raise ValueError(n)\n    except ValueError:\n"
                       "        if n:\n            f(n - 1)\n        else:\n            raise\n"
                       "f(300)")
    assert len(text) < BOUND and not r.restarted
    assert "earlier exceptions of this chain, which led to this one, are left out" in r.error
    assert r.error.rstrip().endswith("ValueError: 0")
    still_answers(tic)


def test_a_group_with_many_members(tic):
    text, r = run(tic, "raise ExceptionGroup('many', [ValueError(i) for i in range(100_000)])")
    assert len(text) < 3_000 and not r.restarted
    assert "(the group has 100,000 exceptions; the first 15 are shown)" in r.error
    assert "ValueError: 14" in r.error and "ValueError: 15" not in r.error
    still_answers(tic)


def test_a_very_deep_traceback(tic):
    text, r = run(tic, "import sys\nsys.setrecursionlimit(1_000_000)\n"
                       "def f(n):\n    return f(n + 1) if n < 100_000 else 1 / 0\nf(0)")
    assert len(text) < 5_000 and not r.restarted, r.error
    assert re.search(r"\[\.\.\. [\d,]+ frames left out \.\.\.\]", r.error)
    assert "f(0)" in r.error and r.error.rstrip().endswith("ZeroDivisionError: division by zero")
    still_answers(tic)


def test_a_hundred_thousand_names(tic):
    text, r = run(tic, "for i in range(100_000):\n    globals()[f'v{i}'] = i")
    assert len(text) < 2_000 and len(r.new_names) == 300
    assert re.search(r"and 99,9\d\d more\)$", text), text[-200:]
    text, r = run(tic, "globals()[1] = 2\nglobals()['n' * 1_000_000] = 3")
    assert r.ok and len(text) < 2_000, text[:300]
    still_answers(tic)


def test_thousands_of_files_written(tic):
    """Past 5,000 files the folder is not compared further (100,000 behave the same; making
    them takes this machine 20 s)."""
    text, r = run(tic, "make_files(n=5_100)")
    assert r.ok and len(text) < 3_000
    assert "[files written in /session]" in text and re.search(r"and [\d,]+ more", text)
    assert any("more than 5,000 files" in n for n in r.notices)
    shutil.rmtree(_folder[0] / "many")
    still_answers(tic)


def test_search_results_are_bounded(tic):
    text, r = run(tic, "found = search_tools('record', limit=10**6)\nlen(found)")
    assert r.value == "50", r.error
    still_answers(tic)


def test_help_on_a_five_megabyte_description(tic):
    text, r = run(tic, "help(big_doc)")
    assert len(text) < BOUND and "def big_doc() -> int:" in text
    saved_whole(tic, text, "stdout")
    still_answers(tic)


def test_output_written_straight_to_the_descriptor(tic):
    text, r = run(tic, "import os\nfor _ in range(4):\n    os.write(1, b'r' * 30_000)")
    assert r.ok and len(r.stdout) < LIMIT + 200 and len(text) < BOUND
    assert any("written straight to its descriptor" in n for n in r.notices), r.notices
    still_answers(tic)
