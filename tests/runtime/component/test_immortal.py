"""The build writes immortal counts into the component's memory image (`_immortal.py`): only
at named addresses that hold a live object's count, in place."""

from __future__ import annotations

from array import array

import pytest
from tooliscode import Session
from tooliscode.runtime import runtime_named
from tooliscode.runtime.component._binary import COMPONENT_MAGIC, uleb
from tooliscode.runtime.component._immortal import make_immortal

_BASE = 0x100000
_IMMORTAL = 0x70000000


def _sleb(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        if (n == 0 and not byte & 0x40) or (n == -1 and byte & 0x40):
            return bytes(out + bytes([byte]))
        out.append(byte | 0x80)


def _component(memory: bytes) -> bytes:
    """A component whose one core module has one data segment: `memory` at `_BASE`."""
    segment = b"\x00\x41" + _sleb(_BASE) + b"\x0b" + uleb(len(memory)) + memory
    data = b"\x01" + segment
    module = b"\x00asm\x01\x00\x00\x00" + b"\x0b" + uleb(len(data)) + data
    return COMPONENT_MAGIC + b"\x01" + uleb(len(module)) + module


def _words(*values: int) -> bytes:
    return array("I", values).tobytes()


def test_live_counts_are_made_immortal_and_nothing_else_changes():
    memory = _words(_IMMORTAL, 0, 0, 0,     # None
                    3, _BASE, 0, 0,          # a live object: count 3
                    _BASE + 48, _BASE, 0, 0,  # freed after it was named: malloc's pointer
                    0, 0, 7, 7)              # freed into a merged chunk: its count 0
    component = _component(memory)
    names = _words(_BASE, _BASE + 16, _BASE + 32, _BASE + 48, 0x200000)  # the last: no segment
    made, count = make_immortal(component, names)
    assert count == 1
    assert len(made) == len(component)
    assert made.replace(_words(_IMMORTAL, _BASE), _words(3, _BASE), 1) == component
    assert _words(_IMMORTAL, _BASE) in made


def test_no_names_leave_the_component_as_it_is():
    component = _component(_words(_IMMORTAL, 0))
    assert make_immortal(component, b"") == (component, 0)


def test_a_count_copied_from_no_immortal_object_is_refused():
    component = _component(_words(3, 0, 5, 0))
    with pytest.raises(ValueError, match="is not immortal"):
        make_immortal(component, _words(_BASE, _BASE + 8))


def test_every_object_the_build_named_is_held_and_immortal_in_a_new_guest():
    """An object named and freed before the image was taken would leave its address to
    another object or a buffer, whose word there the build overwrote: held, none is freed."""
    with Session([], runtime=runtime_named("default")) as s:
        reply = s.run("import gc, sys, tooliscode_guest.heap as h\n"
                      "print(len(h._named) > 10_000, all(map(sys._is_immortal, h._named)), "
                      "gc.collect() >= 0)")
    assert reply.ok and reply.stdout == "True True True\n", (reply.error, reply.stdout)
