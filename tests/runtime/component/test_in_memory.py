"""Big requests of a default-runtime guest read where they lie in its memory
(`runtime/component/_in_memory.py`): a checkpoint's pickle and a big tool argument arrive
whole, and nothing a guest names can make the host read outside its own memory."""

from __future__ import annotations

import hashlib

import pytest
from tooliscode import Limits, Session, Tool
from tooliscode.runtime import runtime_named
from tooliscode.runtime.component import _memory

BIG = "é" * 300_000 + "\x00\x80\xff" + "z" * 1000
"""More than the in-memory threshold, and no ASCII: it would cross as UTF-8 text."""


def digest(text: str) -> str:
    """The SHA-256 of `text`, with its length."""
    return f"{len(text)}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


@pytest.fixture(scope="module")
def session():
    with Session([Tool.from_function(digest)], runtime=runtime_named("default"),
                 limits=Limits(timeout_s=2)) as s:
        yield s


def _reads(session: Session) -> int:
    return session._state.worker.instance.in_memory.reads


def _big_argument(session: Session) -> None:
    reply = session.run(f"big = {BIG!r}\nprint(digest(text=big))")
    assert reply.ok, reply.error
    assert reply.stdout.strip() == digest(BIG)


def test_a_big_tool_argument_is_read_in_place(session):
    before = _reads(session)
    _big_argument(session)
    assert _reads(session) > before


def test_a_stopped_cell_comes_back_to_a_big_checkpoint_read_in_place(session):
    state = session.run("blob = bytes(range(256)) * 4096\nrows = [{'i': i} for i in "
                        "range(20_000)]")
    assert state.ok, state.error
    assert session.run("print(len(rows))").stdout == "20000\n"  # its checkpoint is taken
    assert _reads(session) > 0
    stopped = session.run("blob = b''\nrows.clear()\nwhile True:\n    pass")
    assert not stopped.ok and "back to its state before" in stopped.error, stopped.error
    back = session.run("print(len(blob), blob[:3], blob[-1], len(rows), rows[-1])")
    assert back.ok and back.stdout == "1048576 b'\\x00\\x01\\x02' 255 20000 {'i': 19999}\n", \
        (back.error, back.stdout)


def test_what_a_guest_names_outside_its_memory_is_refused(session):
    _big_argument(session)  # the memory is known from here on
    reply = session.run(r'''
import wit_world
at_end = "%d:%d" % (2**32 - 8, 100)
answers = [
    wit_world.host_call("\x05123:0:10"),          # where, unasked: text
    wit_world.host_call("\x04x:1"),               # no numbers: text
    wit_world.host_call("\x04-4:8"),              # no numbers: text
    wit_world.host_call("\x041234567890123:8"),   # too many digits: text
]
where = wit_world.host_call("\x04" + at_end)     # past the memory: asked where it is again
word = where[1:].encode("latin-1")
answers.append(wit_world.host_call("\x05%d:%s" % (id(word), at_end)))  # still past it: text
print([a == "\x06" for a in answers], where[:1] == "\x04", len(word))
''')
    assert reply.ok, reply.error
    assert reply.stdout.strip() == "[True, True, True, True, True] True 16"
    before = _reads(session)
    _big_argument(session)  # the guest's own big requests are still read in place
    assert _reads(session) > before


def test_a_wrong_word_stops_reads_in_place_and_big_requests_cross_as_text(session):
    reply = session.run(r'''
import wit_world
where = wit_world.host_call("\x04%d:%d" % (2**32 - 8, 100))
print(where[:1] == "\x04", wit_world.host_call("\x05%d:8:8" % 16) == "\x06")
''')
    assert reply.ok and reply.stdout.strip() == "True True", (reply.error, reply.stdout)
    before = _reads(session)
    _big_argument(session)
    assert _reads(session) == before  # found no memory: this guest's requests go as text


def test_where_the_memory_cannot_be_found_big_requests_cross_as_text(monkeypatch):
    monkeypatch.setattr(_memory, "find", lambda *_args: None)
    with Session([Tool.from_function(digest)], runtime=runtime_named("default")) as s:
        _big_argument(s)
        assert _reads(s) == 0
