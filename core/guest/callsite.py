"""What the caller does with a tool call made inside async code, read from its call site.

Models mix three styles in one cell: `x = tool()` (they want the value), `await tool()` (they
want the value, awaited) and `gather(tool(), ...)` (they want something to await later). The
caller's next instructions tell them apart. They are read from the code's bytes by
instruction name (`opcode.opname`), so every CPython the guests run (3.12 on the default
runtime, 3.15 on the data runtime) is covered, and once per call site.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AWAITED", "HANDED_ON", "VALUE", "call_site"]

HANDED_ON, VALUE, AWAITED = 0, 1, 2
"""What `call_site` tells: the call's result is kept or passed on, used at once as a value, or
awaited at once (`await tool()`)."""

_NOW = frozenset({"GET_ITER", "LOAD_ATTR", "POP_TOP", "RETURN_VALUE", "TO_BOOL", "UNARY_NOT",
                  "UNARY_NEGATIVE", "UNARY_INVERT", "FORMAT_VALUE", "FORMAT_SIMPLE",
                  "FORMAT_WITH_SPEC", "CONVERT_VALUE"})
_NOW_PREFIXES = ("STORE_", "POP_JUMP_", "UNPACK_")
"""Instructions that consume the value just computed: `x = tool()`, `for r in tool()`,
`if tool():`, `tool().field`, `return tool()`..."""
_AFTER_LOADS = frozenset({"BINARY_SUBSCR", "BINARY_SLICE", "BINARY_OP", "COMPARE_OP",
                          "CONTAINS_OP", "IS_OP", "STORE_SUBSCR", "STORE_ATTR", "STORE_SLICE"})
"""...or consume it once their other operands are loaded: `tool()['k']`, `tool() + 1`."""
_NOT_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR", "LOAD_BUILD_CLASS",
                        "LOAD_ASSERTION_ERROR", "LOAD_LOCALS"})
_SKIP = frozenset({"CACHE", "EXTENDED_ARG", "NOP", "NOT_TAKEN", "KW_NAMES"})
_PROLOGUE = frozenset({"LOAD_FAST_AND_CLEAR", "SWAP", "BUILD_LIST", "BUILD_SET", "BUILD_MAP"})
"""What an inlined comprehension does before iterating: `[r for r in tool()]` reads the value
through these on 3.13+ (3.12 iterates it first)."""
sites: dict[tuple[int, int], int] = {}
"""(id of the code, offset of the call) -> what `call_site` says of it; tool calls look here
first. Keyed by the code's id, not the code: hashing a code object hashes all its
instructions, which for a cell's code costs more than the rest of a tool call."""
_kept: list[Any] = []
"""The codes `sites` has entries for, kept alive so that no other code can take their ids."""


def call_site(frame: Any) -> int:
    """What the code running in `frame` does with the result of the call it is making:
    `VALUE` when it uses it right away (`x = tool()`, `tool()['k']`, `for r in tool()`,
    `return tool()`), `AWAITED` when it awaits it right away (`await tool()`), `HANDED_ON`
    when it keeps it or hands it on (`gather(tool(), ...)`, `[tool(i) for i in ids]`)."""
    code, at = frame.f_code, frame.f_lasti
    key = (id(code), at)
    known = sites.get(key)
    if known is None:
        if len(sites) > 4096:  # cells come and go: their code objects must not pile up
            sites.clear()
            _kept.clear()
        _kept.append(code)
        known = sites[key] = _read(code, at)
    return known


def _read(code: Any, at: int) -> int:
    """`call_site` for the call at byte offset `at` of `code`, read from the few code units
    after it. (`dis.get_instructions` would decode the whole code, with its positions: tens of
    milliseconds for a cell of a few lines, paid once per call site of every cell.)"""
    from opcode import opname

    raw = code.co_code  # no specialised instructions: the ones the compiler wrote
    if at + 1 >= len(raw) or not opname[raw[at]].startswith("CALL"):
        return HANDED_ON
    loaded = extended = 0
    for offset in range(at + 2, len(raw), 2):
        name, arg = opname[raw[offset]], raw[offset + 1] | extended
        extended = arg << 8 if name == "EXTENDED_ARG" else 0
        if name in _SKIP:
            continue
        if name in _AFTER_LOADS:
            return VALUE
        if loaded == 0:
            if name == "GET_AWAITABLE":
                return AWAITED
            if name in _NOW or name.startswith(_NOW_PREFIXES) or name == "CALL" and arg == 0:
                return VALUE  # `CALL 0`: the value is a generator expression's iterable (3.13+)
            if name in _PROLOGUE and not (name.startswith("BUILD_") and arg):
                continue
        if not name.startswith("LOAD_") or name in _NOT_LOADS:
            return HANDED_ON
        loaded += 1 + name[5:].count("LOAD_")  # LOAD_FAST_LOAD_FAST loads two
        if loaded > 2:
            return HANDED_ON
    return HANDED_ON
