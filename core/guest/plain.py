"""Plain calls: the arguments most tool calls pass (scalars of the schema's exact type),
accepted without running the full schema check.

A loop that calls a cheap tool pays the guest's argument handling on every call, and guest
Python is several times slower than the host's. So for a tool whose schema constrains nothing
but scalar types, a binder is compiled once: a function with one positional parameter per
tool parameter that tests each value's type and builds the arguments object in one frame.
It answers None whenever it is unsure, and the general path (with its error messages) then
decides: it never rejects a call and never accepts one the general path would refuse.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["plain_binder", "plain_types", "quick_accept"]

_NOTES = frozenset(("title", "description", "default", "examples", "$schema"))
_SCALAR_TYPES = {"string": (str,), "integer": (int,), "number": (int, float),
                 "boolean": (bool,), "null": (type(None),)}
_MISSING = object()


def plain_types(schema: Any) -> tuple[dict[str, tuple[type, ...]], frozenset[str]] | None:
    """(exact types per property, required keys) for an object schema whose properties
    constrain nothing but a scalar type (most tools' schemas); None for any other schema."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return None
    if any(k not in _NOTES and k not in ("type", "properties", "required",
                                         "additionalProperties") for k in schema):
        return None
    props, required = schema.get("properties", {}), schema.get("required", [])
    if schema.get("additionalProperties", True) not in (True, False) \
            or not isinstance(props, dict) or not isinstance(required, list):
        return None
    types = {}
    for key, sub in props.items():
        if not isinstance(sub, dict) or any(k != "type" and k not in _NOTES for k in sub) \
                or not isinstance(sub.get("type"), str) or sub["type"] not in _SCALAR_TYPES:
            return None
        types[key] = _SCALAR_TYPES[sub["type"]]
    return types, frozenset(required)


def quick_accept(schema: Any) -> Callable[[dict[str, Any]], bool] | None:
    """For a schema `plain_types` knows: a test that accepts, with one type lookup per
    argument, arguments the full check would accept. It says False when unsure, and the full
    check then decides. None for any other schema."""
    plain = plain_types(schema)
    if plain is None:
        return None
    types, needed = plain

    def accept(arguments: dict[str, Any]) -> bool:
        for key, value in arguments.items():
            if type(value) not in types.get(key, ()):
                return False
        return needed <= arguments.keys()

    return accept


def plain_binder(params: list[str], keys: dict[str, str], required: set[str],
                 omit_none: tuple[str, ...], schema: Any) -> Callable[..., Any] | None:
    """For positional calls: `bind(*args)` -> the arguments object, exactly as binding and
    checking them the general way would make it, or None (not sure: take the general way).
    `args` must be no longer than `params`. None when the schema is not plain."""
    plain = plain_types(schema)
    if plain is None:
        return None
    types, needed = plain
    if not params:
        return None if needed else dict
    key_of = [keys.get(p, p) for p in params]
    if not needed <= set(key_of) or any(k not in types for k in key_of):
        return None
    lines = []
    for i, (param, key) in enumerate(zip(params, key_of)):
        arg = f"a{i}"
        store = [f"if type({arg}) not in t{i}: return None", f"out[k{i}] = {arg}"]
        if param in required or key in needed:
            lines += [f"if {arg} is missing: return None", *store]
            continue
        skip = f"{arg} is not missing" + (f" and {arg} is not None" if param in omit_none else "")
        lines += [f"if {skip}:", *("    " + s for s in store)]
    names = ", ".join(f"a{i}=missing" for i in range(len(params)))
    body = "\n        ".join(["out = {}", *lines, "return out"])
    closed = ", ".join(f"t{i}, k{i}" for i in range(len(params)))
    source = (f"def make(missing, {closed}):\n"
              f"    def bind({names}, /):\n        {body}\n    return bind\n")
    make = _made.get(source)
    if make is None:  # compiled once per shape: names and types are the closure's
        scope: dict[str, Any] = {}
        exec(compile(source, "<tooliscode binder>", "exec"), scope)
        make = _made[source] = scope["make"]
    return make(_MISSING, *(x for k in key_of for x in (types[k], k)))


_made: dict[str, Callable[..., Any]] = {}
"""Binder makers by their source: tools whose parameters are alike (how many, which are
required) share one, so the first call of each tool seldom compiles (compiling is most of
what a first call costs in the guest)."""
