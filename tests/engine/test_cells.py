"""Cells: state, REPL values, errors, async code."""

from __future__ import annotations

import time

from tooliscode import Limits, Session


def test_state_persists_across_cells(session):
    assert session.run("x = 41\ndef inc(v):\n    return v + 1\nclass K:\n    n = 2").ok
    assert session.run("import json").ok
    r = session.run("json.dumps({'v': inc(x) * K.n})")
    assert r.ok, r.error
    assert r.value == "'{\"v\": 84}'"
    assert set(r.names) >= {"x", "inc", "K", "json"}


def test_value_is_repl_style(session):
    assert session.run("1 + 1").value == "2"
    assert session.run("x = 5").value is None
    assert session.run("None").value is None
    assert session.run("print('hi')").value is None
    assert session.run("'text'").value == "'text'"
    assert session.run("if True:\n    y = 3\ny").value == "3"


def test_value_follows_the_last_top_level_expression_only(session):
    session.run("x = 5")
    cases = {"x": "5", "x + 1": "6", "(x\n + 1)": "6", "x  # note": "5", "a = 1; a": "1",
             "[i for i in range(3)]": "[0, 1, 2]",
             "try:\n    1 / 0\nexcept Exception:\n    pass\nx": "5",
             "def f():\n    return 1\nf()": "1", "if x:\n    x * 2": None,
             "if not x:\n    pass\nelse:\n    x * 3": None, "for i in range(2):\n    i": None}
    for code, expected in cases.items():
        r = session.run(code)
        assert r.ok and r.value == expected, (code, r.value, r.error)


def test_a_plain_expression_cell_needs_no_ast_module(tmp_path):
    from tooliscode import Session

    with Session([], workdir=tmp_path) as s:  # a cold guest: nothing imported ahead
        assert s.run("x = 1").ok and s.run("x + 1").value == "2"
        if not s.runtime.turn_based:  # the others start from an image with more imported
            assert s.run("import sys\n'ast' in sys.modules").value == "False"


def test_long_value_is_cut(session):
    r = session.run("'a' * 100_000")
    assert r.ok and len(r.value) < 5_000 and "characters cut" in r.value


def test_new_names_and_reset(session):
    r = session.run("a = 1\nb = 2")
    assert set(r.new_names) == {"a", "b"}
    assert session.run("c = 3").new_names == ("c",)
    session.reset()
    r = session.run("a")
    assert not r.ok and "NameError" in r.error
    assert session.run("get_order(order_id=1)['id']").value == "1"  # tools survive reset


def test_syntax_error_shows_line_and_caret(session):
    r = session.run("x = 1\ndef f(:\n    pass")
    assert not r.ok
    assert r.error_type == "SyntaxError"
    assert "line 2" in r.error and "^" in r.error
    assert "ast.py" not in r.error and "<tooliscode>" not in r.error


def test_traceback_is_trimmed_to_cell_frames(session):
    r = session.run("def f():\n    return 1 / 0\nf()")
    assert not r.ok and r.error_type == "ZeroDivisionError"
    assert "<cell-" in r.error and "return 1 / 0" in r.error
    assert "<tooliscode>" not in r.error and "cells.py" not in r.error


def test_exit_ends_the_cell_not_the_session(session):
    r = session.run("x = 7\nexit(3)")
    assert not r.ok and r.error_type == "SystemExit"
    assert session.run("x").value == "7"
    assert not r.restarted


def test_top_level_await_and_asyncio_run(session):
    r = session.run("import asyncio\nawait asyncio.sleep(0.01)\n'done'")
    assert r.ok and r.value == "'done'", r.error
    r = session.run("async def main():\n    await asyncio.sleep(0.01)\n    return 5\n"
                    "asyncio.run(main())")
    assert r.ok and r.value == "5", r.error


def test_asyncio_loads_only_when_used_and_then_works(tools, tmp_path):
    from tooliscode import Session

    with Session(tools, workdir=tmp_path) as s:  # an own folder: a cold guest, not a pooled one
        if not s.runtime.turn_based:  # others start from an image with asyncio imported
            assert s.run("import sys\n'asyncio' in sys.modules").value == "False"
        r = s.run("import asyncio\nasync def m():\n    return await aslow(0.01, 'x')\n"
                  "asyncio.run(m())['tag']")
        assert r.ok and r.value == "'x'", r.error


def test_stdout_and_stderr_are_separate(session):
    r = session.run("import sys\nprint('out')\nprint('err', file=sys.stderr)")
    assert r.stdout == "out\n" and r.stderr == "err\n"


def test_non_utf8_and_surrogates_in_output(session):
    r = session.run("print('\\udcff\\udc80 after')\nimport sys\n"
                    "sys.__stdout__.buffer.write(b'\\xff\\xfe raw\\n')")
    assert r.ok, r.error
    assert "after" in r.stdout and "raw" in r.stdout


def test_duration_is_measured(session):
    r = session.run("import time\ntime.sleep(0.05)")
    assert r.ok and r.duration_s >= 0.05


def test_final_answer_ends_the_cell(session):
    r = session.run("final_answer({'total': 3})\nprint('not reached')")
    assert r.ok and r.has_final and r.final == {"total": 3}
    assert "not reached" not in r.stdout
    assert not session.run("1").has_final


def test_cells_are_fast_enough_to_be_interactive(session):
    start = time.perf_counter()
    for _ in range(20):
        assert session.run("x = 1").ok
    assert time.perf_counter() - start < 60  # only catches a hang: speed is for benchmarks/


def test_a_cell_too_big_to_go_with_its_turn_is_asked_for(session):
    """A cell crosses with the turn's source where the runtime takes it (one crossing fewer),
    up to `first_answer_limit` bytes; a bigger one the guest asks for, as before."""
    rows = "\n".join(f"v{i} = {i} * 2 + len('{'é' * 20}')" for i in range(4000))
    assert len(rows.encode()) > 1 << 16
    r = session.run(rows + "\nprint(v3999, 'é' * 3)")
    assert r.ok, r.error
    assert r.stdout == "8018 ééé\n"
    small = session.run("print(v0 + 1, 'é€')")  # bytes past ASCII in what crosses
    assert small.ok and small.stdout == "21 é€\n", small.error


def test_cells_sent_one_after_another_share_a_turn(monkeypatch):
    """A turn that has given its result waits a moment (`TURN_WAIT_S`) for the next command
    before it ends: cells sent one after another run in one turn, not a turn each. (With
    rollback points on, the data runtime ends each turn to commit between turns.) The wait
    is made long here, so a loaded machine cannot make the test race it."""
    from tooliscode.engine import _handover

    monkeypatch.setattr(_handover, "TURN_WAIT_S", 30.0)
    with Session([], limits=Limits(rollback_bytes=0)) as s:
        assert s.run("x = 1").ok
        instance = s._state.worker.instance
        turns = []
        turn = instance.turn

        def counted(*args: object) -> None:
            turns.append(args)
            turn(*args)

        instance.turn = counted
        for i in range(20):
            assert s.run(f"x = {i}").ok
        assert s.run("x").value == "19"
        assert len(turns) < 10, len(turns)
