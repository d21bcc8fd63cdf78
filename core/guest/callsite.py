"""Whether a tool called inside async code is used at once as a value, read from its call site.

Models mix two styles in one cell: `x = tool()` (they want the value) and `await tool()` or
`gather(tool(), ...)` (they want something to await). The caller's next instructions tell
them apart. They are read with `dis`, by name, so every CPython the guests run (3.12 on the
default runtime, 3.15 on the data runtime) is covered, and once per call site.
"""

from __future__ import annotations

from typing import Any

__all__ = ["used_as_value"]

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
_sites: dict[tuple[Any, int], bool] = {}


def used_as_value(frame: Any) -> bool:
    """Does the code running in `frame` use the result of the call it is making right away
    (`x = tool()`, `tool()['k']`, `for r in tool()`, `return tool()`), rather than await it
    or hand it on (`await tool()`, `gather(tool(), ...)`, `[tool(i) for i in ids]`)?"""
    key = (frame.f_code, frame.f_lasti)
    known = _sites.get(key)
    if known is None:
        if len(_sites) > 4096:  # cells come and go: their code objects must not pile up
            _sites.clear()
        known = _sites[key] = _read(*key)
    return known


def _read(code: Any, at: int) -> bool:
    import dis

    after = iter([i for i in dis.get_instructions(code) if i.offset >= at])
    call = next(after, None)
    if call is None or call.offset != at or not call.opname.startswith("CALL"):
        return False
    loaded = 0
    for ins in after:
        name = ins.opname
        if name in _SKIP:
            continue
        if name in _AFTER_LOADS:
            return True
        if loaded == 0:
            if name in _NOW or name.startswith(_NOW_PREFIXES) or name == "CALL" and ins.arg == 0:
                return True  # `CALL 0`: the value is a generator expression's iterable (3.13+)
            if name in _PROLOGUE and not (name.startswith("BUILD_") and ins.arg):
                continue
        if not name.startswith("LOAD_") or name in _NOT_LOADS:
            return False
        loaded += 1 + name[5:].count("LOAD_")  # LOAD_FAST_LOAD_FAST loads two
        if loaded > 2:
            return False
    return False
