"""A bigger C stack for the default guest, so CPython's own recursion check comes first.

A wasm32 C program keeps its C stack in linear memory, below a `__stack_pointer` global. The
CPython 3.12 WASI build links it at the bottom of memory with 512 KiB: about 60 levels of
recursion through C (a `__repr__` calling `repr(self)`, a key function calling `sorted`)
exhaust it long before CPython's C recursion limit (about 500 levels of C calls) says
`RecursionError`, and the interpreter traps.

So the module is given one more export, that global, and each new guest gets a fresh stack
of `STACK_BYTES` at the top of its memory before it runs at all: past the C recursion limit
it uses about a quarter of it. Where the old stack overflowed into unmapped memory, the new
one would overflow into the data below it; recursion that CPython does not count (hashing a
tuple nested 100,000 deep) runs out of wasmtime's own stack first. As a last check the
lowest `GUARD_BYTES` of the region stay zero unless the stack went that deep: the host looks
after every cell and replaces a guest whose stack got there.
"""

from __future__ import annotations

import ctypes
from typing import Any

import wasmtime

from .._wasmtime.capi import memory_base, store_context
from .._wasmtime.leb128 import read_uleb, uleb

__all__ = ["STACK_BYTES", "GUARD_BYTES", "STACK_EXPORT", "export_stack_pointer", "GuestStack"]

STACK_BYTES = 8 << 20
GUARD_BYTES = 16 << 10
STACK_EXPORT = "__stack_pointer"
_PAGE = 1 << 16
_GLOBAL, _EXPORT, _IMPORT = 6, 7, 2
_I32, _MUTABLE, _I32_CONST, _END = 0x7F, 1, 0x41, 0x0B
_ZEROS = bytes(GUARD_BYTES)


def _sections(wasm: bytes) -> list[tuple[int, bytes]]:
    at, found = 8, []
    while at < len(wasm):
        size, start = read_uleb(wasm, at + 1)
        found.append((wasm[at], wasm[start:start + size]))
        at = start + size
    return found


def _imports_globals(body: bytes) -> bool:
    count, at = read_uleb(body, 0)
    for _ in range(count):
        for _name in range(2):
            length, at = read_uleb(body, at)
            at += length
        kind = body[at]
        at += 1
        if kind == 3:
            return True
        if kind == 0:  # function: a type index
            _, at = read_uleb(body, at)
        elif kind == 1:  # table: element type and limits
            at += 1
            flags, at = read_uleb(body, at)
            _, at = read_uleb(body, at)
            if flags & 1:
                _, at = read_uleb(body, at)
        elif kind == 2:  # memory: limits
            flags, at = read_uleb(body, at)
            _, at = read_uleb(body, at)
            if flags & 1:
                _, at = read_uleb(body, at)
        else:
            return True  # a kind this reader does not know: make no claim
    return False


def export_stack_pointer(wasm: bytes) -> bytes | None:
    """`wasm` with its first global exported as `STACK_EXPORT`, or None when that global is
    not laid out as LLVM lays out the stack pointer (defined here, first, a mutable i32
    starting at a constant) or the module already exports something by that name."""
    sections = _sections(wasm)
    kinds = {kind: body for kind, body in sections}
    if _GLOBAL not in kinds or _EXPORT not in kinds:
        return None
    if _IMPORT in kinds and _imports_globals(kinds[_IMPORT]):
        return None
    glob = kinds[_GLOBAL]
    count, at = read_uleb(glob, 0)
    if count < 1 or glob[at:at + 3] != bytes((_I32, _MUTABLE, _I32_CONST)):
        return None
    exports = kinds[_EXPORT]
    if STACK_EXPORT.encode() in exports:
        return None
    count, at = read_uleb(exports, 0)
    name = STACK_EXPORT.encode()
    body = uleb(count + 1) + exports[at:] + uleb(len(name)) + name + bytes((3, 0))
    out = bytearray(wasm[:8])
    for kind, section in sections:
        section = body if kind == _EXPORT else section
        out += bytes((kind,)) + uleb(len(section)) + section
    return bytes(out)


class GuestStack:
    """One guest's moved stack: where it is, and whether it ever reached its guard."""

    def __init__(self, store: wasmtime.Store, memory: wasmtime.Memory, pointer: wasmtime.Global,
                 size: int = STACK_BYTES):
        pages = -(-size // _PAGE)
        first = memory.grow(store, pages)
        self.base = first * _PAGE
        """The lowest address of the region; the guard starts here."""
        pointer.set_value(store, wasmtime.Val.i32((first + pages) * _PAGE))
        self._memory_handle = memory  # keeps the struct `_memory` points into alive
        self._memory = ctypes.addressof(memory._memory)
        self._context = store_context(store.ptr())

    @classmethod
    def move(cls, store: wasmtime.Store, exports: Any, size: int = STACK_BYTES) -> GuestStack | None:
        """Give a guest that has not started yet a stack of `size` (None: its module does not
        export its stack pointer)."""
        pointer = exports.get(STACK_EXPORT)
        if not isinstance(pointer, wasmtime.Global):
            return None
        return cls(store, exports["memory"], pointer, size)

    def _guard(self) -> int:
        return memory_base(self._context, self._memory) + self.base

    def overran(self) -> bool:
        """True when the stack reached its guard: the memory below it may be damaged. Asked
        after every cell (a few microseconds)."""
        return ctypes.string_at(self._guard(), GUARD_BYTES) != _ZEROS

    def mark_guard(self) -> None:
        """Write into the guard as an overrun would (for tests of what follows one)."""
        ctypes.memset(self._guard() + GUARD_BYTES // 2, 1, 16)
