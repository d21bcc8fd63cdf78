"""Making the built component's objects immortal, in its memory image.

At build time the app module names every object the interpreter can reach
(`guest/heap.immortalize`) into a file of its build folder; componentize-py then takes the
memory image, as data segments of the component's main core module. Python code cannot write
a reference count, so it is written here, into those segments: each named object gets the
count that `None` (immortal) has. Guests started from the image then never write the counts
of what they share with it (see the guest's docstring for what that saves).

Only bytes inside a segment are changed, in place: the component keeps its size and layout.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

from .._wasmtime.immortal import LEAST_IMMORTAL
from .._wasmtime.leb128 import read_sleb, read_uleb
from ._binary import COMPONENT_MAGIC, SECTION_CORE_MODULE

__all__ = ["make_immortal"]

_DATA_SECTION, _I32_CONST, _END = 11, 0x41, 0x0B


def _segments(component: bytes) -> list[tuple[int, int, int]]:
    """(address, length, offset in the file) of each active data segment of the component's
    core modules: those of the one module that has any (the image)."""
    found: list[tuple[int, int, int]] = []
    i = len(COMPONENT_MAGIC)
    while i < len(component):
        size, j = read_uleb(component, i + 1)
        if component[i] == SECTION_CORE_MODULE:
            found += _module_segments(component, j, j + size)
        i = j + size
    return sorted(found)


def _module_segments(b: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    i = start + 8  # past the core module's magic and version
    while i < end:
        size, j = read_uleb(b, i + 1)
        if b[i] == _DATA_SECTION:
            count, k = read_uleb(b, j)
            for _ in range(count):
                flag, k = read_uleb(b, k)
                if flag == 2:  # an explicit memory index
                    _memory, k = read_uleb(b, k)
                if flag in (0, 2):
                    if b[k] != _I32_CONST:
                        raise ValueError("a data segment's offset is not a constant")
                    address, k = read_sleb(b, k + 1)
                    if b[k] != _END:
                        raise ValueError("a data segment's offset is not a constant")
                    k += 1
                elif flag != 1:
                    raise ValueError(f"unknown data segment kind {flag}")
                length, k = read_uleb(b, k)
                if flag != 1:
                    out.append((address, length, k))
                k += length
        i = j + size
    return out


def make_immortal(component: bytes, names: bytes) -> tuple[bytes, int]:
    """`component` with each object `names` gives made immortal in its memory image; and
    how many were. `names`: 32-bit words, the address of `None` first (the count to copy),
    then addresses (`_app.NAMES_FILE`, batches that each start with None's). An address
    outside every segment is left alone (no live object is: its count is not zero)."""
    words = array("I")
    words.frombytes(names[:len(names) // 4 * 4])
    if not words:
        return component, 0
    out = bytearray(component)
    segments = _segments(component)
    starts = [address for address, _length, _at in segments]

    def offset(address: int) -> int | None:
        k = bisect_right(starts, address) - 1
        if k < 0:
            return None
        start, length, at = segments[k]
        return at + address - start if address + 4 <= start + length else None

    none = offset(words[0])
    if none is None:
        raise ValueError("the image does not hold the object the counts are copied from")
    count, made = out[none:none + 4], 0
    if int.from_bytes(count, "little") < LEAST_IMMORTAL:
        raise ValueError("the object the counts are copied from is not immortal")
    # A live object's count is more than 0 and less than any address of the image's: an
    # object named and then freed before the image was taken holds 0 there, or the pointer
    # malloc keeps in a free chunk. Such an address is left alone.
    lowest = starts[0] if starts else 0
    for address in set(words):
        at = offset(address)
        if at is None or address % 4:
            continue
        if 0 < int.from_bytes(out[at:at + 4], "little") < lowest:
            out[at:at + 4] = count
            made += 1
    return bytes(out), made
