"""Tool arguments checked against their JSON Schema inside the guest, before a call leaves.

This is for early errors the model can act on ("edits[0]['newText'] must be str, not int"),
not for security: the host still decides what it accepts. So the checker is lenient where
it cannot judge: keywords it does not know are ignored, remote `$ref`s and formats are not
checked, and a value that is not plain JSON data (a `datetime`, a dataclass) is left for the
host, since the channel converts it on the way out. Standard library only; `re` and
`difflib` are imported only when a schema or an error needs them.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["did_you_mean", "problem"]

_PY_NAMES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
             "array": "list", "object": "dict", "null": "None"}
_PLAIN = (str, int, float, bool, type(None), list, tuple, dict)
_MISSING = object()


class _Invalid(Exception):
    """One reason a value does not fit; `path` is where: the keys and indexes down to it."""

    def __init__(self, path: tuple[Any, ...], message: str, wanted: str | None = None):
        super().__init__(message)
        self.path = path
        self.message = message
        self.wanted = wanted
        """For a value of the wrong type: the types that would have done."""


def did_you_mean(word: str, options: Any) -> str:
    """"; did you mean 'x'?" for the closest options, or "" when none is close."""
    import difflib

    close = difflib.get_close_matches(word, list(options), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def problem(schema: dict[str, Any], arguments: dict[str, Any],
            names: dict[str, str] | None = None) -> str | None:
    """What is wrong with `arguments` by `schema`, naming the first bad one; None if nothing.

    `names` maps argument keys to the names the caller wrote, when they differ.
    """
    try:
        _Checker(schema).check(schema, arguments, ())
    except _Invalid as bad:
        if not bad.path:
            return f"the call {bad.message}"
        first = str(bad.path[0])  # shown as the parameter name the model wrote
        where = (names or {}).get(first, first) + "".join(f"[{p!r}]" for p in bad.path[1:])
        return f"{where} {bad.message}"
    except RecursionError:
        pass  # a schema that refers to itself without end: not judged
    return None


def _wrong_type(wanted: str, value: Any) -> str:
    return f"must be {wanted}, not {_type_name(value)} ({_show(value)})"


def _nearest(failures: list[_Invalid], path: tuple[Any, ...], value: Any) -> _Invalid:
    """Why a value fits none of the alternatives, said through the one it came closest to:
    the failure deepest inside the value, else the one branch whose type fitted."""
    deepest = max(len(f.path) for f in failures)
    if deepest > len(path):
        return next(f for f in failures if len(f.path) == deepest)
    fitted = [f for f in failures if f.wanted is None]
    if len(fitted) == 1:
        return fitted[0]
    if not fitted:
        wanted = " | ".join(dict.fromkeys(w for f in failures for w in f.wanted.split(" | ")))
        return _Invalid(path, _wrong_type(wanted, value), wanted)
    return _Invalid(path, "fits none of the allowed shapes: " + "; ".join(
        dict.fromkeys(f.message for f in failures)))


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, (list, tuple))
    if kind == "object":
        return isinstance(value, dict)
    if kind == "null":
        return value is None
    return True  # an unknown type name: not ours to judge


def _same(a: Any, b: Any) -> bool:
    """JSON equality: `True` is not `1`, but `1` is `1.0`; tuples equal lists."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) in _PLAIN and type(b) in _PLAIN and a == b


def _size(schema: dict[str, Any], keyword: str, value: Any, noun: str,
          path: tuple[Any, ...]) -> None:
    """`minLength`/`maxLength`, `minItems`/`maxItems`, `minProperties`/`maxProperties`."""
    low, high = schema.get("min" + keyword), schema.get("max" + keyword)
    if isinstance(low, int) and len(value) < low:
        raise _Invalid(path, f"must have at least {low} {noun}, not {len(value)}")
    if isinstance(high, int) and len(value) > high:
        raise _Invalid(path, f"must have at most {high} {noun}, not {len(value)}")


class _Checker:
    """Walks one schema; `$ref`s resolve against the root it was made with."""

    def __init__(self, root: Any):
        self.root = root

    def check(self, schema: Any, value: Any, path: tuple[Any, ...]) -> None:
        if schema is True or not isinstance(schema, dict) or not schema:
            if schema is False:
                raise _Invalid(path, "is not allowed here")
            return
        if type(value) not in _PLAIN:
            return  # converted by the channel; the host judges it
        ref = schema.get("$ref")
        if isinstance(ref, str):
            self.check(self._resolve(ref), value, path)
        if value is None and schema.get("nullable") is True:
            return
        kind = schema.get("type")
        if kind is not None:
            kinds = kind if isinstance(kind, list) else [kind]
            if not any(_is(value, k) for k in kinds):
                wanted = " | ".join(_PY_NAMES.get(k, str(k)) for k in kinds)
                raise _Invalid(path, _wrong_type(wanted, value), wanted)
        if "enum" in schema and isinstance(schema["enum"], list):
            options = schema["enum"]
            if not any(_same(value, o) for o in options):
                shown = ", ".join(_show(o) for o in options[:20])
                hint = did_you_mean(value, [o for o in options if isinstance(o, str)]) \
                    if isinstance(value, str) else ""
                raise _Invalid(path, f"must be one of {shown}, not {_show(value)}{hint}")
        if "const" in schema and not _same(value, schema["const"]):
            raise _Invalid(path, f"must be {_show(schema['const'])}, not {_show(value)}")
        if isinstance(value, str):
            self._string(schema, value, path)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            self._number(schema, value, path)
        elif isinstance(value, (list, tuple)):
            self._array(schema, value, path)
        elif isinstance(value, dict):
            self._object(schema, value, path)
        self._combined(schema, value, path)

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return True  # a remote reference: not fetched, not judged
        node = self.root
        for part in ref[1:].split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return True  # a dangling reference is the schema's fault, not the model's
        return node

    def _string(self, schema: dict[str, Any], value: str, path: tuple[Any, ...]) -> None:
        _size(schema, "Length", value, "characters", path)
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            import re

            try:
                found = re.search(pattern, value)
            except re.error:
                return  # a pattern Python cannot read (ECMA-only syntax): not judged
            if found is None:
                raise _Invalid(path, f"must match the pattern {pattern!r}, not {_show(value)}")

    def _number(self, schema: dict[str, Any], value: float, path: tuple[Any, ...]) -> None:
        for key, fails, words in (("minimum", value.__lt__, ">="), ("maximum", value.__gt__, "<="),
                                  ("exclusiveMinimum", value.__le__, ">"),
                                  ("exclusiveMaximum", value.__ge__, "<")):
            limit = schema.get(key)
            if isinstance(limit, bool):  # draft 4: exclusiveM* flags the matching bound
                bound = schema.get("minimum" if key == "exclusiveMinimum" else "maximum")
                limit = bound if limit and isinstance(bound, (int, float)) else None
            if isinstance(limit, (int, float)) and fails(limit):
                raise _Invalid(path, f"must be {words} {limit}, not {value}")
        step = schema.get("multipleOf")
        if isinstance(step, (int, float)) and step > 0 and not isinstance(step, bool):
            ratio = value / step
            if abs(ratio - round(ratio)) > 1e-9:
                raise _Invalid(path, f"must be a multiple of {step}, not {value}")

    def _array(self, schema: dict[str, Any], value: Any, path: tuple[Any, ...]) -> None:
        _size(schema, "Items", value, "items", path)
        if schema.get("uniqueItems") is True:
            for i, item in enumerate(value):
                if any(_same(item, other) for other in value[:i]):
                    raise _Invalid(path + (i,), "repeats an earlier item; items must be unique")
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):  # draft 4-7 tuple form
            prefix, items = items, schema.get("additionalItems")
        start = 0
        if isinstance(prefix, list):
            for i, (sub, item) in enumerate(zip(prefix, value)):
                self.check(sub, item, path + (i,))
            start = len(prefix)
        if items is not None:
            for i in range(start, len(value)):
                self.check(items, value[i], path + (i,))

    def _object(self, schema: dict[str, Any], value: dict[str, Any],
                path: tuple[Any, ...]) -> None:
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        _size(schema, "Properties", value, "keys", path)
        patterns = schema.get("patternProperties")
        extra = schema.get("additionalProperties", _MISSING)
        for key, item in value.items():
            where = path + (key,)
            sub = props.get(key, _MISSING)
            if sub is not _MISSING:
                self.check(sub, item, where)
                continue
            if isinstance(patterns, dict) and self._patterned(patterns, key, item, where):
                continue
            if extra is False:
                raise _Invalid(path, f"has an unexpected key {key!r}{did_you_mean(key, props)}")
            if isinstance(extra, dict):
                self.check(extra, item, where)
        # After the keys present, so a misspelt key is named with its suggestion first.
        for key in schema.get("required") or ():
            if key not in value:
                raise _Invalid(path, f"is missing the required key {key!r}")

    def _patterned(self, patterns: dict[str, Any], key: str, item: Any, where: tuple[Any, ...]) -> bool:
        import re

        matched = False
        for pattern, sub in patterns.items():
            try:
                if re.search(pattern, key):
                    matched = True
                    self.check(sub, item, where)
            except re.error:
                matched = True  # cannot judge: treat as allowed
        return matched

    def _passes(self, schema: Any, value: Any, path: tuple[Any, ...]) -> _Invalid | None:
        try:
            self.check(schema, value, path)
        except _Invalid as bad:
            return bad
        return None

    def _combined(self, schema: dict[str, Any], value: Any, path: tuple[Any, ...]) -> None:
        for sub in schema.get("allOf") or ():
            self.check(sub, value, path)
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if not isinstance(options, list) or not options:
                continue
            failures = [self._passes(sub, value, path) for sub in options]
            passed = failures.count(None)
            if key == "oneOf" and passed > 1:
                raise _Invalid(path, f"matches {passed} of the alternatives; it must match "
                                     "exactly one")
            if passed == 0:
                raise _nearest([f for f in failures if f is not None], path, value)
        negated = schema.get("not")
        if isinstance(negated, (dict, bool)) and self._passes(negated, value, path) is None:
            raise _Invalid(path, "matches a shape that is not allowed")
        condition = schema.get("if")
        if isinstance(condition, (dict, bool)):
            branch = "then" if self._passes(condition, value, path) is None else "else"
            if branch in schema:
                self.check(schema[branch], value, path)
