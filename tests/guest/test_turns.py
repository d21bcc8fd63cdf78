"""The data runtime's turns, run by the guest without the reactor compiling them."""

from __future__ import annotations

import types

from tooliscode.guest import turns


def _reactor() -> tuple[types.ModuleType, list[str], list[object]]:
    """A module with the reactor's `_run_turn`, which records the texts it was given, and
    the `serve` the shortcut calls, which records what it was given."""
    reactor = types.ModuleType("_reactor")
    slow: list[str] = []
    served: list[object] = []
    reactor._run_turn = lambda text, name: slow.append(text)  # type: ignore[attr-defined]
    turns.install(reactor, lambda first=None: served.append(first))
    return reactor, slow, served


def test_our_two_turns_call_serve_and_any_other_text_goes_to_the_reactor():
    reactor, slow, served = _reactor()
    command = bytes(range(256)) + "é".encode()  # every byte value crosses
    reactor._run_turn(turns.SERVE, "<turn 2>")
    reactor._run_turn(turns.answered(turns.SERVE_ANSWERED, command), "<turn 3>")
    assert served == [None, command] and slow == []
    other = ["print(1)", turns.answered("print(_answer)", b"x"),  # not our loop's line
             turns.answered(turns.SERVE_ANSWERED, b"x").replace("78", "7g"),  # not hex
             "import os\n" + turns.SERVE]  # a reseed before it: the reactor runs it all
    for text in other:
        reactor._run_turn(text, "<turn 4>")
    assert slow == other and served == [None, command]


def test_installing_twice_keeps_one_shortcut_and_a_reactor_without_turns_is_left_alone():
    reactor, slow, served = _reactor()
    first = reactor._run_turn
    assert turns.install(reactor, lambda first=None: served.append("again"))
    assert reactor._run_turn is first
    bare = types.ModuleType("_reactor")
    assert not turns.install(bare, lambda first=None: None)
    assert not hasattr(bare, "_run_turn")


def test_an_answered_turn_is_python_that_binds_the_answer_for_its_source():
    """A reactor that runs the text itself (before the guest installed the shortcut) gets
    the same effect: `_answer` bound to the bytes around the source, then gone."""
    seen: list[bytes] = []
    namespace = {"tooliscode_guest": types.SimpleNamespace(
        main=types.SimpleNamespace(serve=seen.append))}
    command = b"\x00\xff'\"\\\n" * 3
    exec(turns.answered(turns.SERVE_ANSWERED, command), namespace)
    assert seen == [command] and "_answer" not in namespace
