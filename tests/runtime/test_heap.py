"""A start image leaves no free chunks in its heap: guests allocate from its top (see
`guest/heap.py`), so a new guest's first writes do not copy old pages for a few bytes; and
the objects it holds are immortal, so guests never write their reference counts."""

from __future__ import annotations

import ctypes
from array import array

import pytest
from tooliscode.runtime._wasmtime.immortal import Immortalizer


def test_the_start_image_took_up_its_free_chunks(session):
    r = session.run("from tooliscode_guest import heap\nlen(heap._taken) > 0")
    assert r.ok and r.value == "True", r.error


def test_what_the_start_image_holds_is_immortal_and_new_objects_are_not(session):
    """The image's objects never have their counts written (see `heap.immortalize`)."""
    r = session.run("import sys, json\nfrom tooliscode_guest import heap, main\n"
                    "(sys._is_immortal(json.dumps), sys._is_immortal(heap.take_free_chunks), "
                    "sys._is_immortal(main._loop), sys._is_immortal([]), "
                    "sys._is_immortal(object()))")
    assert r.ok and r.value == "(True, True, True, False, False)", r.error


def test_the_reserve_let_go_when_a_cell_runs_out_of_memory_stays_mortal(session):
    """Made immortal, the reserve could never be freed for the report of a MemoryError."""
    r = session.run("import sys\nfrom tooliscode_guest import main\n"
                    "sys._is_immortal(main._loop.reserve)")
    assert r.ok and r.value == "False", r.error


def test_the_host_writes_the_immortal_count_only_at_addresses_inside_the_memory():
    """The data runtime's side of `immortalize`, on a buffer standing for a guest's memory."""
    memory = (ctypes.c_uint32 * 16)(0x70000000, 0, 0, 0, 3, 0, 0, 0, 5)
    poke = Immortalizer(lambda: (ctypes.addressof(memory), ctypes.sizeof(memory)))
    assert poke(array("I", [0, 16, 32]).tobytes()) == b""
    assert list(memory)[:9] == [0x70000000, 0, 0, 0, 0x70000000, 0, 0, 0, 0x70000000]
    with pytest.raises(ValueError, match="not an object's address"):
        poke(array("I", [0, 64]).tobytes())  # past the memory's end
    with pytest.raises(ValueError, match="no immortal object"):
        poke(b"")
    with pytest.raises(ValueError, match="is not immortal"):
        poke(array("I", [4, 16]).tobytes())  # a word that holds no immortal count
