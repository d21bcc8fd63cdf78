"""The guest/host channel and the tool boundary under hostile input."""

from __future__ import annotations

import json
import marshal
import math

import pytest
from tooliscode import Session

from .conftest import assert_survived

RAW = "import tooliscode_guest.channel as ch, marshal\n"

FORGED = [
    b"",
    b"not json",
    b"\xff\xfe\x00garbage",
    b"[1, 2, 3]",
    b'{"op": 5}',
    b'{"no_op": true}',
    b'{"op": "teleport"}',
    b'{"op": "call"}',
    b'{"op": "call", "name": "rm_rf", "args": {}}',
    b'{"op": "call", "name": "secret_tool", "args": "not an object"}',
    b'{"op": "call", "name": "secret_tool", "args": {"account": 1, "extra": [1]}}',
    b'{"op": "start", "name": "nope", "args": {}}',
    b'{"op": "wait", "ids": [1, 2, 3], "timeout": 0}',
    b'{"op": "wait", "ids": "x"}',
    b'{"op": "cancel", "ids": [{"a": 1}]}',
    b'{"op": "search", "query": 5, "limit": "many"}',
    b'{"op": "boot"}',
    b'{"op": "call", "name": "secret_tool", "args": {"account": "' + b"A" * 1_000_000 + b'"}}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"op": "call", "name": "secret_tool", "args": {"account": NaN}}',
]


@pytest.mark.parametrize("frame", FORGED, ids=lambda f: repr(f[:30]))
def test_forged_frames_get_an_answer_not_a_crash(victim, frame):
    victim.write_file("frame.bin", frame)
    r = victim.run(RAW + "reply = marshal.loads(ch.exchange(open('frame.bin', 'rb').read()))\n"
                   "type(reply).__name__")
    assert r.ok, r.error
    assert r.value == "'dict'"
    assert_survived(victim)


def test_frame_parser_never_raises_on_the_host():
    with Session([]) as s:
        worker = s._state.worker
        for frame in FORGED + [bytes(range(256)) * 10, b"{" * 10_000]:
            reply = marshal.loads(worker._handle(frame))
            assert isinstance(reply, dict)


RAW_SOCKET = [
    # declared length bigger than the buffer
    "b = bytearray(struct.pack('<I', 10**9) + b'x' * 60)\ns.recv_into(b)",
    # a zero-length buffer
    "s.recv_into(bytearray(0))",
    # a 3-byte buffer: no room for a header
    "s.recv_into(bytearray(3))",
    # the 'more' marker with nothing pending
    "b = bytearray(struct.pack('<I', 0xFFFFFFFF) + bytes(60))\ns.recv_into(b)\nb[:4]",
    # another descriptor
    "t = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, 3)\nt.recv_into(bytearray(10))",
    # close the channel descriptor
    "import os\nos.close(1000)",
    # write garbage to it
    "import os\nos.write(1000, b'x' * 100)",
]


@pytest.mark.parametrize("code", RAW_SOCKET)
def test_raw_socket_tricks(victim, code):
    prefix = ("import _socket, struct\n"
              "s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, 1000)\n")
    victim.run(prefix + code + "\ns.detach()")
    assert victim.run("secret_tool(account='a')['balance']").value == "10"
    assert_survived(victim)


ARGUMENT_ATTACKS = [
    ("secret_tool(account=['not', 'a', 'string'])", "account"),
    ("secret_tool(account=None)", "account"),
    ("secret_tool()", "account"),
    ("secret_tool(account='a', admin=True)", "admin"),
    ("secret_tool('a', 'b', 'c')", "positional"),
    ("rm_rf(path='/')", "rm_rf"),
    ("import tooliscode_guest.tools as t\nt.call_tool('rm_rf', {})", "no tool"),
    ("import tooliscode_guest.tools as t\nt.call_tool('secret_tool', {'account': {'$gt': ''}})",
     "account"),
]


@pytest.mark.parametrize("code,word", ARGUMENT_ATTACKS)
def test_bad_tool_calls_are_refused_with_a_reason(victim, code, word):
    r = victim.run(code)
    assert not r.ok and word.lower() in r.error.lower(), r.error
    assert_survived(victim)


def echo(payload: object) -> object:
    """Returns what it got."""
    return payload


def test_huge_arguments_cross_and_are_bounded_by_guest_memory():
    with Session([echo]) as s:
        r = s.run("x = echo(payload='y' * 100_000_000)\nlen(x)")
        assert (r.ok and r.value == "100000000") or r.error_type == "MemoryError", r.error
        assert s.run("1").ok


def test_deeply_nested_arguments_do_not_crash_anything():
    with Session([echo]) as s:
        r = s.run("x = []\nfor _ in range(100_000):\n    x = [x]\nres = echo(payload=x)\n"
                  "d = 0\nwhile isinstance(res, list) and res:\n    res = res[0]\n    d += 1\nd")
        assert r.ok, r.error
        assert int(r.value) <= 201  # cut at the documented depth, not a crash
        assert s.run("1").ok


def test_non_utf8_and_surrogates_cross_both_ways():
    got = []

    def keep(text: str) -> str:
        got.append(text)
        return text + "\udcff"

    with Session([keep]) as s:
        r = s.run("r = keep(text='caf\\u00e9 \\udc80 end')\n(len(r), r[-1] == '\\udcff')")
        assert r.ok and r.value == "(11, True)", r.error
        assert got == ["caf\u00e9 \udc80 end"]


def test_nan_and_infinity_cross_both_ways():
    def stats(values: list[float]) -> dict:
        return {"nan": math.nan, "inf": math.inf, "got": values}

    with Session([stats]) as s:
        r = s.run("import math\nr = stats(values=[math.nan, math.inf, -math.inf])\n"
                  "(math.isnan(r['nan']), r['inf'], math.isnan(r['got'][0]), r['got'][1:])")
        assert r.ok and r.value == "(True, inf, True, [inf, -inf])", r.error


def test_junk_results_are_converted_not_fatal():
    class Weird:
        def __repr__(self):
            raise RuntimeError("no repr for you")

    def junk() -> object:
        return {"w": Weird(), "gen": (i for i in range(3)), "fn": print, "cls": Weird}

    with Session([junk]) as s:
        r = s.run("sorted(junk())")
        assert r.ok and r.value == "['cls', 'fn', 'gen', 'w']", r.error
        assert json.loads(json.dumps(s.run("junk()['gen']").value)) == "[0, 1, 2]"
